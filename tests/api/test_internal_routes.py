"""/internal/memory (admin): the operator's status report and the bounded re-embed batch."""

from __future__ import annotations

import hashlib

import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.runs import record_finished_dream
from memory_platform.features.maintenance.workspace import sync_workspace
from memory_platform.foundation.settings import get_settings
from tests.api.conftest import ALL_SCOPES, bearer, store
from tests.db import rows
from tests.graph import knowledge_rows as kr


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


def test_status_reports_prompt_files_the_graph_backlog_and_recent_dreams(
        client, alice, database_url, tmp_path):
    """Issue 32.10: the synced prompt files with their hashes, the graph's share of the
    re-embedding backlog, and the most recent Dreams with trigger, model and failure."""
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text("Always run the tests before a release.\n")
    (workspace / "memory" / "deploys.md").write_text("Deploys go out on Tuesdays.\n")
    (workspace / "memory" / "huge.md").write_text("x " * 200_000)      # over the size cap
    with psycopg.connect(database_url, autocommit=True) as conn:
        register_vector(conn)
        settings = get_settings().model_copy(update={"database_url": database_url,
                                                     "embedding_provider": "hash"})
        sync_workspace(conn, settings, "default", workspace)
        entity = kr.entity(conn, "default", "Release train")
        kr.claim(conn, "default", entity, "The release train leaves on Tuesdays.")
        failed = record_finished_dream(
            conn, Partition("default", "team", "default"), "failed", model="gpt-x",
            trigger="scheduled", dry_run=False, orchestrator_run_id=None, stats={},
            diagnostics=[], error="model_unavailable: no endpoint")
        rows.dream(conn, "default", status="completed", model="extractive",
                   stats_json=Jsonb({"inputsTotal": 4, "accepted": 2, "activated": 1,
                                     "rejected": {"time_bounded": 1}}))

    status = client.get("/internal/memory/status", headers=alice).json()
    files = status["workspace"]
    assert files["files"] == 2 and files["lastChangedAt"]
    assert {f["path"]: f["sha256"] for f in files["promptFiles"]} == {
        "AGENTS.md": hashlib.sha256(b"Always run the tests before a release.\n").hexdigest(),
        "memory/deploys.md": hashlib.sha256(b"Deploys go out on Tuesdays.\n").hexdigest()}
    assert status["embeddings"]["reembedBacklog"]["graph"] == {"entities": 1, "claims": 1}
    dreams = status["recentDreams"]
    assert len(dreams) == 2
    broken = next(d for d in dreams if d["id"] == str(failed))
    assert broken["status"] == "failed" and broken["trigger"] == "scheduled"
    assert broken["model"] == "gpt-x" and broken["error"].startswith("model_unavailable")
    done = next(d for d in dreams if d["id"] != str(failed))
    assert done["rolledBackAt"] is None and done["stats"]["inputs"] == 4
    assert (done["stats"]["activated"], done["stats"]["rejectedByReason"]) == (
        1, {"time_bounded": 1})
    last = files["lastSync"]
    assert (last["files"], last["added"], last["syncedAt"] is not None) == (2, 2, True)
    assert last["refused"] == [{"path": "memory/huge.md",
                                "reason": "larger than 262144 bytes"}]
    assert status["graph"]["entities"] == {"active": 1}
    assert status["graph"]["claims"] == {"active": 1} and status["graph"]["edges"] == {}
