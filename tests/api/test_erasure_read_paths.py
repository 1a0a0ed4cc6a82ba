"""After a person's erasure, nothing of theirs is found by any read route, by any key: memory
search and get, context search and get, the knowledge graph's search, entity, neighbours and
explain, session grep and describe, assertions as-of; their own keys stop working."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from pgvector.psycopg import register_vector

from memory_platform.features.graph.build import process_graph_jobs
from memory_platform.features.graph.model import GraphModel
from memory_platform.shared.llm.selection import OFFLINE_MODEL
from tests.api.conftest import ALL_SCOPES, bearer, store

MARK = "quokkaberry"


def test_nothing_of_an_erased_person_is_found_by_any_read_route(client, api_settings,
                                                                database_url, make_key):
    ada = bearer(make_key("ada", ("memory:read", "memory:write")))
    bob = bearer(make_key("bob", ("memory:read", "memory:write")))
    admin = bearer(make_key("root", ALL_SCOPES))
    private = store(client, ada, f"Ada stores the {MARK} jam in the Nordwind Pantry.")
    team = store(client, ada, f"The {MARK} harvest starts at Helios Farm in March.",
                 visibility="team")
    turn = client.post("/api/v1/sessions/ada-chat/items", headers=ada, json={
        "items": [{"role": "user", "content": f"Remind me about the {MARK} order."}]})
    assert turn.status_code == 201, turn.text
    message_id = turn.json()["items"][0]["id"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        process_graph_jobs(conn, api_settings, model=GraphModel(OFFLINE_MODEL, "x", None))
        claims = [str(r[0]) for r in conn.execute(
            "SELECT id FROM agent_knowledge_claims WHERE assertion_text LIKE %s",
            (f"%{MARK}%",)).fetchall()]
        entities = [str(r[0]) for r in conn.execute(
            "SELECT id FROM agent_knowledge_entities WHERE label IN ('Helios Farm',"
            " 'Nordwind Pantry')").fetchall()]
    assert claims and entities
    found = client.get("/api/v1/memory", params={"query": MARK}, headers=bob).json()
    assert found["results"], "before the erasure the teammate finds the team fact"

    erased = client.post("/internal/memory/users/erase", json={"userId": "ada"},
                         headers=admin)
    assert erased.status_code == 200, erased.text

    now = datetime.now(UTC).isoformat()
    for who in (bob, admin):
        assert client.get("/api/v1/memory", params={"query": MARK},
                          headers=who).json()["results"] == []
        assert client.post("/api/v1/context/search", json={"query": MARK, "depth": "deep"},
                           headers=who).json()["results"] == []
        graph = client.post("/api/v1/knowledge/search", json={"query": MARK},
                            headers=who).json()
        assert graph["claims"] == [] and graph["edges"] == []
        assert all(MARK not in e["label"] for e in graph["entities"])
        assert client.get("/api/v1/sessions/grep",
                          params={"pattern": MARK, "allSessions": "true"},
                          headers=who).json()["results"] == []
        as_of = client.get("/api/v1/assertions/as-of", params={"at": now, "query": MARK},
                           headers=who)
        assert as_of.status_code == 200 and as_of.json()["results"] == []
        for memory in (private, team):
            assert client.get(f"/api/v1/memory/{memory['id']}", headers=who).status_code == 404
            assert client.get(f"/api/v1/context/memory:{memory['id']}",
                              headers=who).status_code == 404
        for claim in claims:
            assert client.get(f"/api/v1/knowledge/claims/{claim}/explain",
                              headers=who).status_code == 404
        for entity in entities:
            assert client.get(f"/api/v1/knowledge/entities/{entity}",
                              headers=who).status_code == 404
            assert client.get(f"/api/v1/knowledge/entities/{entity}/neighbors",
                              headers=who).status_code == 404
        assert client.get(f"/api/v1/sessions/nodes/{message_id}",
                          headers=who).status_code == 404
    assert client.get("/api/v1/memory", params={"query": MARK},
                      headers=ada).status_code == 401
