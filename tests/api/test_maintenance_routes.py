"""/internal/memory maintenance routes (admin): a retention sweep, a forced workspace sync and
one user's profile, each of the admin key's own instance; bad input 400, scopes enforced."""

from __future__ import annotations

from tests.api.conftest import (
    READ,
    assert_error,
    bearer,
    make_settings,
    open_client,
    store,
)


def test_a_retention_dry_run_counts_and_deletes_nothing(client, alice, make_key):
    store(client, alice, "The VPN gateway restarts at midnight.")
    response = client.post("/internal/memory/retention", json={"dryRun": True},
                           headers=alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["dryRun"] is True and body["instanceKey"] == "default"
    assert body["deleted"]["agent_memories"] == 0 and body["retentionDays"] == 30
    scoped = client.post("/internal/memory/retention",
                         json={"audienceKind": "team", "audienceKey": "default"},
                         headers=alice)
    assert scoped.status_code == 200 and scoped.json()["audience"] == {
        "kind": "team", "key": "default"}
    assert_error(client.post("/internal/memory/retention", json={"audienceKind": "team"},
                             headers=alice), 400)
    assert_error(client.post("/internal/memory/retention", json={"days": 1},
                             headers=alice), 400)
    reader = bearer(make_key("rita", (READ,)))
    assert_error(client.post("/internal/memory/retention", json={}, headers=reader), 403)


def test_a_workspace_sync_needs_a_configured_directory_and_then_syncs_it(
        client, alice, make_key, database_url, tmp_path):
    assert_error(client.post("/internal/memory/workspace/sync", headers=alice), 400)
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "memory" / "deploys.md").write_text(
        "# Deploys\n\nProduction deploys happen on Tuesdays after the standup.\n")
    (workspace / "AGENTS.md").write_text("Answer in English unless asked otherwise.\n")
    settings = make_settings(database_url, tmp_path / "state", workspace_dir=workspace)
    with open_client(settings) as configured:
        admin = bearer(make_key("ops", ("memory:read", "memory:write", "admin")))
        first = configured.post("/internal/memory/workspace/sync", headers=admin)
        again = configured.post("/internal/memory/workspace/sync", headers=admin)
    assert first.status_code == 200, first.text
    assert first.json()["added"] == 2
    assert again.json()["added"] == 0 and again.json()["unchanged"] == 2


def test_a_profile_is_answered_for_the_named_user_of_the_keys_instance(client, alice):
    store(client, alice, "I prefer short answers with code examples.")
    response = client.get("/internal/memory/profile", params={"userId": "alice"},
                          headers=alice)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["userId"] == "alice" and body["trust"] == "untrusted-data"
    assert body["persisted"] is True
    refreshed = client.get("/internal/memory/profile",
                           params={"userId": "alice", "refresh": "1"}, headers=alice)
    assert refreshed.status_code == 200 and refreshed.json()["cached"] is False
    assert_error(client.get("/internal/memory/profile", headers=alice), 400)
    assert_error(client.get("/internal/memory/profile",
                            params={"userId": "alice", "other": "x"}, headers=alice), 400)


def test_a_user_and_the_runtime_acting_for_them_read_the_profile_without_an_admin_key(
        client, make_key):
    """Issue 32.3: the per-user profile for that user's own key and for the runtime acting
    for them, scope memory:read; never another user's."""
    dana = bearer(make_key("dana", ("memory:read", "memory:write")))
    store(client, dana, "I prefer the German tax forms explained in English.",
          visibility="private")
    own = client.get("/api/v1/profile", headers=dana)
    assert own.status_code == 200, own.text
    assert own.json()["userId"] == "dana" and own.json()["trust"] == "untrusted-data"
    assert "German tax forms" in own.json()["text"]

    runtime = bearer(make_key(None, ("memory:read",), runtime=True))
    acting = client.get("/api/v1/profile", params={"userId": "dana"}, headers=runtime)
    assert acting.status_code == 200 and acting.json()["userId"] == "dana"
    assert_error(client.get("/api/v1/profile", headers=runtime), 400)       # name the user
    eve = bearer(make_key("eve", ("memory:read",)))
    assert_error(client.get("/api/v1/profile", params={"userId": "dana"}, headers=eve), 400)
    assert client.get("/api/v1/profile", headers=eve).json()["userId"] == "eve"
    assert "German tax forms" not in client.get("/api/v1/profile", headers=eve).json()["text"]


def test_an_erasure_removes_the_person_and_answers_a_report_without_content(
        client, alice, make_key):
    bob = bearer(make_key("bob", ("memory:read", "memory:write")))
    store(client, bob, "Bob's quokkaberry notes stay between us.")
    response = client.post("/internal/memory/users/erase", json={"userId": "bob"},
                           headers=alice)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["removed"]["agent_memories"] == 1 and "quokkaberry" not in response.text
    reader = bearer(make_key("carol", ("memory:read",)))
    found = client.get("/api/v1/memory", params={"query": "quokkaberry"}, headers=reader)
    assert found.json()["results"] == []
    assert_error(client.post("/internal/memory/users/erase", json={}, headers=alice), 400)
    assert_error(client.post("/internal/memory/users/erase", json={"userId": "bob"},
                             headers=reader), 403)


def test_the_reembed_route_also_fills_the_graphs_missing_vectors(client, alice, api_settings,
                                                                  database_url):
    import psycopg
    from pgvector.psycopg import register_vector

    from memory_platform.features.graph.build import process_graph_jobs
    from memory_platform.features.graph.model import GraphModel
    from memory_platform.shared.llm.selection import OFFLINE_MODEL

    store(client, alice, "Helios Energy uses Grafana for the plant dashboards.",
          visibility="team")
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        process_graph_jobs(conn, api_settings, model=GraphModel(OFFLINE_MODEL, "x", None))
        missing = conn.execute("DELETE FROM agent_knowledge_entity_embeddings"
                               " RETURNING 1").rowcount
    assert missing >= 1
    response = client.post("/internal/memory/reembed", json={}, headers=alice)
    assert response.status_code == 200, response.text
    assert response.json()["graph_embedded"] == missing
