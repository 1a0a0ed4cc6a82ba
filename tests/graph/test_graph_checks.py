"""The support check and the SQL rule under it: a claim whose only ref is a revoked assertion
fails the check of its partition (and only of its partition), a claim another told assertion
still supports passes, and malformed or Dream-only refs never count as support."""

from __future__ import annotations

import uuid

from psycopg.types.json import Jsonb

from memory_platform.features.graph.checks import graph_support_check
from memory_platform.features.graph.retract import retract_assertions
from tests.graph.support import apply, batch, claim, edge, entity, extraction, fact, one

A_TEXT = "Mandant Nord moved its payroll to Lohnbüro Ost in January."
B_TEXT = "Lohnbüro Ost runs the payroll of Mandant Nord since January."


def build(db, settings, instance, *, visibility="team", user="ada"):
    a = fact(db, settings, instance, A_TEXT, visibility=visibility, user=user)
    b = fact(db, settings, instance, B_TEXT, visibility=visibility, user=user)
    changes = apply(db, batch(a, b), extraction(
        [entity("n", "Mandant Nord", a, b, entity_type="mandant"),
         entity("o", "Lohnbüro Ost", a, b, entity_type="organization")],
        [claim("n", "payroll_with", a, obj="o"),                  # A alone
         claim("o", "runs_payroll_of", b, a, obj="n", text=B_TEXT)],  # B and A
        [edge("n", "o", "works_with", a)]))
    return a, b, changes


def supported(db, instance: str, refs) -> bool:
    return one(db, "SELECT memory_v2_graph_refs_have_current_support(%s, %s)",
               instance, Jsonb(refs))


def test_the_check_passes_on_a_supported_graph(db, settings, instance):
    build(db, settings, instance)
    result = graph_support_check(db, instance, "team", instance)
    assert result == {"passed": True, "checked": 3, "unsupported_claims": 0,
                      "unsupported_edges": 0, "sample": []}


def test_a_claim_whose_only_ref_is_revoked_fails_the_check(db, settings, instance):
    a, b, changes = build(db, settings, instance)
    only_a = changes.changed_claim_ids[0]
    db.execute("UPDATE agent_memory_assertions SET status = 'rejected',"
               " review_state = 'human_rejected' WHERE id = %s", (a.assertion_id,))

    result = graph_support_check(db, instance, "team", instance)

    assert not result["passed"]
    assert (result["unsupported_claims"], result["unsupported_edges"]) == (1, 1)
    edge_id = one(db, "SELECT id FROM agent_knowledge_edges WHERE instance_key = %s", instance)
    assert sorted(result["sample"]) == sorted([str(only_a), str(edge_id)])
    # Another partition of the instance is not this partition's problem.
    assert graph_support_check(db, instance, "private", "ada")["passed"]

    with db.transaction():
        retract_assertions(db, instance, [a.assertion_id])
    assert graph_support_check(db, instance, "team", instance)["passed"]


def test_the_rule_counts_only_told_assertions_of_the_instance(db, settings, instance):
    a, _, _ = build(db, settings, instance)
    ref = {"memoryId": str(a.memory_id), "assertionId": str(a.assertion_id)}
    assert supported(db, instance, [ref])
    assert not supported(db, f"inst-{uuid.uuid4().hex[:12]}", [ref])   # joined by instance
    assert not supported(db, instance, [{"dreamId": str(uuid.uuid4())}])
    assert not supported(db, instance, [{"assertionId": "not-a-uuid"}, {"x": 1}])
    assert not supported(db, instance, [])
    assert not supported(db, instance, {"assertionId": str(a.assertion_id)})  # not an array
    assert supported(db, instance, [{"assertionId": "nonsense"}, ref])

    db.execute("UPDATE agent_memory_assertions SET valid_from = now() + interval '1 day'"
               " WHERE id = %s", (a.assertion_id,))
    assert not supported(db, instance, [ref])                 # not valid yet
    db.execute("UPDATE agent_memory_assertions SET valid_from = NULL,"
               " review_state = 'pending' WHERE id = %s", (a.assertion_id,))
    assert not supported(db, instance, [ref])                 # not approved
