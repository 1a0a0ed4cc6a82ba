"""/internal/memory (admin): the operator's status report and the bounded re-embed batch."""

from __future__ import annotations

import psycopg

from tests.api.conftest import ALL_SCOPES, bearer, store


def test_status_counts_memories_by_scope_visibility_and_source_type(client, alice, make_key):
    store(client, alice, "The VPN gateway restarts at midnight.", visibility="private")
    store(client, alice, "The team standup is at 09:15.", visibility="team")
    store(client, alice, "Office hours are nine to five.", visibility="workspace")
    store(client, bearer(make_key("bob", ALL_SCOPES, instance="acme")),
          "Acme keeps its own memories.")
    response = client.get("/internal/memory/status", headers=alice)
    assert response.status_code == 200
    status = response.json()
    assert status["instance"] == "default"
    memories = status["memories"]
    assert memories["byVisibility"] == {"private": 1, "team": 1, "workspace": 1}
    assert sum(memories["byScope"].values()) == 3
    assert memories["bySourceType"] == {"fact": 3}
    assert memories["byState"] == {"active": 3}


def test_status_counts_assertions_by_state_and_evidence(client, alice):
    store(client, alice, "The VPN gateway restarts at midnight.")
    store(client, alice, "Office hours are nine to five.", visibility="workspace")
    status = client.get("/internal/memory/status", headers=alice).json()
    assert status["assertions"]["byStatus"] == {"active": 1, "candidate": 1}
    assert sum(status["assertions"]["byReviewState"].values()) == 2
    assert status["evidence"] == 2
    assert status["conflicts"] == {}


def test_status_reports_generations_and_the_reembed_backlog(client, alice, database_url):
    store(client, alice, "The VPN gateway restarts at midnight.")
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("UPDATE agent_memory_chunks SET embedding = NULL,"
                           " generation_id = NULL, embedding_key = NULL")
    embeddings = client.get("/internal/memory/status", headers=alice).json()["embeddings"]
    assert embeddings["active"]["provider"] == "hash"
    assert [g["status"] for g in embeddings["generations"]] == ["active"]
    assert embeddings["reembedBacklog"]["chunks"] == 1


def test_status_reports_outbox_health(client, alice):
    outbox = client.get("/internal/memory/status", headers=alice).json()["outbox"]
    assert outbox == {"pending": 0, "failed": 0, "oldestAgeSeconds": None}


def test_reembed_runs_one_bounded_batch_and_answers_what_it_did(client, alice, database_url):
    store(client, alice, "The VPN gateway restarts at midnight.")
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("UPDATE agent_memory_chunks SET embedding = NULL,"
                           " generation_id = NULL, embedding_key = NULL")
    response = client.post("/internal/memory/reembed", json={"limit": 10}, headers=alice)
    assert response.status_code == 200, response.text
    assert isinstance(response.json(), dict) and response.json()
    backlog = client.get("/internal/memory/status", headers=alice).json()
    assert backlog["embeddings"]["reembedBacklog"]["chunks"] == 0


def test_f14_reembed_acts_on_the_admin_keys_own_instance(client, alice, make_key,
                                                         database_url):
    store(client, alice, "The VPN gateway restarts at midnight.")
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("UPDATE agent_memory_chunks SET embedding = NULL,"
                           " generation_id = NULL, embedding_key = NULL")
    acme_admin = bearer(make_key("ops", ("admin",), instance="acme"))
    response = client.post("/internal/memory/reembed", json={"limit": 10}, headers=acme_admin)
    assert response.status_code == 200, response.text
    assert response.json()["instance_key"] == "acme"
    assert response.json()["chunks_converted"] == 0
    default = client.get("/internal/memory/status", headers=alice).json()
    assert default["embeddings"]["reembedBacklog"]["chunks"] == 1
    acme = client.get("/internal/memory/status", headers=acme_admin).json()
    assert acme["instance"] == "acme"
