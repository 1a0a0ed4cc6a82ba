"""The review queues and a person's decisions against the real ledger: a pending workspace
fact approved is recallable at once; a conflict a person resolved is not reopened by
consolidation; a reviewer never sees or decides another audience's rows; bulk decisions;
supersede; Wiki drafts."""

from __future__ import annotations

import uuid

import pytest

from memory_platform.features.consolidation.slots import resolve_slots
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.projection.outbox import enqueue_assertion_projection, process_outbox
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.review import decisions, queues
from memory_platform.foundation.errors import Conflict, NotFound
from memory_platform.shared.access import AccessContext, Audience
from memory_platform.shared.ledger.assertions import add_evidence, ensure_assertion
from memory_platform.shared.ledger.sources import ensure_source
from memory_platform.shared.llm.selection import OFFLINE_MODEL
from tests.consolidation.test_pairs import FRIDAY, MONDAY
from tests.consolidation.test_slots import everything, judge, open_conflicts, pair_of, script
from tests.consolidation.test_slots import state as slot_state

FACT = "The staging database is refreshed from production every night at two."


def pending(db, settings, instance, text, *, audience=None, owner=None, kind="fact",
            origin="explicit"):
    """A candidate assertion waiting for review, with verbatim evidence, projected."""
    audience = audience or Audience("workspace", instance)
    with db.transaction():
        source = ensure_source(db, instance_key=instance, audience=audience,
                               source_key=f"manual:{uuid.uuid4()}", source_kind="manual",
                               trust_class="human_direct", content=text, owner_user_id=owner)
        ref = ensure_assertion(db, instance_key=instance, audience=audience, text=text,
                               assertion_type=kind, origin=origin, owner_user_id=owner,
                               confidence=0.8)
        add_evidence(db, instance_key=instance, audience=audience, assertion_id=ref.id,
                     source_id=source, excerpt=text)
        enqueue_assertion_projection(db, instance, ref.id)
    process_outbox(db, settings, instance_key=instance)
    return ref.id


def ada(instance):
    return AccessContext(instance, user_id="ada")


def reviews(db, assertion_id):
    return db.execute("SELECT decision, reviewer_kind, reviewer_id FROM"
                      " agent_memory_assertion_reviews WHERE assertion_id = %s ORDER BY id",
                      (assertion_id,)).fetchall()


def found(db, settings, instance, query):
    return {h.content for h in search_memories(db, settings, ada(instance), query, limit=20,
                                              stamp=False)}


def test_approving_a_pending_workspace_fact_makes_it_recallable_at_once(db, settings, instance):
    fact = pending(db, settings, instance, FACT)
    query = "When is the staging database refreshed?"
    assert FACT not in found(db, settings, instance, query)

    items, cursor = queues.pending_assertions(db, ada(instance))
    [item] = [i for i in items if i["id"] == str(fact)]
    assert cursor is None and item["reviewState"] == "pending"
    [evidence] = item["evidence"]
    assert evidence["excerpt"] == FACT and evidence["trustClass"] == "human_direct"

    result = decisions.decide_assertion(db, settings, ada(instance), fact, "approve",
                                        key_kind="user")
    assert result.decided == [str(fact)] and result.projected >= 1
    assert FACT in found(db, settings, instance, query)
    assert reviews(db, fact)[-1] == ("approve", "human", "ada")
    assert db.execute("SELECT status, review_state FROM agent_memory_assertions WHERE id = %s",
                      (fact,)).fetchone() == ("active", "human_approved")
    assert str(fact) not in {i["id"] for i in queues.pending_assertions(db, ada(instance))[0]}


def test_a_reviewer_never_sees_or_decides_another_audience(db, settings, instance):
    bobs = pending(db, settings, instance, "Bob keeps his spare keys in the blue drawer.",
                   audience=Audience("private", "bob"), owner="bob")
    assert str(bobs) not in {i["id"] for i in queues.pending_assertions(db, ada(instance))[0]}
    assert str(bobs) in {i["id"] for i in queues.pending_assertions(
        db, AccessContext(instance, user_id="bob"))[0]}
    before = reviews(db, bobs)
    for decision in ("approve", "reject"):
        with pytest.raises(NotFound):
            decisions.decide_assertion(db, settings, ada(instance), bobs, decision, key_kind="user")
    mine = pending(db, settings, instance, "Ada's laptop is the grey one.")
    with pytest.raises(NotFound):     # nor as a successor
        decisions.decide_assertion(db, settings, ada(instance), mine, "supersede",
                                   successor_id=bobs, reason_code="replaced", key_kind="user")
    bulk = decisions.decide_pending(db, settings, ada(instance), "approve", ids=[bobs, mine],
                                    key_kind="user")
    assert bulk.decided == [str(mine)]
    assert reviews(db, bobs) == before
    assert db.execute("SELECT status FROM agent_memory_assertions WHERE id = %s",
                      (bobs,)).fetchone() == ("candidate",)


def test_bulk_decisions_over_a_filtered_queue(db, settings, instance):
    facts = [pending(db, settings, instance, f"Server rack {n} sits in room {n + 10}.")
             for n in range(3)]
    preference = pending(db, settings, instance, "The team prefers short stand-ups.",
                         kind="preference")
    result = decisions.decide_pending(db, settings, ada(instance), "reject",
                                      assertion_type="fact", limit=2, key_kind="user")
    assert result.decided == [str(f) for f in facts[:2]]
    rest = {i["id"] for i in queues.pending_assertions(db, ada(instance))[0]}
    assert str(facts[2]) in rest and str(preference) in rest
    assert {i["id"] for i in queues.pending_assertions(db, ada(instance),
                                                       assertion_type="preference")[0]} \
        == {str(preference)}
    page, cursor = queues.pending_assertions(db, ada(instance), limit=1)
    assert cursor is not None
    second, _ = queues.pending_assertions(db, ada(instance), limit=1, cursor=cursor)
    assert page[0]["id"] != second[0]["id"]
    for f in facts[:2]:
        assert reviews(db, f)[-1] == ("reject", "human", "ada")


def test_supersede_with_a_successor_and_reason(db, settings, instance):
    old = pending(db, settings, instance, "The release train leaves on Mondays.")
    new = pending(db, settings, instance, "The release train leaves on Wednesdays.")
    decisions.decide_assertion(db, settings, ada(instance), new, "approve", key_kind="user")
    result = decisions.decide_assertion(db, settings, ada(instance), old, "supersede",
                                        successor_id=new, reason_code="schedule_changed",
                                        key_kind="user")
    assert result.decided == [str(old)]
    assert db.execute("SELECT status, superseded_by FROM agent_memory_assertions"
                      " WHERE id = %s", (old,)).fetchone() == ("superseded", new)


def test_a_conflict_resolved_by_a_person_is_not_reopened(db, settings, instance,
                                                          openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    script(openai_server, ("contradiction", old))
    resolve_slots(db, settings, team, judge(settings, openai_server))
    [(challenger, challenged, _)] = open_conflicts(db, instance)
    [item], _ = queues.open_conflicts(db, ada(instance))
    assert {item["assertion"]["id"], item["conflictingAssertion"]["id"]} == {str(old), str(new)}
    assert item["assertion"]["evidence"]

    # bob's view of a team conflict is the same; a private one of another user is hidden
    decisions.resolve(db, settings, ada(instance), uuid.UUID(item["id"]), "keep_one",
                      keep_id=new, key_kind="user")
    assert slot_state(db, old) == ("superseded", new)
    assert open_conflicts(db, instance) == []
    with pytest.raises(Conflict):
        decisions.resolve(db, settings, ada(instance), uuid.UUID(item["id"]), "keep_both",
                          key_kind="user")

    before = everything(db, instance)
    script(openai_server, ("contradiction", old))
    resolve_slots(db, settings, team, judge(settings, openai_server))
    resolve_slots(db, settings, team, GraphModel(OFFLINE_MODEL, "default", None))
    assert open_conflicts(db, instance) == []
    assert everything(db, instance) == before


def test_keeping_both_sides_is_never_reopened_by_consolidation(db, settings, instance,
                                                              openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    script(openai_server, ("contradiction", old))
    resolve_slots(db, settings, team, judge(settings, openai_server))
    [item], _ = queues.open_conflicts(db, ada(instance))
    decisions.resolve(db, settings, ada(instance), uuid.UUID(item["id"]), "keep_both",
                      key_kind="user")
    assert open_conflicts(db, instance) == []

    before = everything(db, instance)
    script(openai_server, ("contradiction", new))
    resolve_slots(db, settings, team, judge(settings, openai_server))
    assert open_conflicts(db, instance) == []
    assert slot_state(db, old)[0] == slot_state(db, new)[0] == "active"
    assert everything(db, instance) == before


def test_a_private_conflict_is_hidden_from_other_reviewers(db, settings, instance):
    bob = Audience("private", "bob")
    one = pending(db, settings, instance, "Bob's locker is number 12.", audience=bob,
                  owner="bob")
    two = pending(db, settings, instance, "Bob's locker is number 21.", audience=bob,
                  owner="bob")
    from memory_platform.features.consolidation import lifecycle
    with db.transaction():
        conflict = lifecycle.open_conflict(db, instance, two, one, detected_by="human",
                                           reason="test")
    assert queues.open_conflicts(db, ada(instance))[0] == []
    with pytest.raises(NotFound):
        decisions.resolve(db, settings, ada(instance), conflict, "keep_both", key_kind="user")
    bobs = AccessContext(instance, user_id="bob")
    assert [i["id"] for i in queues.open_conflicts(db, bobs)[0]] == [str(conflict)]
    decisions.resolve(db, settings, bobs, conflict, "keep_both", key_kind="user")
    assert reviews(db, one)[-1] == ("approve", "human", "bob")


def draft(db, instance, audience: Audience, slug: str) -> uuid.UUID:
    return db.execute(
        "INSERT INTO wiki_change_proposals (instance_key, audience_kind, audience_key,"
        " page_slug, title, body_markdown) VALUES (%s, %s, %s, %s, 'Title', 'Body')"
        " RETURNING id", (instance, audience.kind, audience.key, slug)).fetchone()[0]


def test_wiki_drafts_approve_and_reject(db, settings, instance):
    team = draft(db, instance, Audience("team", instance), "ops/deploys")
    other = draft(db, instance, Audience("team", instance), "ops/rota")
    private = draft(db, instance, Audience("private", "bob"), "bob/notes")
    db.commit()
    listed = {i["id"] for i in queues.wiki_drafts(db, ada(instance))[0]}
    assert {str(team), str(other)} <= listed and str(private) not in listed
    decisions.decide_wiki_draft(db, ada(instance), team, "approve", key_kind="user")
    decisions.decide_wiki_draft(db, ada(instance), other, "reject", reason="outdated",
                                key_kind="user")
    assert db.execute("SELECT state, decided_by FROM wiki_change_proposals WHERE id = %s",
                      (team,)).fetchone() == ("approved", "ada")
    with pytest.raises(NotFound):
        decisions.decide_wiki_draft(db, ada(instance), private, "approve", key_kind="user")
    with pytest.raises(Conflict):
        decisions.decide_wiki_draft(db, ada(instance), team, "reject", key_kind="user")
