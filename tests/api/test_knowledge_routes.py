"""/api/v1/knowledge with real keys: hybrid search, entity, neighbours, claim explanation;
the same visibility as every read (another user's private entity is 404), 400 for bad
input, the memory:read scope enforced."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.api.conftest import ADMIN, WRITE, add_member, assert_error, bearer
from tests.db import rows
from tests.graph import knowledge_rows as kr

INSTANCE = "default"


@pytest.fixture
def graph(database_url):
    """Workspace, private (alice's) and channel graph rows of instance default."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        told = rows.assertion(conn, INSTANCE, status="active", review_state="policy_approved",
                              assertion_text="Nordlicht pays payroll in March.")
        nordlicht = kr.entity(conn, INSTANCE, "Nordlicht GmbH")
        payroll = kr.entity(conn, INSTANCE, "Payroll team")
        claim = kr.claim(conn, INSTANCE, nordlicht, "Nordlicht pays payroll in March.",
                         predicate="pays_payroll", value="March",
                         source_refs=Jsonb([{"assertionId": str(told)}]))
        rows.knowledge_evidence(conn, INSTANCE, claim_id=claim, evidence_kind="assertion",
                                assertion_id=told)
        edge = kr.edge(conn, INSTANCE, nordlicht, payroll, relation="served_by")
        provider = HashEmbeddingProvider(1536)  # the app's provider (api_settings: hash)
        kr.embed(conn, INSTANCE, provider, "claim", claim, "Nordlicht pays payroll in March.")
        kr.embed(conn, INSTANCE, provider, "entity", nordlicht, "Nordlicht GmbH")
        secret = kr.entity(conn, INSTANCE, "Nordlicht secret", kind="private", key="alice")
        secret_claim = kr.claim(conn, INSTANCE, secret, "Nordlicht secret bonus plan.",
                                kind="private", key="alice")
        room = kr.entity(conn, INSTANCE, "Nordlicht standup", kind="channel", key="slack:C9")
    return {"nordlicht": nordlicht, "payroll": payroll, "claim": claim, "edge": edge,
            "secret": secret, "secret_claim": secret_claim, "room": room}


def test_search_returns_entities_claims_edges_and_the_block(client, make_key, graph):
    headers = bearer(make_key("alice"))
    response = client.post("/api/v1/knowledge/search", headers=headers,
                           json={"query": "Nordlicht payroll"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["trust"] == "untrusted-data" and body["lexicalOnly"] is False
    assert str(graph["claim"]) in {c["id"] for c in body["claims"]}
    assert str(graph["secret_claim"]) in {c["id"] for c in body["claims"]}  # alice's own
    assert {e["id"] for e in body["edges"]} == {str(graph["edge"])}
    assert all(c["trust"] == "untrusted-data" and "decayFactor" in c for c in body["claims"])
    assert body["block"].startswith("Structured knowledge graph")
    assert f"claim:{graph['claim']}" in body["block"]


def test_another_user_sees_no_private_row_and_gets_404(client, make_key, graph):
    bob = bearer(make_key("bob"))
    body = client.post("/api/v1/knowledge/search", headers=bob,
                       json={"query": "Nordlicht secret bonus"}).json()
    assert str(graph["secret_claim"]) not in {c["id"] for c in body["claims"]}
    assert str(graph["secret"]) not in {e["id"] for e in body["entities"]}
    unknown = assert_error(client.get(f"/api/v1/knowledge/entities/{uuid.uuid4()}",
                                      headers=bob), 404, "not_found")
    hidden = assert_error(client.get(f"/api/v1/knowledge/entities/{graph['secret']}",
                                     headers=bob), 404, "not_found")
    assert hidden["message"] == unknown["message"]
    assert_error(client.get(f"/api/v1/knowledge/entities/{graph['secret']}/neighbors",
                            headers=bob), 404)
    assert_error(client.get(f"/api/v1/knowledge/claims/{graph['secret_claim']}/explain",
                            headers=bob), 404)
    alice = bearer(make_key("alice"))
    assert client.get(f"/api/v1/knowledge/entities/{graph['secret']}",
                      headers=alice).status_code == 200


def test_a_channel_member_reads_the_channels_graph(client, make_key, database_url, graph):
    carol = bearer(make_key("carol"))
    path = f"/api/v1/knowledge/entities/{graph['room']}"
    assert_error(client.get(path, headers=carol), 404)
    add_member(database_url, "slack:C9", "carol")
    assert client.get(path, headers=carol).json()["entity"]["label"] == "Nordlicht standup"


def test_entity_neighbors_and_explain(client, make_key, graph):
    headers = bearer(make_key("alice"))
    entity = client.get(f"/api/v1/knowledge/entities/{graph['nordlicht']}", headers=headers)
    assert entity.status_code == 200, entity.text
    body = entity.json()
    assert body["trust"] == "untrusted-data" and body["evidenceCount"] == 0
    assert [c["id"] for c in body["claims"]["asSubject"]] == [str(graph["claim"])]
    assert [e["id"] for e in body["edges"]["outgoing"]] == [str(graph["edge"])]
    near = client.get(f"/api/v1/knowledge/entities/{graph['nordlicht']}/neighbors",
                      params={"depth": 2, "limit": 5}, headers=headers)
    assert near.status_code == 200, near.text
    assert [n["label"] for n in near.json()["neighbors"]] == ["Payroll team"]
    explained = client.get(f"/api/v1/knowledge/claims/{graph['claim']}/explain",
                           headers=headers)
    assert explained.status_code == 200, explained.text
    body = explained.json()
    assert body["supported"] is True and body["sourceRefs"][0]["supported"] is True
    assert body["evidence"][0]["assertionText"] == "Nordlicht pays payroll in March."


@pytest.mark.parametrize("path", [
    "/api/v1/knowledge/entities/not-a-uuid",
    "/api/v1/knowledge/entities/not-a-uuid/neighbors",
    "/api/v1/knowledge/claims/12345/explain",
])
def test_a_malformed_id_is_400(client, make_key, path):
    assert_error(client.get(path, headers=bearer(make_key("alice"))), 400)


@pytest.mark.parametrize(("params", "body"), [
    ({"depth": 3}, None), ({"limit": 0}, None), ({"bogus": 1}, None),
    (None, {"query": ""}), (None, {"query": "x", "limit": 51}), (None, {"query": "x", "x": 1}),
])
def test_bad_input_is_400(client, make_key, graph, params, body):
    headers = bearer(make_key("alice"))
    if body is None:
        response = client.get(f"/api/v1/knowledge/entities/{graph['nordlicht']}/neighbors",
                              params=params, headers=headers)
    else:
        response = client.post("/api/v1/knowledge/search", json=body, headers=headers)
    assert_error(response, 400)


def test_the_read_scope_is_required(client, make_key, graph):
    writer = bearer(make_key("alice", (WRITE, ADMIN)))
    assert_error(client.post("/api/v1/knowledge/search", json={"query": "Nordlicht"},
                             headers=writer), 403, "missing_scope")
    assert_error(client.get(f"/api/v1/knowledge/entities/{graph['nordlicht']}",
                            headers=writer), 403, "missing_scope")
    assert_error(client.get(f"/api/v1/knowledge/claims/{graph['claim']}/explain"), 401)
