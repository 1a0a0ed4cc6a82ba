"""The assertion life cycle against the real ledger: supersede (states, links, review, audit
before-image, the ``corrected`` feedback, the projection archived through the outbox, recall
no longer finding the loser), automation refused on a person's decision, the ``supersede``
review decision, conflicts opened idempotently and resolved each way, and the expiry sweep.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from memory_platform.features.consolidation import lifecycle
from memory_platform.features.context import context_search
from memory_platform.features.projection.outbox import enqueue_assertion_projection, process_outbox
from memory_platform.features.retrieval.feedback.events import record_injection
from memory_platform.foundation.errors import Conflict, InvalidInput, NotFound
from memory_platform.shared.access import AccessContext, Audience
from memory_platform.shared.ledger.assertions import add_evidence, ensure_assertion, record_decision
from memory_platform.shared.ledger.sources import ensure_source

TUESDAY = "The deploy window of the billing service is Tuesday evening."
THURSDAY = "The deploy window of the billing service is Thursday evening."
SLOT = {"subject": "billing service", "predicate": "deploy window"}


def told(db: psycopg.Connection, settings, instance: str, text: str, *,
         audience: Audience | None = None, owner: str | None = None, project: bool = True,
         **slot) -> uuid.UUID:
    """An approved, active assertion with verbatim evidence, projected through the outbox
    (a projection row, chunks and vectors), as a Dream's assertion is."""
    audience = audience or Audience("team", instance)
    with db.transaction():
        source = ensure_source(db, instance_key=instance, audience=audience,
                               source_key=f"manual:{uuid.uuid4()}", source_kind="manual",
                               trust_class="human_direct", content=text, owner_user_id=owner)
        ref = ensure_assertion(db, instance_key=instance, audience=audience, text=text,
                               assertion_type="fact", origin="dream", owner_user_id=owner,
                               confidence=0.9, **slot)
        add_evidence(db, instance_key=instance, audience=audience, assertion_id=ref.id,
                     source_id=source, excerpt=text)
        record_decision(db, instance_key=instance, assertion_id=ref.id, decision="activate",
                        reviewer_kind="policy", reason_code="test_setup")
        enqueue_assertion_projection(db, instance, ref.id)
    if project:
        process_outbox(db, settings, instance_key=instance)
    return ref.id


def state(db, assertion_id) -> tuple:
    return db.execute("SELECT status, review_state, superseded_by, revision_of"
                      " FROM agent_memory_assertions WHERE id = %s", (assertion_id,)).fetchone()


def image(db, assertion_id) -> dict:
    return db.execute("SELECT to_jsonb(a) FROM agent_memory_assertions a WHERE id = %s",
                      (assertion_id,)).fetchone()[0]


def audits(db, instance) -> list[tuple]:
    return db.execute("SELECT operation, target_table, target_id, before_image, after_image,"
                      " mapping FROM agent_memory_v2_cleanup_audit WHERE instance_key = %s"
                      " ORDER BY id", (instance,)).fetchall()


def reviews(db, assertion_id) -> list[tuple]:
    return db.execute("SELECT id, decision, reviewer_kind, reason_code FROM"
                      " agent_memory_assertion_reviews WHERE assertion_id = %s ORDER BY id",
                      (assertion_id,)).fetchall()


def corrections(db, assertion_id) -> list[str]:
    return [r[0] for r in db.execute(
        "SELECT run_id FROM agent_memory_retrieval_feedback"
        " WHERE assertion_id = %s AND event_type = 'corrected' ORDER BY id", (assertion_id,))]


def ledger_counts(db, instance) -> dict[str, int]:
    tables = ("agent_memory_assertion_reviews", "agent_memory_v2_cleanup_audit",
              "agent_memory_assertion_conflicts", "agent_memory_retrieval_feedback",
              "agent_memory_ingestion_outbox")
    return {t: db.execute(f"SELECT count(*) FROM {t} WHERE instance_key = %s",  # noqa: S608
                          (instance,)).fetchone()[0] for t in tables}


def recalled(db, settings, instance) -> set[str]:
    hits = context_search(db, settings, AccessContext(instance, user_id="ada"),
                          "When is the deploy window of the billing service?", limit=50)
    return {h.content for h in hits}


def pair(db, settings, instance):
    old = told(db, settings, instance, TUESDAY, **SLOT)
    new = told(db, settings, instance, THURSDAY, **SLOT)
    return old, new


# --- supersede ------------------------------------------------------------------------------


def test_supersede_moves_the_loser_out_of_recall_with_audit_review_and_feedback(
        db, settings, instance):
    old, new = pair(db, settings, instance)
    record_injection(db, instance, [old], run_id="run-1", user_id="ada")
    assert {TUESDAY, THURSDAY} <= recalled(db, settings, instance)
    before = image(db, old)

    with db.transaction():
        assert lifecycle.supersede(db, instance, old, new, reviewer_kind="curator",
                                   reason_code="contradiction", settings=settings)

    assert state(db, old)[:3] == ("superseded", "policy_approved", new)
    assert state(db, new) == ("active", "policy_approved", None, old)
    [*_, (review_id, decision, kind, reason)] = reviews(db, old)
    assert (decision, kind, reason) == ("supersede", "curator", "contradiction")
    loser_audit, survivor_audit = audits(db, instance)
    assert loser_audit[:3] == ("assertion_supersede", "agent_memory_assertions", str(old))
    assert loser_audit[3] == before                 # the row exactly as it was
    assert loser_audit[4] == {"status": "superseded", "superseded_by": str(new)}
    assert loser_audit[5]["survivorId"] == str(new)
    assert survivor_audit[2] == str(new) and survivor_audit[4] == {"revision_of": str(old)}
    assert corrections(db, old) == [f"supersede:{review_id}"]
    assert db.execute("SELECT corrected_count FROM agent_memory_assertions WHERE id = %s",
                      (old,)).fetchone()[0] == 1
    # graph work follows by the trigger of migration 0020
    assert db.execute("SELECT count(*) FROM agent_memory_ingestion_outbox WHERE subject_id = %s"
                      " AND job_type = 'graph_projection' AND status = 'pending'",
                      (old,)).fetchone()[0] >= 1

    process_outbox(db, settings, instance_key=instance)
    assert db.execute("SELECT memory_state FROM agent_memories WHERE assertion_id = %s"
                      " AND source_id IS NULL", (old,)).fetchone()[0] == "superseded"
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                      " WHERE assertion_id = %s", (old,)).fetchone()[0] == 0
    found = recalled(db, settings, instance)
    assert TUESDAY not in found and THURSDAY in found


def test_duplicate_fold_is_audited_as_a_duplicate(db, settings, instance):
    old, new = pair(db, settings, instance)
    with db.transaction():
        assert lifecycle.supersede(db, instance, old, new, reviewer_kind="curator",
                                   reason_code="duplicate", operation="assertion_duplicate")
    assert [a[0] for a in audits(db, instance)] == ["assertion_duplicate"] * 2
    with pytest.raises(ValueError):
        lifecycle.supersede(db, instance, new, old, reviewer_kind="curator",
                            reason_code="x", operation="entity_merge")


def test_automation_never_supersedes_what_a_person_decided(db, settings, instance):
    old, new = pair(db, settings, instance)
    record_decision(db, instance_key=instance, assertion_id=old, decision="approve",
                    reviewer_kind="human", reviewer_id="lead", reason_code="confirmed")
    counts = ledger_counts(db, instance)

    with db.transaction():
        assert not lifecycle.supersede(db, instance, old, new, reviewer_kind="curator",
                                       reason_code="contradiction")
    assert ledger_counts(db, instance) == counts
    assert state(db, old)[:3] == ("active", "human_approved", None)

    with db.transaction():            # a person's supersede always works
        assert lifecycle.supersede(db, instance, old, new, reviewer_kind="human",
                                   reviewer_id="lead", reason_code="outdated")
    assert state(db, old)[:3] == ("superseded", "human_approved", new)


def test_supersede_refusals_write_nothing(db, settings, instance):
    old, new = pair(db, settings, instance)
    private = told(db, settings, instance, "Ada keeps her deploy notes in a paper notebook.",
                   audience=Audience("private", "ada"), owner="ada", project=False)
    counts = ledger_counts(db, instance)
    refused = [
        (old, old),                                   # the same assertion
        (old, private),                               # another audience
        (old, uuid.uuid4()),                          # no such survivor
    ]
    for loser, survivor in refused:
        for kind in ("curator", "human"):
            assert not lifecycle.supersede(db, instance, loser, survivor, reviewer_kind=kind,
                                           reason_code="contradiction")
    # another instance's assertion is not found from this one
    assert not lifecycle.supersede(db, f"{instance}-other", old, new, reviewer_kind="human",
                                   reason_code="contradiction")
    assert ledger_counts(db, instance) == counts

    with db.transaction():
        assert lifecycle.supersede(db, instance, old, new, reviewer_kind="curator",
                                   reason_code="contradiction")
    third = told(db, settings, instance, "The deploy window of billing is Friday noon.",
                 project=False)
    counts = ledger_counts(db, instance)
    # done already; and automation does not touch a loser that no longer stands
    assert not lifecycle.supersede(db, instance, old, new, reviewer_kind="human",
                                   reason_code="again")
    assert not lifecycle.supersede(db, instance, old, third, reviewer_kind="curator",
                                   reason_code="again")
    # a superseded survivor is a dead end
    assert not lifecycle.supersede(db, instance, third, old, reviewer_kind="human",
                                   reason_code="again")
    assert ledger_counts(db, instance) == counts


def test_a_supersede_review_decision_works(db, settings, instance):
    old, new = pair(db, settings, instance)
    with pytest.raises(InvalidInput):
        lifecycle.decide(db, instance, old, "supersede", reviewer_kind="human",
                         reason_code="outdated")
    with pytest.raises(NotFound):
        lifecycle.decide(db, instance, uuid.uuid4(), "supersede", reviewer_kind="human",
                         reason_code="outdated", successor_id=new)
    with pytest.raises(InvalidInput):
        lifecycle.decide(db, instance, old, "forget", reviewer_kind="human",
                         reason_code="outdated")

    with db.transaction():
        assert lifecycle.decide(db, instance, old, "supersede", reviewer_kind="human",
                                reviewer_id="lead", reason_code="outdated", successor_id=new,
                                settings=settings)
    assert state(db, old)[:3] == ("superseded", "policy_approved", new)
    assert reviews(db, old)[-1][1:] == ("supersede", "human", "outdated")


def test_other_decisions_go_through_the_ledger_and_enqueue_the_projection(
        db, settings, instance):
    old, _ = pair(db, settings, instance)
    jobs = ledger_counts(db, instance)["agent_memory_ingestion_outbox"]

    with db.transaction():
        assert lifecycle.decide(db, instance, old, "reject", reviewer_kind="human",
                                reviewer_id="lead", reason_code="wrong")
    assert state(db, old)[:2] == ("rejected", "human_rejected")
    assert db.execute("SELECT count(*) FROM agent_memory_ingestion_outbox WHERE subject_id = %s"
                      " AND job_type = 'assertion_projection' AND status = 'pending'",
                      (old,)).fetchone()[0] == 1
    # automation cannot undo it: recorded, nothing changes, nothing enqueued
    after = ledger_counts(db, instance)
    assert after["agent_memory_ingestion_outbox"] > jobs
    with db.transaction():
        assert not lifecycle.decide(db, instance, old, "activate", reviewer_kind="policy",
                                    reason_code="dream_policy_safe")
    assert state(db, old)[:2] == ("rejected", "human_rejected")
    assert ledger_counts(db, instance)["agent_memory_ingestion_outbox"] == \
        after["agent_memory_ingestion_outbox"]


# --- conflicts ------------------------------------------------------------------------------


def conflict_row(db, conflict_id) -> tuple:
    return db.execute("SELECT assertion_id, conflicting_assertion_id, status, resolution,"
                      " resolved_by, resolved_at IS NOT NULL, detected_by"
                      " FROM agent_memory_assertion_conflicts WHERE id = %s",
                      (conflict_id,)).fetchone()


def test_a_conflict_opens_once_per_pair_and_keeps_both_out_of_recall(db, settings, instance):
    old, new = pair(db, settings, instance)
    record_injection(db, instance, [old], run_id="run-1", user_id="ada")

    with db.transaction():
        first = lifecycle.open_conflict(db, instance, new, old, detected_by="consolidation",
                                        reason="contradiction", settings=settings)
    counts = ledger_counts(db, instance)
    again = lifecycle.open_conflict(db, instance, old, new, detected_by="consolidation",
                                    reason="contradiction", settings=settings)

    assert first is not None and again == first
    assert ledger_counts(db, instance) == counts          # nothing new the second time
    assert conflict_row(db, first) == (new, old, "open", None, None, False, "consolidation")
    assert state(db, old)[:2] == state(db, new)[:2] == ("conflicted", "policy_approved")
    opened, *marked = audits(db, instance)
    assert opened[:4] == ("conflict_open", "agent_memory_assertion_conflicts", str(first),
                          None)
    assert opened[4]["assertion_id"] == str(new) and opened[4]["status"] == "open"
    assert sorted((a[0], a[2], a[3]["status"], a[4]["status"]) for a in marked) == sorted(
        ("conflict_open", str(x), "active", "conflicted") for x in (old, new))
    assert corrections(db, old) == [f"conflict:{first}"]
    assert corrections(db, new) == []                     # never injected: no correction
    # conflicted assertions never enter recall (specification, "Retrieval")
    assert not {TUESDAY, THURSDAY} & recalled(db, settings, instance)

    lifecycle.resolve_conflict(db, instance, first, resolution="kept_both", resolved_by="lead")
    assert state(db, old)[0] == state(db, new)[0] == "active"
    assert [a[0] for a in audits(db, instance)][-2:] == ["conflict_resolve"] * 2
    assert {TUESDAY, THURSDAY} <= recalled(db, settings, instance)

    # refused: the same id, another audience, a missing one
    private = told(db, settings, instance, "Ada deploys only on Fridays, she says.",
                   audience=Audience("private", "ada"), owner="ada", project=False)
    for left, right in ((old, old), (old, private), (old, uuid.uuid4())):
        assert lifecycle.open_conflict(db, instance, left, right, detected_by="human",
                                       reason="x") is None
    with pytest.raises(InvalidInput):
        lifecycle.open_conflict(db, instance, old, new, detected_by="oracle", reason="x")


def test_resolving_a_conflict_by_supersession(db, settings, instance):
    old, new = pair(db, settings, instance)
    conflict = lifecycle.open_conflict(db, instance, new, old, detected_by="consolidation",
                                       reason="contradiction")
    with pytest.raises(InvalidInput):       # superseded needs its survivor
        lifecycle.resolve_conflict(db, instance, conflict, resolution="superseded",
                                   resolved_by="lead")
    with pytest.raises(InvalidInput):       # the survivor must be one of the pair
        lifecycle.resolve_conflict(db, instance, conflict, resolution="superseded",
                                   resolved_by="lead", survivor_id=uuid.uuid4())

    with db.transaction():
        lifecycle.resolve_conflict(db, instance, conflict, resolution="superseded",
                                   resolved_by="lead", survivor_id=new, settings=settings)

    assert conflict_row(db, conflict)[2:6] == ("resolved", "superseded", "lead", True)
    assert state(db, old)[:3] == ("superseded", "policy_approved", new)
    assert reviews(db, old)[-1][1:] == ("supersede", "human", "conflict_superseded")
    with pytest.raises(Conflict):
        lifecycle.resolve_conflict(db, instance, conflict, resolution="kept_both",
                                   resolved_by="lead")
    with pytest.raises(NotFound):
        lifecycle.resolve_conflict(db, instance, uuid.uuid4(), resolution="kept_both",
                                   resolved_by="lead")
    with pytest.raises(NotFound):           # another instance's conflict does not exist here
        lifecycle.resolve_conflict(db, f"{instance}-x", conflict, resolution="kept_both",
                                   resolved_by="lead")
    with pytest.raises(InvalidInput):
        lifecycle.resolve_conflict(db, instance, conflict, resolution="merged",
                                   resolved_by="lead")


def test_resolving_as_duplicate_kept_both_and_rejected(db, settings, instance):
    old, new = pair(db, settings, instance)
    third = told(db, settings, instance, "Billing deploys happen on Tuesday evenings.",
                 project=False, **SLOT)

    duplicate = lifecycle.open_conflict(db, instance, third, old, detected_by="human",
                                        reason="same fact")
    lifecycle.resolve_conflict(db, instance, duplicate, resolution="duplicate",
                               resolved_by="lead", survivor_id=old)
    assert state(db, third)[:3] == ("superseded", "policy_approved", old)
    assert "assertion_duplicate" in [a[0] for a in audits(db, instance)]

    kept = lifecycle.open_conflict(db, instance, new, old, detected_by="human",
                                   reason="maybe both")
    counts = ledger_counts(db, instance)
    lifecycle.resolve_conflict(db, instance, kept, resolution="kept_both", resolved_by="lead")
    assert conflict_row(db, kept)[2:4] == ("resolved", "kept_both")
    # the conflict row, and both made active again: an audit row and a projection job each
    # (and each a graph job, by the triggers of migration 0020)
    after = ledger_counts(db, instance)
    assert {t: after[t] - counts[t] for t in after if after[t] != counts[t]} == {
        "agent_memory_v2_cleanup_audit": 2, "agent_memory_ingestion_outbox": 4}
    assert state(db, old)[0] == state(db, new)[0] == "active"

    rejected = lifecycle.open_conflict(db, instance, new, old, detected_by="dream",
                                       reason="correction_needs_review")
    lifecycle.resolve_conflict(db, instance, rejected, resolution="rejected",
                               resolved_by="lead")
    assert state(db, new)[:2] == ("rejected", "human_rejected")       # the challenger
    assert state(db, old)[:2] == ("active", "policy_approved")


def test_automation_cannot_resolve_against_a_person(db, settings, instance):
    old, new = pair(db, settings, instance)
    record_decision(db, instance_key=instance, assertion_id=old, decision="approve",
                    reviewer_kind="human", reviewer_id="lead", reason_code="confirmed")
    conflict = lifecycle.open_conflict(db, instance, new, old, detected_by="consolidation",
                                       reason="contradiction")
    counts = ledger_counts(db, instance)
    for resolution, survivor in (("superseded", new), ("rejected", new)):
        with pytest.raises(Conflict):
            lifecycle.resolve_conflict(db, instance, conflict, resolution=resolution,
                                       resolved_by="consolidation", survivor_id=survivor,
                                       reviewer_kind="curator")
    assert ledger_counts(db, instance) == counts
    assert conflict_row(db, conflict)[2] == "open"
    # automation's conflict does not take a person's approval out of recall
    assert state(db, old)[:2] == ("active", "human_approved")
    assert state(db, new)[0] == "conflicted"
    assert TUESDAY in recalled(db, settings, instance)


# --- expiry ---------------------------------------------------------------------------------


def test_the_expiry_sweep_expires_what_has_run_out(db, settings, instance):
    due = told(db, settings, instance, "The office wifi password rotates every Monday.")
    running = told(db, settings, instance, "The summer timetable applies to the ferry.",
                   project=False)
    human = told(db, settings, instance, "Ada is on parental leave.", project=False)
    record_decision(db, instance_key=instance, assertion_id=human, decision="approve",
                    reviewer_kind="human", reviewer_id="lead", reason_code="confirmed")
    db.execute("UPDATE agent_memory_assertions SET valid_to = now() - interval '1 hour'"
               " WHERE id = ANY(%s)", ([due, human],))
    db.execute("UPDATE agent_memory_assertions SET valid_to = now() + interval '1 day'"
               " WHERE id = %s", (running,))

    assert lifecycle.expire_due(db, settings, instance_key=instance) == [due]

    assert state(db, due)[:2] == ("expired", "policy_approved")
    assert reviews(db, due)[-1][1:] == ("expire", "system", "validity_ended")
    assert state(db, running)[0] == "active"
    assert state(db, human)[:2] == ("active", "human_approved")     # a person decided
    assert lifecycle.expire_due(db, settings, instance_key=instance) == []

    process_outbox(db, settings, instance_key=instance)
    assert db.execute("SELECT memory_state FROM agent_memories WHERE assertion_id = %s"
                      " AND source_id IS NULL", (due,)).fetchone()[0] == "archived"
    with db.transaction(), pytest.raises(RuntimeError):
        lifecycle.expire_due(db, settings, instance_key=instance)   # it commits its own unit


def test_the_expiry_sweep_is_bounded(db, settings, instance):
    ids = [told(db, settings, instance, f"Temporary rule number {n} for the night shift.",
                project=False) for n in range(3)]
    db.execute("UPDATE agent_memory_assertions SET valid_to = now() - interval '1 minute'"
               " WHERE id = ANY(%s)", (ids,))
    first = lifecycle.expire_due(db, settings, instance_key=instance, limit=2)
    second = lifecycle.expire_due(db, settings, instance_key=instance, limit=2)
    assert len(first) == 2 and len(second) == 1 and set(first + second) == set(ids)


def test_a_person_may_expire_and_automation_may_not_override(db, settings, instance):
    old = told(db, settings, instance, TUESDAY, project=False)
    record_decision(db, instance_key=instance, assertion_id=old, decision="approve",
                    reviewer_kind="human", reviewer_id="lead", reason_code="confirmed")
    assert not lifecycle.decide(db, instance, old, "expire", reviewer_kind="system",
                                reason_code="validity_ended")
    assert state(db, old)[0] == "active"
    assert lifecycle.decide(db, instance, old, "expire", reviewer_kind="human",
                            reviewer_id="lead", reason_code="no_longer_true")
    assert state(db, old)[0] == "expired"
