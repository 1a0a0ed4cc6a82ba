"""Same-slot resolution end to end: real assertions (direct human facts through the write
path), a scripted model over REAL HTTP (or the offline judge), and the ledger's life cycle.
Each outcome rule: duplicate survivor by trust then recency; a contradiction superseded only
by a strictly newer, at least as trusted survivor, otherwise an open conflict with both
standing; a human decision refuses; an id decided once is skipped; a malformed answer or
another model applies nothing; a dry run writes nothing."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from psycopg import sql

from memory_platform.features.consolidation.pairs import candidate_pairs
from memory_platform.features.consolidation.slots import resolve_slots, trust
from memory_platform.features.consolidation.types import Partition, StepResult
from memory_platform.features.graph.model import GraphModel
from memory_platform.shared.ledger.assertions import record_decision
from memory_platform.shared.llm.selection import OFFLINE_MODEL, http_model_client
from tests.consolidation.test_pairs import FRIDAY, MONDAY, aged, fact, partition_of, set_row
from tests.support.tables import row_counts

JUDGE = "judge-model"
TEA, TEA_AGAIN = "Ada likes green tea.", "Ada likes green tea!"   # similarity 1 (hash)


def judge(settings, server) -> GraphModel:
    http = settings.model_copy(update={
        "maintenance_base_url": server.base_url, "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 5.0,
        "maintenance_phase_timeout_seconds_override": 10.0})
    return GraphModel(JUDGE, "explicit", http_model_client(http, JUDGE,
                                                           offline_name=OFFLINE_MODEL))


def script(server, *decisions: tuple[str, Any], model: str = JUDGE) -> None:
    """One scripted answer: (relation, survivor) for p1, p2, ..."""
    server.script_chat(model=model, content=json.dumps({"schemaVersion": 1, "decisions": [
        {"pairId": f"p{i + 1}", "relation": relation,
         "survivor": str(survivor) if survivor else None, "reason": f"scripted {relation}"}
        for i, (relation, survivor) in enumerate(decisions)]}))


def state(db, assertion_id: UUID) -> tuple[str, UUID | None]:
    return db.execute("SELECT status, superseded_by FROM agent_memory_assertions"
                      " WHERE id = %s", (assertion_id,)).fetchone()


def open_conflicts(db, instance: str) -> list[tuple]:
    return db.execute("SELECT assertion_id, conflicting_assertion_id, detected_by"
                      " FROM agent_memory_assertion_conflicts"
                      " WHERE instance_key = %s AND status = 'open'", (instance,)).fetchall()


def everything(db, instance: str) -> dict[str, int]:
    counts = row_counts(db, instance)
    for table in ("agent_memory_v2_cleanup_audit", "agent_memory_retrieval_feedback"):
        query = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s").format(
            sql.Identifier(table))
        counts[table] = db.execute(query, (instance,)).fetchone()[0]
    counts["states"] = hash(tuple(db.execute(
        "SELECT id, status, review_state, superseded_by, revision_of, updated_at"
        " FROM agent_memory_assertions WHERE instance_key = %s ORDER BY id",
        (instance,)).fetchall()))
    return counts


def pair_of(db, settings, instance: str, older: str, newer: str) -> tuple[UUID, UUID, Partition]:
    old, new = fact(db, settings, instance, older), fact(db, settings, instance, newer)
    aged(db, old, 3)
    return old, new, partition_of(db, old)


def only(result: StepResult):
    assert not result.diagnostics, result.diagnostics
    [decision] = result.pair_decisions
    return decision


def test_trust_is_review_then_origin_then_confidence(db, settings, instance):
    old, new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    [pair] = candidate_pairs(db, settings, team, limit=5)
    a, b = pair.left, pair.right
    assert trust(a) == trust(b)
    assert trust(a.__class__(**{**vars(a), "review_state": "human_approved",
                                "origin": "dream", "confidence": 0.1})) > trust(b)
    assert trust(a.__class__(**{**vars(a), "origin": "shared_fact", "confidence": 0.1})) \
        > trust(a.__class__(**{**vars(a), "origin": "flush", "confidence": 1.0}))
    assert trust(a.__class__(**{**vars(a), "confidence": 0.95})) > trust(b)


def test_duplicate_survivor_is_the_newer_at_equal_trust(db, settings, instance, openai_server):
    old, new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    script(openai_server, ("duplicate", old))           # the model's survivor is not used

    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))

    assert (decision.relation, decision.outcome) == ("duplicate", "duplicate")
    assert (decision.survivor, decision.loser) == (new, old)
    assert state(db, old) == ("superseded", new) and state(db, new) == ("active", None)
    review = db.execute("SELECT decision, reviewer_kind, reason_code FROM"
                        " agent_memory_assertion_reviews WHERE assertion_id = %s"
                        " ORDER BY id DESC LIMIT 1", (old,)).fetchone()
    assert review == ("supersede", "curator", "consolidation_duplicate")
    operations = db.execute("SELECT operation, target_id FROM agent_memory_v2_cleanup_audit"
                            " WHERE instance_key = %s ORDER BY id", (instance,)).fetchall()
    assert operations[0] == ("assertion_duplicate", str(old))
    assert {op for op, _ in operations} == {"assertion_duplicate"}


def test_duplicate_survivor_is_the_more_trusted_even_if_older(db, settings, instance,
                                                              openai_server):
    old, new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    set_row(db, new, origin="import")                   # automation's word: less trusted
    script(openai_server, ("duplicate", new))
    result = resolve_slots(db, settings, team, judge(settings, openai_server))
    decision = only(result)
    assert (decision.outcome, decision.survivor, decision.loser) == ("duplicate", old, new)
    assert state(db, new) == ("superseded", old) and state(db, old)[0] == "active"
    assert result.audit_rows >= 1


def test_contradiction_newer_and_as_trusted_supersedes(db, settings, instance, openai_server):
    """... through the ledger: the recently injected loser gets its corrected feedback and
    its projection job."""
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    db.execute("UPDATE agent_memory_assertions SET last_injected_at = now() WHERE id = %s",
               (old,))
    script(openai_server, ("contradiction", new))
    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))
    assert (decision.outcome, decision.survivor, decision.loser) == ("superseded", new, old)
    assert state(db, old) == ("superseded", new)
    assert db.execute("SELECT count(*) FROM agent_memory_retrieval_feedback WHERE"
                      " assertion_id = %s AND event_type = 'corrected'", (old,)).fetchone() == (1,)
    assert db.execute("SELECT count(*) FROM agent_memory_ingestion_outbox WHERE subject_id = %s"
                      " AND job_type = 'assertion_projection' AND status = 'pending'",
                      (old,)).fetchone()[0] >= 1
    assert open_conflicts(db, instance) == []
    assert db.execute("SELECT operation FROM agent_memory_v2_cleanup_audit WHERE target_id = %s",
                      (str(old),)).fetchone() == ("assertion_supersede",)


def test_contradiction_older_winner_opens_a_conflict(db, settings, instance, openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    script(openai_server, ("contradiction", old))
    result = resolve_slots(db, settings, team, judge(settings, openai_server))
    decision = only(result)
    assert decision.outcome == "conflict_opened" and "not newer" in decision.reason
    # both out of recall until a person decides; audited: the conflict and both changes
    assert state(db, old)[0] == state(db, new)[0] == "conflicted"
    assert open_conflicts(db, instance) == [(old, new, "consolidation")]
    assert result.audit_rows == 3


def test_contradiction_less_trusted_newer_winner_opens_a_conflict(db, settings, instance,
                                                                  openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    set_row(db, new, confidence=0.3)
    script(openai_server, ("contradiction", new))
    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))
    assert decision.outcome == "conflict_opened" and "less trusted" in decision.reason
    assert state(db, old)[0] == state(db, new)[0] == "conflicted"
    assert open_conflicts(db, instance) == [(new, old, "consolidation")]


def test_contradiction_without_a_survivor_opens_a_conflict(db, settings, instance,
                                                           openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    script(openai_server, ("contradiction", None))
    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))
    assert decision.outcome == "conflict_opened"
    assert open_conflicts(db, instance) == [(new, old, "consolidation")]


def test_unrelated_is_kept(db, settings, instance, openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    before = everything(db, instance)
    script(openai_server, ("unrelated", None))
    result = resolve_slots(db, settings, team, judge(settings, openai_server))
    assert only(result).outcome == "kept" and result.audit_rows == 0
    assert everything(db, instance) == before


def test_a_human_decision_refuses_automation(db, settings, instance, openai_server):
    """Human decisions win: the loser a person reviewed is never superseded; for a
    contradiction a conflict is opened instead."""
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    with db.transaction():
        record_decision(db, instance_key=instance, assertion_id=old, decision="defer",
                        reviewer_kind="human", reason_code="person_looked", reviewer_id="ada")
    script(openai_server, ("contradiction", new))
    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))
    assert decision.outcome == "refused" and "conflict" in decision.reason
    assert state(db, old)[0] == "active"
    assert open_conflicts(db, instance) == [(new, old, "consolidation")]

    other = f"{instance}-dup"
    old, new, team = pair_of(db, settings, other, TEA, TEA_AGAIN)
    with db.transaction():
        record_decision(db, instance_key=other, assertion_id=old, decision="defer",
                        reviewer_kind="human", reason_code="person_looked", reviewer_id="ada")
    before = everything(db, other)
    script(openai_server, ("duplicate", None))
    dry = only(resolve_slots(db, settings, team, judge(settings, openai_server),
                             dry_run=True))
    script(openai_server, ("duplicate", None))
    decision = only(resolve_slots(db, settings, team, judge(settings, openai_server)))
    assert dry.outcome == decision.outcome == "refused"
    assert everything(db, other) == before


def test_an_id_decided_once_is_skipped(db, settings, instance, openai_server):
    first = fact(db, settings, instance, TEA)
    second = fact(db, settings, instance, TEA_AGAIN)
    third = fact(db, settings, instance, "ADA likes green tea?")
    team = partition_of(db, first)
    pairs = candidate_pairs(db, settings, team, limit=10)
    assert len(pairs) == 3
    # p1 unrelated (decides nothing), p2 duplicate, p3 shares an id with p2: skipped.
    script(openai_server, ("unrelated", None), ("duplicate", None), ("duplicate", None))

    result = resolve_slots(db, settings, team, judge(settings, openai_server))

    assert [d.outcome for d in result.pair_decisions] == ["kept", "duplicate", "skipped"]
    assert [{d.left, d.right} for d in result.pair_decisions] == [set(p.ids) for p in pairs]
    statuses = [state(db, i)[0] for i in (first, second, third)]
    assert sorted(statuses) == ["active", "active", "superseded"]
    assert len(openai_server.requests("chat/completions")) == 1


def test_a_malformed_answer_or_another_model_applies_nothing(db, settings, instance,
                                                             openai_server):
    old, new, team = pair_of(db, settings, instance, MONDAY, FRIDAY)
    before = everything(db, instance)
    model = judge(settings, openai_server)
    openai_server.script_chat(model=JUDGE, content=json.dumps({"schemaVersion": 1, "decisions": [
        {"pairId": "p1", "relation": "contradiction", "survivor": str(new), "reason": "x",
         "confidence": 1}]}))
    malformed = resolve_slots(db, settings, team, model)
    script(openai_server, ("contradiction", new), model="other-model")
    mismatched = resolve_slots(db, settings, team, model)

    for result in (malformed, mismatched):
        assert result.pair_decisions == [] and result.pairs_considered == 1
        [diagnostic] = result.diagnostics
        assert diagnostic["phase"] == "slots"
        assert diagnostic["pairs"] == [[str(old), str(new)]]
    assert malformed.diagnostics[0]["code"] == "malformed_output"
    assert mismatched.diagnostics[0]["code"] in ("model_unavailable", "model_mismatch")
    assert everything(db, instance) == before


def test_the_offline_judge_folds_exact_duplicates_only(db, settings, instance, openai_server):
    tea_old, tea_new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    monday, friday = fact(db, settings, instance, MONDAY), fact(db, settings, instance, FRIDAY)
    offline = GraphModel(OFFLINE_MODEL, "default", None)

    result = resolve_slots(db, settings, team, offline)

    outcomes = {frozenset((d.left, d.right)): d for d in result.pair_decisions}
    assert outcomes[frozenset((tea_old, tea_new))].outcome == "duplicate"
    assert outcomes[frozenset((monday, friday))].outcome == "kept"
    assert {d.relation for d in result.pair_decisions} <= {"duplicate", "unrelated"}
    assert state(db, tea_old) == ("superseded", tea_new)
    assert state(db, monday)[0] == state(db, friday)[0] == "active"
    assert openai_server.requests("chat/completions") == []


def test_no_active_generation_no_pairs_no_model_call(db, settings, instance, openai_server):
    old, new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    db.execute("UPDATE agent_memory_embedding_generations SET status = 'retired'"
               " WHERE instance_key = %s", (instance,))
    result = resolve_slots(db, settings, team, judge(settings, openai_server))
    assert result.pair_decisions == [] and result.pairs_considered == 0
    assert [d["code"] for d in result.diagnostics] == ["no_active_generation"]
    assert openai_server.requests("chat/completions") == []
    assert state(db, old)[0] == "active"


def test_a_dry_run_mutates_nothing_and_returns_the_decisions(db, settings, instance,
                                                             openai_server):
    tea_old, tea_new, team = pair_of(db, settings, instance, TEA, TEA_AGAIN)
    monday, friday = fact(db, settings, instance, MONDAY), fact(db, settings, instance, FRIDAY)
    aged(db, monday, 2)
    pairs = candidate_pairs(db, settings, team, limit=10)
    assert [set(p.ids) for p in pairs] == [{tea_old, tea_new}, {monday, friday}]
    model = judge(settings, openai_server)
    before = everything(db, instance)

    script(openai_server, ("duplicate", None), ("contradiction", monday))
    dry = resolve_slots(db, settings, team, model, dry_run=True)

    assert everything(db, instance) == before
    assert [(d.outcome, d.survivor, d.loser) for d in dry.pair_decisions] == [
        ("duplicate", tea_new, tea_old), ("conflict_opened", monday, friday)]
    assert dry.audit_rows == 0 and dry.diagnostics == []

    script(openai_server, ("duplicate", None), ("contradiction", monday))
    real = resolve_slots(db, settings, team, model)
    assert [d.as_json() for d in real.pair_decisions] == [d.as_json() for d in dry.pair_decisions]
    assert state(db, tea_old) == ("superseded", tea_new)
    assert open_conflicts(db, instance) == [(monday, friday, "consolidation")]
    assert real.audit_rows >= 2
