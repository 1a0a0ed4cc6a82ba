"""Retraction against the real ledger: a revoked assertion's refs leave claims and edges,
what is left without current support is superseded, newly orphaned entities are quarantined,
entities still in use stay active, a told assertion is left alone, and the sweep catches an
assertion whose validity ended."""

from __future__ import annotations

import uuid

from memory_platform.features.graph.checks import graph_support_check
from memory_platform.features.graph.retract import retract_assertions, retract_unsupported
from memory_platform.shared.ledger.assertions import record_decision
from tests.graph.support import (
    apply,
    batch,
    claim,
    counts,
    edge,
    entity,
    extraction,
    fact,
    one,
    refs_of,
    stable_ref,
    status_of,
)

A_TEXT = "Ada works with Bob on Projekt Apollo."
B_TEXT = "Bob works on Projekt Apollo and knows Carol from the release team."


def build(db, settings, instance, *, visibility="team"):
    """Ada, Bob, Apollo, Carol: claim 1 and edge 1 rest on A alone, claim 2 on A and B,
    edge 2 on B."""
    a = fact(db, settings, instance, A_TEXT, visibility=visibility)
    b = fact(db, settings, instance, B_TEXT, visibility=visibility)
    apply(db, batch(a, b), extraction(
        [entity("ada", "Ada", a, entity_type="person"),
         entity("bob", "Bob", a, b, entity_type="person"),
         entity("apollo", "Projekt Apollo", a, b, entity_type="project"),
         entity("carol", "Carol", b, entity_type="person")],
        [claim("ada", "works_on", a, obj="apollo"),
         claim("bob", "works_on", b, a, obj="apollo", text=B_TEXT)],
        [edge("ada", "bob", "works_with", a), edge("bob", "carol", "knows", b)]))
    ids = {}
    for label in ("Ada", "Bob", "Projekt Apollo", "Carol"):
        ids[label] = one(db, "SELECT id FROM agent_knowledge_entities WHERE instance_key = %s"
                             " AND label = %s", instance, label)
    for name, subject in (("claim1", "Ada"), ("claim2", "Bob")):
        ids[name] = one(db, "SELECT id FROM agent_knowledge_claims WHERE instance_key = %s"
                            " AND subject_entity_id = %s", instance, ids[subject])
    for name, source in (("edge1", "Ada"), ("edge2", "Bob")):
        ids[name] = one(db, "SELECT id FROM agent_knowledge_edges WHERE instance_key = %s"
                            " AND source_entity_id = %s", instance, ids[source])
    return a, b, ids


def revoke(db, instance, assertion_id):
    with db.transaction():
        record_decision(db, instance_key=instance, assertion_id=assertion_id,
                        decision="revoke", reviewer_kind="human", reviewer_id="lead",
                        reason_code="wrong")


def test_a_revoked_assertion_leaves_the_graph(db, settings, instance):
    a, b, ids = build(db, settings, instance)
    revoke(db, instance, a.assertion_id)

    with db.transaction():
        changes = retract_assertions(db, instance, [a.assertion_id])

    assert changes.refs_removed == 3              # claim 1, claim 2, edge 1
    assert (changes.claims_retracted, changes.edges_retracted) == (1, 1)
    assert changes.entities_quarantined == 1
    assert status_of(db, "agent_knowledge_claims", ids["claim1"]) == "superseded"
    assert status_of(db, "agent_knowledge_edges", ids["edge1"]) == "superseded"
    assert status_of(db, "agent_knowledge_claims", ids["claim2"]) == "active"
    assert status_of(db, "agent_knowledge_edges", ids["edge2"]) == "active"
    assert refs_of(db, "agent_knowledge_claims", ids["claim2"]) == [stable_ref(b)]
    assert refs_of(db, "agent_knowledge_claims", ids["claim1"]) == []
    # Ada is named by nothing active any more; Bob, Apollo (claim 2) and Carol (edge 2) are.
    statuses = dict(db.execute(
        "SELECT label, status FROM agent_knowledge_entities WHERE instance_key = %s",
        (instance,)).fetchall())
    assert statuses == {"Ada": "quarantined", "Bob": "active", "Projekt Apollo": "active",
                        "Carol": "active"}
    reason = one(db, "SELECT metadata->>'reason', metadata ? 'quarantinedAt'"
                     " FROM agent_knowledge_entities WHERE id = %s", ids["Ada"])
    assert reason == ("orphaned_by_retraction", True)
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE instance_key = %s"
                   " AND assertion_id = %s", instance, a.assertion_id) == 0
    assert one(db, "SELECT count(*) FROM agent_knowledge_evidence WHERE instance_key = %s"
                   " AND assertion_id = %s", instance, b.assertion_id) == 5
    assert graph_support_check(db, instance, "team", instance)["passed"]

    # Retracting again finds nothing left to do.
    with db.transaction():
        again = retract_assertions(db, instance, [a.assertion_id])
    assert {k: v for k, v in again.counts().items() if v} == {}


def test_a_told_assertion_is_left_alone(db, settings, instance):
    a, b, ids = build(db, settings, instance)
    before = counts(db, instance)
    refs = refs_of(db, "agent_knowledge_claims", ids["claim2"])

    with db.transaction():
        changes = retract_assertions(db, instance, [a.assertion_id, b.assertion_id])

    assert {k: v for k, v in changes.counts().items() if v} == {}
    assert counts(db, instance) == before
    assert refs_of(db, "agent_knowledge_claims", ids["claim2"]) == refs
    assert status_of(db, "agent_knowledge_claims", ids["claim1"]) == "active"


def test_only_the_named_instance_is_touched(db, settings, instance):
    a, _, ids = build(db, settings, instance)
    other = f"inst-{uuid.uuid4().hex[:12]}"
    db.execute("UPDATE agent_memory_assertions SET status = 'rejected',"
               " review_state = 'human_rejected' WHERE id = %s", (a.assertion_id,))

    with db.transaction():
        changes = retract_assertions(db, other, [a.assertion_id])

    # Unknown in ``other`` (so not told there), but no row of ``other`` cites it.
    assert changes.refs_removed == 0
    assert status_of(db, "agent_knowledge_claims", ids["claim1"]) == "active"


def test_the_sweep_retracts_an_assertion_whose_validity_ended(db, settings, instance):
    a, b, ids = build(db, settings, instance, visibility="private")
    db.execute("UPDATE agent_memory_assertions SET valid_from = now() - interval '2 days',"
               " valid_to = now() - interval '1 day' WHERE id = %s", (a.assertion_id,))
    assert not graph_support_check(db, instance, "private", "ada")["passed"]

    with db.transaction():
        changes = retract_unsupported(db, instance)

    assert changes.refs_removed == 3
    assert (changes.claims_retracted, changes.edges_retracted) == (1, 1)
    assert changes.entities_quarantined == 1
    assert refs_of(db, "agent_knowledge_claims", ids["claim2"]) == [stable_ref(b)]
    assert graph_support_check(db, instance, "private", "ada")["passed"]
    with db.transaction():
        assert retract_unsupported(db, instance).refs_removed == 0


def test_the_sweep_is_bounded_and_scoped(db, settings, instance):
    a, b, ids = build(db, settings, instance)
    db.execute("UPDATE agent_memory_assertions SET status = 'expired' WHERE id = ANY(%s)",
               ([a.assertion_id, b.assertion_id],))

    with db.transaction():
        elsewhere = retract_unsupported(db, f"inst-{uuid.uuid4().hex[:12]}")
        first = retract_unsupported(db, instance, limit=1)
    assert elsewhere.refs_removed == 0
    # One stale ref gathered: one assertion retracted, A (3 refs) or B (2 refs), not both.
    assert first.refs_removed in (2, 3)

    with db.transaction():
        rest = retract_unsupported(db, instance)
    assert first.refs_removed + rest.refs_removed == 5
    assert one(db, "SELECT count(*) FROM agent_knowledge_claims WHERE instance_key = %s"
                   " AND status = 'active'", instance) == 0
    assert one(db, "SELECT count(*) FROM agent_knowledge_entities WHERE instance_key = %s"
                   " AND status = 'active'", instance) == 0
