"""Candidate pairs of same-slot resolution, on real assertions written through the write path
(direct human facts: active at once, with a vector of the hash provider's generation): same
exact partition, same canonical slot, active-generation similarity at the threshold, most
similar first; no pair without an active generation, never across partitions."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg import sql

from memory_platform.features.consolidation.pairs import UNSLOTTED, candidate_pairs, slot_of
from memory_platform.features.consolidation.types import Partition
from memory_platform.features.memories.write_rules import fact_slot
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.generations import (
    forget_active_generations,
    register_generation,
)
from tests.dreaming.support import remember

MONDAY = "The office wifi password rotates every Monday."
FRIDAY = "The office wifi password rotates every Friday."   # 0.90 similar to MONDAY (hash)
TEA = "Ada prefers tea in the morning."
COFFEE = "Ada prefers coffee in the morning."                # 0.73 similar to TEA


def fact(conn: psycopg.Connection, settings, instance: str, text: str, *, user: str = "ada",
         visibility: str = "team") -> UUID:
    """A direct human fact written as the runtime writes it; its (active) assertion id."""
    stored = remember(conn, settings, AccessContext(instance, user_id=user), text,
                      source_type="fact", visibility=visibility)
    assert stored.assertion_id is not None and stored.assertion_status == "active"
    return stored.assertion_id


def set_row(conn: psycopg.Connection, assertion_id: UUID, **columns: Any) -> None:
    """Change an assertion's columns (slot, trust fields, created_at) as a test setup."""
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(name))
        for name in columns)
    conn.execute(sql.SQL("UPDATE agent_memory_assertions SET {} WHERE id = %(id)s").format(
        assignments), {**columns, "id": assertion_id})


def aged(conn: psycopg.Connection, assertion_id: UUID, days: float) -> None:
    set_row(conn, assertion_id, created_at=datetime.now().astimezone() - timedelta(days=days))


def partition_of(conn: psycopg.Connection, assertion_id: UUID) -> Partition:
    row = conn.execute("SELECT instance_key, audience_kind, audience_key"
                       " FROM agent_memory_assertions WHERE id = %s", (assertion_id,)).fetchone()
    return Partition(*row)


def pair_sets(pairs) -> list[set[UUID]]:
    return [set(p.ids) for p in pairs]


def test_same_slot_pairs_at_the_threshold_most_similar_first(db, settings, instance):
    monday, friday = fact(db, settings, instance, MONDAY), fact(db, settings, instance, FRIDAY)
    tea, coffee = fact(db, settings, instance, TEA), fact(db, settings, instance, COFFEE)
    aged(db, friday, 2)
    team = partition_of(db, monday)

    pairs = candidate_pairs(db, settings, team, limit=10)
    assert pair_sets(pairs) == [{monday, friday}]         # TEA/COFFEE are under 0.85
    pair = pairs[0]
    assert pair.slot == UNSLOTTED and 0.85 <= pair.similarity < 1
    assert pair.left.id == friday and pair.right.id == monday   # left is the older one
    assert pair.left.text == FRIDAY and pair.left.review_state == "policy_approved"
    assert pair.left.origin in ("explicit", "shared_fact") and pair.left.confidence > 0

    lower = settings.model_copy(update={"consolidation_similarity_threshold": 0.5})
    pairs = candidate_pairs(db, lower, team, limit=10)
    assert pair_sets(pairs) == [{monday, friday}, {tea, coffee}]
    assert pairs[0].similarity >= pairs[1].similarity
    assert pair_sets(candidate_pairs(db, lower, team, limit=1)) == [{monday, friday}]
    assert candidate_pairs(db, lower, team, limit=0) == []


def test_only_the_same_canonical_slot_pairs(db, settings, instance):
    monday, friday = fact(db, settings, instance, MONDAY), fact(db, settings, instance, FRIDAY)
    team = partition_of(db, monday)
    set_row(db, monday, subject="Office  WiFi", predicate="Rotates")
    set_row(db, friday, subject=" office wifi", predicate="rotates ")
    pairs = candidate_pairs(db, settings, team, limit=10)
    assert pair_sets(pairs) == [{monday, friday}]
    assert pairs[0].slot == slot_of("office wifi", "rotates") != UNSLOTTED

    set_row(db, friday, predicate="changes")             # another slot: never paired
    assert candidate_pairs(db, settings, team, limit=10) == []
    set_row(db, friday, subject=None, predicate=None)     # slotted vs unslotted: apart
    assert candidate_pairs(db, settings, team, limit=10) == []
    set_row(db, monday, subject="office wifi", predicate=None)   # half a slot is none
    assert pair_sets(candidate_pairs(db, settings, team, limit=10)) == [{monday, friday}]


def test_slot_of_is_text_normalise():
    assert slot_of("ＡＤＡ  Lovelace", "Prefers") == slot_of("ada lovelace", "prefers")
    assert slot_of("Straße", "liegt") == slot_of("STRASSE", "liegt")
    assert slot_of(None, "x") == slot_of("x", " ") == UNSLOTTED


def test_only_told_assertions_pair(db, settings, instance):
    monday, friday = fact(db, settings, instance, MONDAY), fact(db, settings, instance, FRIDAY)
    team = partition_of(db, monday)
    for status, review in (("superseded", "policy_approved"), ("candidate", "pending"),
                           ("conflicted", "policy_approved")):
        set_row(db, friday, status=status, review_state=review)
        assert candidate_pairs(db, settings, team, limit=10) == []
    set_row(db, friday, status="active", review_state="policy_approved",
            valid_to=datetime.now().astimezone() - timedelta(days=1),
            valid_from=datetime.now().astimezone() - timedelta(days=3))
    assert candidate_pairs(db, settings, team, limit=10) == []   # no longer valid
    set_row(db, friday, valid_to=None, valid_from=None)
    assert pair_sets(candidate_pairs(db, settings, team, limit=10)) == [{monday, friday}]


def test_never_across_partitions(db, settings, instance):
    """Another audience's (or instance's) near-identical assertion is never paired."""
    team_monday = fact(db, settings, instance, MONDAY)
    private_monday = fact(db, settings, instance, MONDAY + "!", visibility="private")
    bob_friday = fact(db, settings, instance, FRIDAY, user="bob", visibility="private")
    other = f"{instance}-other"
    fact(db, settings, other, FRIDAY)
    for assertion in (team_monday, private_monday, bob_friday):
        assert candidate_pairs(db, settings, partition_of(db, assertion), limit=10) == []
    assert partition_of(db, private_monday) != partition_of(db, bob_friday)
    ada_friday = fact(db, settings, instance, FRIDAY, visibility="private")
    assert pair_sets(candidate_pairs(db, settings, partition_of(db, ada_friday),
                                     limit=10)) == [{private_monday, ada_friday}]


def test_no_pair_without_an_active_generation(db, settings, instance):
    monday = fact(db, settings, instance, MONDAY)
    fact(db, settings, instance, MONDAY + "!")           # identical words: similarity 1
    team = partition_of(db, monday)
    assert len(candidate_pairs(db, settings, team, limit=10)) == 1
    # A model switch: the new active generation has no vectors yet -> no pair, no fallback.
    register_generation(db, instance, "hash", "another-model", 64)
    assert candidate_pairs(db, settings, team, limit=10) == []
    db.execute("UPDATE agent_memory_embedding_generations SET status = 'retired'"
               " WHERE instance_key = %s", (instance,))
    forget_active_generations()
    assert candidate_pairs(db, settings, team, limit=10) == []


def test_written_facts_fill_the_slot_their_subject_names(db, settings, instance):
    """Issue 32.5 (D10): the write path slots a fact by its subject and predicate, or by its
    subject refs, so two tasks' similar facts are never a pair; a fact with neither stays in
    the unslotted slot."""
    lower = settings.model_copy(update={"consolidation_similarity_threshold": 0.5})

    def written(text: str, **fields: Any) -> UUID:
        stored = remember(db, settings, AccessContext(instance, user_id="ada"), text,
                          source_type="fact", visibility="team", **fields)
        return stored.assertion_id

    wifi = {"subject": "Office WiFi", "predicate": "password rotation"}
    monday, friday = written(MONDAY, **wifi), written(FRIDAY, subject=" office wifi",
                                                      predicate="Password  rotation")
    tea = written(TEA, subject_refs={"taskId": "kitchen-1"})
    coffee = written(COFFEE, subject_refs={"taskId": "kitchen-2"})
    team = partition_of(db, monday)

    pairs = candidate_pairs(db, lower, team, limit=10)
    assert pair_sets(pairs) == [{monday, friday}]          # TEA and COFFEE: two tasks
    assert pairs[0].slot == slot_of("office wifi", "password rotation")
    slots = dict(db.execute("SELECT id, array[subject, predicate] FROM agent_memory_assertions"
                            " WHERE id = ANY(%s)", ([tea, coffee],)).fetchall())
    assert slots == {tea: ["taskId=kitchen-1", "fact"], coffee: ["taskId=kitchen-2", "fact"]}

    milk = written("Ada prefers milk in the morning.", subject_refs={"taskId": "kitchen-1"},
                   assertion_type="preference")
    juice = written("Ada prefers juice in the morning.", subject_refs={"taskId": "kitchen-1"},
                    assertion_type="preference")
    assert {milk, juice} in pair_sets(candidate_pairs(db, lower, team, limit=10))


def test_the_slot_of_a_write_is_one_rule():
    assert fact_slot("Office WiFi", "rotation", {}, "fact") == ("Office WiFi", "rotation")
    assert fact_slot("Office WiFi", None, {"taskId": "7"}, "decision") == ("Office WiFi",
                                                                            "decision")
    assert fact_slot(None, None, {"taskId": "7", "documentId": "d"}, "fact") == (
        "documentId=d; taskId=7", "fact")
    assert fact_slot(None, "due date", {"taskId": "7"}, "fact") == ("taskId=7", "due date")
    assert fact_slot(None, None, {}, "fact") == (None, None)
    for subject, predicate, field in ((None, "due date", "predicate"), ("", None, "subject"),
                                      ("x" * 201, None, "subject"), (7, None, "subject"),
                                      ("ok", "line\x00break", "predicate")):
        with pytest.raises(InvalidInput) as raised:
            fact_slot(subject, predicate, {}, "fact")
        assert raised.value.details["field"] == field
