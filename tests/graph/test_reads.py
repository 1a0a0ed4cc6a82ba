"""Drill-down reads (graph/reads.py): one entity, its neighbours, one claim's provenance;
invisible and unknown ids answer the same NotFound, malformed ids InvalidInput."""

from __future__ import annotations

import uuid

import pytest
from psycopg.types.json import Jsonb

from memory_platform.features.graph.reads import explain_claim, get_entity, neighbors
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.shared.access import AccessContext
from tests.db import rows
from tests.graph import knowledge_rows as kr


@pytest.fixture
def instance():
    return f"kr-{uuid.uuid4().hex[:10]}"


def test_get_entity_lists_claims_edges_and_evidence(db, instance):
    ada = kr.entity(db, instance, "Ada", aliases=["Countess"])
    bob = kr.entity(db, instance, "Bob")
    about = kr.claim(db, instance, ada, "Ada prefers tea.", predicate="prefers", value="tea")
    knows = kr.claim(db, instance, bob, "Bob knows Ada.", predicate="knows", object_entity_id=ada,
                     value=None)
    kr.claim(db, instance, ada, "Ada liked coffee.", status="superseded")
    out = kr.edge(db, instance, ada, bob)
    into = kr.edge(db, instance, bob, ada, relation="reports_to")
    rows.knowledge_evidence(db, instance, entity_id=ada)
    rows.knowledge_evidence(db, instance, entity_id=ada)
    got = get_entity(db, AccessContext(instance), ada)
    assert got["entity"]["label"] == "Ada" and got["entity"]["aliases"] == ["Countess"]
    assert [c["id"] for c in got["claims"]["asSubject"]] == [str(about)]
    assert [c["id"] for c in got["claims"]["asObject"]] == [str(knows)]
    assert got["claims"]["asObject"][0]["object"] == "Ada"
    assert [e["id"] for e in got["edges"]["outgoing"]] == [str(out)]
    assert [e["id"] for e in got["edges"]["incoming"]] == [str(into)]
    assert got["evidenceCount"] == 2 and got["truncated"] is False
    assert get_entity(db, AccessContext(instance), str(ada)) == got


def test_neighbors_one_and_two_hops_bounded(db, instance):
    a, b, c, d = (kr.entity(db, instance, name) for name in "ABCD")
    gone = kr.entity(db, instance, "Gone", status="quarantined")
    ab = kr.edge(db, instance, a, b, confidence=0.9)
    kr.edge(db, instance, c, b)
    kr.edge(db, instance, c, d)
    kr.edge(db, instance, a, gone)
    one = neighbors(db, AccessContext(instance), a)
    assert [n["label"] for n in one["neighbors"]] == ["B"]
    assert [e["id"] for e in one["edges"]] == [str(ab)]
    two = neighbors(db, AccessContext(instance), a, depth=2)
    assert [(n["label"], n["distance"]) for n in two["neighbors"]] == [("B", 1), ("C", 2)]
    capped = neighbors(db, AccessContext(instance), a, depth=2, limit=1)
    assert [n["label"] for n in capped["neighbors"]] == ["B"] and capped["truncated"]
    for bad in ({"depth": 3}, {"depth": 0}, {"limit": 0}, {"limit": 101}):
        with pytest.raises(InvalidInput):
            neighbors(db, AccessContext(instance), a, **bad)


def test_explain_claim_refs_support_and_evidence(db, instance):
    told = rows.assertion(db, instance, status="active", review_state="policy_approved",
                          assertion_text="Ada prefers tea.")
    revoked = rows.assertion(db, instance, status="superseded",
                             review_state="policy_approved")
    memory = rows.memory(db, instance)
    dream = rows.dream(db, instance, status="completed")
    ada = kr.entity(db, instance, "Ada")
    refs = [{"memoryId": str(memory), "assertionId": str(told)},
            {"memoryId": str(memory), "assertionId": str(revoked)}, {"dreamId": str(dream)}]
    claim = kr.claim(db, instance, ada, "Ada prefers tea.", source_refs=Jsonb(refs))
    rows.knowledge_evidence(db, instance, claim_id=claim, evidence_kind="assertion",
                            assertion_id=told, source_memory_id=memory,
                            excerpt="prefers tea")
    rows.knowledge_evidence(db, instance, claim_id=claim, evidence_kind="dream",
                            dream_id=dream)
    got = explain_claim(db, AccessContext(instance), claim)
    assert got["claim"]["text"] == "Ada prefers tea." and got["claim"]["subject"] == "Ada"
    assert [r["supported"] for r in got["sourceRefs"]] == [True, False, False]
    assert got["sourceRefs"][0]["assertionId"] == str(told) and got["supported"] is True
    by_kind = {e["kind"]: e for e in got["evidence"]}
    assert by_kind["assertion"]["assertionText"] == "Ada prefers tea."
    assert by_kind["assertion"]["assertionStatus"] == "active"
    assert by_kind["assertion"]["excerpt"] == "prefers tea"
    assert by_kind["assertion"]["sourceMemoryId"] == str(memory)
    assert by_kind["dream"]["dreamId"] == str(dream) and got["dreamIds"] == [str(dream)]


def test_invisible_and_unknown_ids_answer_the_same(db, instance):
    private = kr.entity(db, instance, "Secret", kind="private", key="ada")
    claim = kr.claim(db, instance, private, "Secret plan.", kind="private", key="ada")
    superseded = kr.claim(db, instance, kr.entity(db, instance, "Old"), "Old.",
                          status="superseded")
    eve = AccessContext(instance, user_id="eve")
    messages = set()
    for read, ident in ((get_entity, private), (get_entity, uuid.uuid4()),
                        (neighbors, private), (neighbors, uuid.uuid4()),
                        (explain_claim, claim), (explain_claim, uuid.uuid4()),
                        (explain_claim, superseded)):
        with pytest.raises(NotFound) as caught:
            read(db, eve, ident)
        messages.add((read.__name__ == "explain_claim", caught.value.message))
    assert len(messages) == 2  # one message per kind of id, whatever the id
    assert get_entity(db, AccessContext(instance, user_id="ada"), private)["entity"]["id"]
    for read in (get_entity, neighbors, explain_claim):
        with pytest.raises(InvalidInput):
            read(db, eve, "not-a-uuid")
