"""`memory-platform graph build|search` against the module's real database, and the graph
jobs' retry budget: capped backoff, their own attempt limit, --requeue-failed."""

from __future__ import annotations

import json

from memory_platform.features.projection.outbox import (
    GRAPH_PROJECTION,
    claim,
    due_outbox_job,
    mark_failed,
)
from memory_platform.shared.access import AccessContext
from tests.demo.test_demo_cli import invoke
from tests.dreaming.support import remember


def env(url: str, tmp_path) -> dict[str, str]:
    return {"MEMORY_DATABASE_URL": url, "MEMORY_DATA_DIR": str(tmp_path),
            "MEMORY_EMBEDDING_PROVIDER": "hash", "MEMORY_HASH_EMBEDDING_DIMENSIONS": "64",
            "MEMORY_MAINTENANCE_DEFAULT_MODEL": "extractive"}


def test_build_then_search_from_the_command_line(db, settings, instance, module_database_url,
                                                 tmp_path):
    remember(db, settings, AccessContext(instance, user_id="ada"),
             "Nordwind Logistik uses Keycloak for single sign-on.", source_type="fact",
             visibility="team")
    cli = env(module_database_url, tmp_path)

    built = json.loads(invoke(cli, "graph", "build", "--json").output)

    assert built["claimsAdded"] >= 1 and built["failedBatches"] == 0
    found = json.loads(invoke(cli, "graph", "search", "Keycloak single sign-on",
                              "--instance", instance, "--user", "ada").output)
    assert [c["text"] for c in found["claims"]] == [
        "Nordwind Logistik uses Keycloak for single sign-on."]
    outsider = json.loads(invoke(cli, "graph", "search", "Keycloak",
                                 "--instance", "another-instance", "--user", "ada").output)
    assert outsider["claims"] == [] and outsider["entities"] == []
    assert "--rebuild needs --partition" in invoke(cli, "graph", "build", "--rebuild",
                                                   ok=False).output


def test_graph_jobs_back_off_to_a_cap_and_run_out_only_after_their_own_budget(
        db, settings, instance, module_database_url, tmp_path):
    remember(db, settings, AccessContext(instance, user_id="ada"),
             "Helios Energy prefers Grafana reports every Monday.", source_type="fact",
             visibility="team")
    (job,) = claim(db, settings, 10, types=[GRAPH_PROJECTION], instance_key=instance)
    db.execute("UPDATE agent_memory_ingestion_outbox SET attempts = 30 WHERE id = %s",
               (job.id,))
    mark_failed(db, settings, job.__class__(**{**job.__dict__, "attempts": 30}),
                "model_unavailable: down")
    (delay,) = db.execute("SELECT extract(epoch FROM available_at - now())"
                          " FROM agent_memory_ingestion_outbox WHERE id = %s",
                          (job.id,)).fetchone()
    cap = settings.outbox_retry_max_seconds
    assert cap - 60 < float(delay) <= cap
    assert 30 > settings.outbox_max_attempts        # other jobs would have stopped long ago

    db.execute("UPDATE agent_memory_ingestion_outbox SET attempts = %s, available_at = now()"
               " WHERE id = %s", (settings.graph_max_attempts, job.id))
    assert due_outbox_job(db, settings) is None or due_outbox_job(db, settings)[0] != job.id
    cli = env(module_database_url, tmp_path)
    assert json.loads(invoke(cli, "graph", "build", "--json").output)["jobs"] == 0

    revived = invoke(cli, "graph", "build", "--requeue-failed", "--json")
    assert "requeued 1 graph job(s)" in revived.stderr
    assert json.loads(revived.stdout)["claimsAdded"] == 1
