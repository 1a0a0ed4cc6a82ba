"""rollback_dream: compensates exactly the Dream's change set that no person decided."""

from __future__ import annotations

import pytest

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.lock import dream_lock
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.rollback import rollback_dream
from memory_platform.foundation.errors import DreamLocked
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger.assertions import record_decision
from tests.dreaming.support import ScriptedModel, assertion, payload, remember

LINES = ["The customer portal uses Keycloak for single sign-on.",
         "Invoices are archived for ten years in the DMS.",
         "Payroll runs on the 25th of each month.",
         "Support tickets are answered within one business day."]
FACT = "Mandant Nord files VAT returns monthly."


def seed(db, settings, instance):
    ctx = AccessContext(instance, user_id="ada", session_key="teamchat:room-1")
    ids = [remember(db, settings, ctx, text, visibility="team").id for text in LINES]
    fact = remember(db, settings, AccessContext(instance, user_id="bob"), FACT,
                    source_type="fact", visibility="team")
    return ids, fact


def dream(db, settings, instance, ids, fact, wiki=None):
    items = [assertion(text, memory_id) for text, memory_id in zip(LINES, ids, strict=True)]
    items.append(assertion(FACT, fact.id))  # reuses the write path's assertion
    return run_dream_partition(db, settings, Partition(instance, "team", instance),
                               model=ScriptedModel(payload(*items, wiki=wiki)))


def state(db, assertion_id):
    return db.execute("SELECT status, review_state FROM agent_memory_assertions WHERE id = %s",
                      (assertion_id,)).fetchone()


def projection_state(db, assertion_id):
    row = db.execute("SELECT memory_state FROM agent_memories WHERE assertion_id = %s"
                     " AND source_id IS NULL", (assertion_id,)).fetchone()
    return row[0] if row else None


def test_rollback_tombstones_what_the_dream_created_and_removes_projections(
        db, settings, instance):
    ids, fact = seed(db, settings, instance)
    result = dream(db, settings, instance, ids, fact)
    created = result.assertion_ids[:4]
    assert all(projection_state(db, a) == "active" for a in created)

    rolled = rollback_dream(db, result.dream_id, settings=settings)

    assert rolled.status == "rolled_back" and sorted(rolled.tombstoned) == sorted(created)
    for assertion_id in created:
        assert state(db, assertion_id)[0] == "tombstoned"
        assert projection_state(db, assertion_id) == "archived"
    # The write path's fact was reused, not created: it stays exactly as it was.
    assert state(db, fact.assertion_id) == ("active", "policy_approved")
    row = db.execute("SELECT status, rolled_back_at, stats_json->'rollback'"
                     " FROM agent_memory_dreams WHERE id = %s", (result.dream_id,)).fetchone()
    assert row[0] == "rolled_back" and row[1] is not None and row[2]["tombstoned"]
    assert rollback_dream(db, result.dream_id, settings=settings).status == "already_rolled_back"


def test_rollback_stops_at_human_reviews_and_approved_wiki_proposals(db, settings, instance):
    ids, fact = seed(db, settings, instance)
    page = {"title": "Archive", "slug": "archive", "bodyMarkdown": "Ten years.",
            "assertionRefs": [1], "evidence": [{"memoryId": str(ids[1]),
                          "excerpt": "Invoices are archived for ten years"}]}
    result = dream(db, settings, instance, ids, fact, wiki=[page])
    keycloak, archive, payroll, support = result.assertion_ids[:4]
    record_decision(db, instance_key=instance, assertion_id=keycloak, decision="approve",
                    reviewer_kind="human", reviewer_id="ada", reason_code="confirmed")
    record_decision(db, instance_key=instance, assertion_id=payroll, decision="reject",
                    reviewer_kind="human", reviewer_id="ada", reason_code="wrong")
    db.execute("UPDATE wiki_change_proposals SET state = 'approved', decided_by = 'ada'"
               " WHERE dream_id = %s", (result.dream_id,))

    rolled = rollback_dream(db, result.dream_id, settings=settings)

    assert rolled.tombstoned == [support]
    protected = {(p["kind"], p["id"]): p["reason"] for p in rolled.protected}
    assert protected[("assertion", str(keycloak))] == "human_review"
    assert protected[("assertion", str(payroll))] == "human_review"
    assert protected[("assertion", str(archive))] == "wiki_proposal_approved_or_published"
    assert ("wikiProposal", str(result.wiki_proposal_ids[0])) in protected
    assert state(db, keycloak) == ("active", "human_approved")
    assert projection_state(db, keycloak) == "active"
    assert state(db, payroll) == ("rejected", "human_rejected")
    assert state(db, archive) == ("active", "policy_approved")
    assert state(db, support)[0] == "tombstoned"


def test_rollback_rejects_draft_proposals_and_removes_evidence_on_reused_assertions(
        db, settings, instance):
    ids, fact = seed(db, settings, instance)
    # The dream cites a second memory for the write path's fact: new evidence on a reused
    # assertion, which the rollback takes back.
    ctx = AccessContext(instance, user_id="carol", session_key="chat:carol")
    echo = remember(db, settings, ctx, f"Carol said: {FACT}", visibility="team").id
    items = [assertion(FACT, echo, FACT)]
    page = {"title": "VAT", "slug": "vat", "bodyMarkdown": "Monthly.", "assertionRefs": [0],
            "evidence": [{"memoryId": str(echo), "excerpt": FACT}]}
    result = run_dream_partition(db, settings, Partition(instance, "team", instance),
                                 model=ScriptedModel(payload(*items, wiki=[page])))
    evidence = db.execute("SELECT count(*) FROM agent_memory_assertion_evidence"
                          " WHERE assertion_id = %s", (fact.assertion_id,)).fetchone()[0]
    assert evidence == 2

    rolled = rollback_dream(db, result.dream_id, settings=settings)

    assert rolled.evidence_removed == 1 and rolled.tombstoned == []
    assert rolled.proposals_rejected == result.wiki_proposal_ids
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_evidence"
                      " WHERE assertion_id = %s", (fact.assertion_id,)).fetchone()[0] == 1
    assert state(db, fact.assertion_id) == ("active", "policy_approved")


def test_rollback_restores_a_reused_assertion_the_dream_activated(db, settings, instance):
    ids, _ = seed(db, settings, instance)
    ctx = AccessContext(instance, user_id="bob")
    inferred = remember(db, settings, ctx, "The DMS keeps a nightly backup in Frankfurt.",
                        source_type="fact", visibility="team", trust_class="human_channel")
    # human_channel, not assistant_inference: assistant-inferred evidence makes a Dream
    # assertion wait for a person (C3, docs/policy.md), so nothing would be activated.
    assert state(db, inferred.assertion_id) == ("candidate", "pending")
    note = remember(db, settings, AccessContext(instance, user_id="ada"),
                    "Ops call: the DMS keeps a nightly backup in Frankfurt, Ada confirmed.",
                    visibility="team")
    result = run_dream_partition(
        db, settings, Partition(instance, "team", instance),
        model=ScriptedModel(payload(assertion(LINES[0], ids[0]),
                                    assertion("The DMS keeps a nightly backup in Frankfurt.",
                                              note.id, "the DMS keeps a nightly backup in "
                                              "Frankfurt", subject="DMS", predicate="backup"))))
    # The inference is not an input (not approved), but the Dream's item has the same text.
    assert state(db, inferred.assertion_id) == ("active", "policy_approved")

    rolled = rollback_dream(db, result.dream_id, settings=settings)

    assert rolled.restored == [inferred.assertion_id]
    assert state(db, inferred.assertion_id) == ("candidate", "pending")


def test_rollback_waits_for_a_running_dream(db, settings, instance, module_database_url):
    import psycopg

    ids, fact = seed(db, settings, instance)
    result = dream(db, settings, instance, ids, fact)
    with psycopg.connect(module_database_url, autocommit=True) as other, dream_lock(other):
        with pytest.raises(DreamLocked):
            rollback_dream(db, result.dream_id, settings=settings)
    assert db.execute("SELECT status FROM agent_memory_dreams WHERE id = %s",
                      (result.dream_id,)).fetchone()[0] == "completed"
