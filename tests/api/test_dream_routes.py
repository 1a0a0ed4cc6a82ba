"""/internal/memory/dreams (admin): list, launch through Dagster, roll back.

Dream rows come from the demo workspace and the real engine (extractive model). The launch
tests give the app a recording launcher (the route's contract with the launcher: settings,
partition keys, model, dry run -> a launched run), behind the composition root's database
check; the last test launches for real through the app `memory-platform api` serves.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from pgvector.psycopg import register_vector
from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.launch import same_database_only
from memory_platform.orchestration.home import dagster_instance
from memory_platform.shared.ledger import assertions as ledger
from tests.api.conftest import ADMIN, READ, WRITE, assert_error, bearer, open_client
from tests.api.launching import RecordingLauncher
from tests.conftest import drop_database

# One database and one app for the module: every test works in instances of its own.
pytestmark = pytest.mark.shared_app


@pytest.fixture
def instance() -> str:
    return f"acme-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def other() -> str:
    return f"globex-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(make_key, instance) -> dict[str, str]:
    return bearer(make_key("anna", (READ, WRITE, ADMIN), instance=instance))


@pytest.fixture
def conn(database_url: str):
    with psycopg.connect(database_url, autocommit=True) as connection:
        register_vector(connection)
        yield connection


@pytest.fixture
def engine_settings(api_settings: Settings) -> Settings:
    return api_settings.model_copy(update={"maintenance_default_model": "extractive"})


def seed(conn, settings: Settings, instance: str):
    return demo.seed_demo(conn, settings, instance_key=instance)


def dream_all(conn, settings: Settings, report) -> list:
    return [run_dream_partition(conn, settings, p.partition, model="extractive")
            for p in report.eligible]


def clean_environment(monkeypatch, **values: str) -> None:
    """Only ``values`` among the MEMORY_* variables; the settings cache cleared."""
    for name in [n for n in os.environ if n.startswith(("MEMORY_", "OPENAI_"))
                 and not n.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


@pytest.fixture
def launcher(monkeypatch, database_url) -> Iterator[RecordingLauncher]:
    """A recording launcher; the process environment names the app's database (as in a
    deployment, where the API and the Dagster runs read the same MEMORY_* settings)."""
    clean_environment(monkeypatch, MEMORY_DATABASE_URL=database_url)
    yield RecordingLauncher()
    get_settings.cache_clear()


@pytest.fixture
def launch_client(api_settings: Settings, launcher: RecordingLauncher):
    """An app whose launcher is the recorder behind the composition root's database check."""
    with open_client(api_settings, launcher=same_database_only(launcher)) as test_client:
        yield test_client


# --- auth ----------------------------------------------------------------------------------


@pytest.mark.parametrize("method, path", [
    ("get", "/internal/memory/dreams"),
    ("post", "/internal/memory/dreams"),
    ("post", "/internal/memory/dreams/5b0f8c1e-2d7a-4e39-8c4f-6a1d2e3b4c5d/rollback"),
])
def test_every_dream_route_needs_an_admin_key(client, make_key, instance, method, path):
    assert_error(client.request(method, path), 401, "unauthorized")
    user = bearer(make_key("ben", (READ, WRITE), instance=instance))
    error = assert_error(client.request(method, path, headers=user,
                                        json={"allEligible": True}), 403, "missing_scope")
    assert error["details"]["required"] == "admin"


# --- list ----------------------------------------------------------------------------------


def test_list_answers_the_key_instances_dreams_newest_first(client, admin, conn,
                                                            engine_settings, instance, other):
    results = dream_all(conn, engine_settings, seed(conn, engine_settings, instance))
    foreign = seed(conn, engine_settings, other)
    run_dream_partition(conn, engine_settings, foreign.eligible[0].partition,
                        model="extractive")

    response = client.get("/internal/memory/dreams", headers=admin)
    assert response.status_code == 200, response.text
    dreams = response.json()["dreams"]
    assert [d["id"] for d in dreams] == [str(r.dream_id) for r in reversed(results)]
    for row in dreams:
        assert set(row) == {"id", "instanceKey", "partitionKey", "audience", "status",
                            "trigger", "model", "dryRun", "dagsterRunId", "startedAt",
                            "finishedAt", "rolledBackAt", "error", "diagnostics", "stats"}
        assert row["instanceKey"] == instance and row["status"] == "completed"
        assert row["model"] == "extractive" and row["trigger"] == "manual"
        assert row["partitionKey"] == Partition(instance, row["audience"]["kind"],
                                                row["audience"]["key"]).partition_key
        stats = row["stats"]
        assert stats["accepted"] >= 3 and stats["activated"] >= 3 and stats["rejected"] == 0
        assert stats["inputs"] == sum(stats["inputsByPool"].values())
    team = next(d for d in dreams if d["audience"]["kind"] == "team")
    assert team["stats"]["excludedAutomation"] == 5

    limited = client.get("/internal/memory/dreams", params={"limit": "2"}, headers=admin)
    assert [d["id"] for d in limited.json()["dreams"]] == [d["id"] for d in dreams[:2]]


@pytest.mark.parametrize("params, field", [
    ({"limit": "0"}, "limit"), ({"limit": "1001"}, "limit"), ({"limit": "many"}, "limit"),
    ({"instance": "globex"}, "instance"),
])
def test_list_rejects_bad_parameters(client, admin, params, field):
    error = assert_error(client.get("/internal/memory/dreams", params=params, headers=admin),
                         400, "validation_error")
    assert error["details"][0]["field"] == field


def test_list_of_an_instance_without_dreams_is_empty(client, admin):
    response = client.get("/internal/memory/dreams", headers=admin)
    assert response.status_code == 200 and response.json() == {"dreams": []}


# --- launch --------------------------------------------------------------------------------


def test_launch_all_eligible_hands_the_instances_partitions_to_dagster(
        launch_client, admin, conn, api_settings, launcher, instance, other):
    report = seed(conn, api_settings, instance)
    seed(conn, api_settings, other)
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"allEligible": True, "model": "extractive", "dryRun": True})
    assert response.status_code == 202, response.text
    assert response.json() == {"runId": "run-1",
                               "partitions": [p.partition_key for p in report.eligible],
                               "model": "extractive", "dryRun": True, "mode": "queued"}
    (call,) = launcher.calls
    assert call["partitions"] == [p.partition_key for p in report.eligible]
    assert all(key.startswith(f"{instance}/") for key in call["partitions"])
    assert call["model"] == "extractive" and call["dryRun"] is True
    assert call["settings"].database_url == api_settings.database_url


def test_launch_one_partition(launch_client, admin, conn, api_settings, launcher, instance):
    seed(conn, api_settings, instance)
    key = Partition(instance, "private", "dora").partition_key
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"partition": key, "allEligible": False, "model": None})
    assert response.status_code == 202, response.text
    assert response.json() == {"runId": "run-1", "partitions": [key], "model": None,
                               "dryRun": False, "mode": "queued"}
    assert launcher.calls[0]["partitions"] == [key] and launcher.calls[0]["model"] is None
    # A non-canonical spelling of the same key is launched under its canonical form.
    channel = Partition(instance, "channel", demo.SLACK_THREAD).partition_key
    spelled = channel.replace("C05PLATFORM", "C05PLATFOR%4D")
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"partition": spelled})
    assert response.status_code == 202 and response.json()["partitions"] == [channel]


def test_launch_with_nothing_eligible_launches_nothing(launch_client, admin, launcher):
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"allEligible": True})
    assert response.status_code == 200, response.text
    assert response.json() == {"runId": None, "partitions": [], "model": None,
                               "dryRun": False, "mode": None}
    assert launcher.calls == []


@pytest.mark.parametrize("body", [
    {},
    {"allEligible": False},
    {"partition": None, "allEligible": False},
    {"partition": "acme/team/acme", "allEligible": True},
    {"allEligible": "yes"},
    {"allEligible": True, "dryRun": 1},
    {"allEligible": True, "model": ""},
    {"allEligible": True, "model": 5},
    {"allEligible": True, "partitions": []},
    {"partition": ""},
])
def test_launch_validates_its_body(launch_client, admin, body, launcher):
    assert_error(launch_client.post("/internal/memory/dreams", headers=admin, json=body), 400,
                 "validation_error")
    assert launcher.calls == []


def test_launch_refuses_malformed_foreign_and_unknown_partitions(
        launch_client, admin, conn, api_settings, launcher, instance, other):
    seed(conn, api_settings, instance)
    seed(conn, api_settings, other)
    def post(body):
        return launch_client.post("/internal/memory/dreams", headers=admin, json=body)

    assert_error(post({"partition": f"{instance}/team"}), 400, "invalid_partition")
    assert_error(post({"partition": f"{instance}/galaxy/x"}), 400, "invalid_partition")
    assert_error(post({"allEligible": True, "model": "gpt 4"}), 400, "validation_error")
    error = assert_error(post({"partition": f"{other}/team/{other}"}), 403,
                         "foreign_partition")
    assert other not in error["message"]
    assert_error(post({"partition": f"{instance}/private/nobody"}), 404, "unknown_partition")
    assert launcher.calls == []


def test_launch_failures_are_reported_not_hidden(launch_client, admin, conn, api_settings,
                                                 launcher, instance):
    seed(conn, api_settings, instance)
    launcher.error = RuntimeError("dagster instance unreachable")
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"allEligible": True})
    error = assert_error(response, 503, "launch_failed")
    assert "dagster instance unreachable" in error["message"]
    assert error["details"]["partitions"] == launcher.calls[0]["partitions"]


def test_an_app_without_a_launcher_answers_launches_503(client, admin, conn, api_settings,
                                                        instance):
    seed(conn, api_settings, instance)
    response = client.post("/internal/memory/dreams", headers=admin, json={"allEligible": True})
    error = assert_error(response, 503, "launch_unavailable")
    assert "memory-platform api" in error["message"]
    nothing = client.post("/internal/memory/dreams", headers=admin,
                          json={"partition": f"{instance}/private/nobody"})
    assert_error(nothing, 404, "unknown_partition")


def test_launch_refuses_when_dagster_would_use_another_database(launch_client, admin, conn,
                                                               api_settings, launcher,
                                                               monkeypatch, instance):
    seed(conn, api_settings, instance)
    clean_environment(monkeypatch)          # the runs would dream the default database
    response = launch_client.post("/internal/memory/dreams", headers=admin,
                                  json={"allEligible": True})
    error = assert_error(response, 409, "orchestration_settings_mismatch")
    assert "memory-platform dream run" in error["message"]
    assert launcher.calls == []


# --- rollback ------------------------------------------------------------------------------


def test_rollback_compensates_and_reports_what_human_review_protects(
        client, admin, conn, engine_settings, instance):
    results = dream_all(conn, engine_settings, seed(conn, engine_settings, instance))
    team = next(r for r in results if r.partition.kind == "team")
    kept = team.activated_ids[0]
    with conn.transaction():
        ledger.record_decision(conn, instance_key=instance, assertion_id=kept,
                               decision="approve", reviewer_kind="human", reviewer_id="anna",
                               reason_code="confirmed")
    # Every assertion the Dream created, including one that waits for review (a procedure,
    # docs/policy.md C4), not only the activated ones.
    created = {str(r[0]) for r in conn.execute(
        "SELECT id FROM agent_memory_assertions WHERE dream_id = %s", (team.dream_id,))}
    url = f"/internal/memory/dreams/{team.dream_id}/rollback"
    response = client.post(url, headers=admin)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["dreamId"] == str(team.dream_id) and body["status"] == "rolled_back"
    assert set(body["tombstoned"]) == created - {str(kept)}
    assert body["protected"] == [{"kind": "assertion", "id": str(kept),
                                  "reason": "human_review"}]
    assert len(body["proposalsRejected"]) == 1 and body["projectionJobs"] >= 1
    states = dict(conn.execute(
        "SELECT id, status FROM agent_memory_assertions WHERE dream_id = %s",
        (team.dream_id,)).fetchall())
    assert states.pop(kept) == "active"
    assert set(states.values()) == {"tombstoned"}

    again = client.post(url, headers=admin).json()
    assert again["status"] == "already_rolled_back" and again["tombstoned"] == []
    listed = client.get("/internal/memory/dreams", headers=admin).json()["dreams"]
    assert next(d for d in listed if d["id"] == str(team.dream_id))["status"] == "rolled_back"


def test_rollback_of_unknown_malformed_or_foreign_dreams_is_404(client, admin, conn,
                                                               engine_settings, other):
    report = seed(conn, engine_settings, other)
    foreign = run_dream_partition(conn, engine_settings, report.eligible[0].partition,
                                  model="extractive")
    for dream_id in (uuid.uuid4(), "not-a-uuid", foreign.dream_id):
        response = client.post(f"/internal/memory/dreams/{dream_id}/rollback", headers=admin)
        assert_error(response, 404, "not_found")
    status = conn.execute("SELECT status FROM agent_memory_dreams WHERE id = %s",
                          (foreign.dream_id,)).fetchone()[0]
    assert status == "completed"


# --- the real launcher ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_launch_through_the_real_dagster_launcher(server_url, shared_database_url, make_key,
                                                  tmp_path, monkeypatch, instance):
    """POST launches one run of the platform's Dagster instance (storage in its own
    database on the test server; no webserver on the configured port, so the run executes
    in the API process); the run materialises the partition and its dream row names the
    Dagster run id. The run worker reads its settings from the environment, as in a
    deployment, so the environment says what the app's settings say."""
    from dagster import DagsterRunStatus

    from memory_platform.foundation.db.connection import close_process_pools

    env = {"MEMORY_DATABASE_URL": shared_database_url, "MEMORY_EMBEDDING_PROVIDER": "hash",
           "MEMORY_HASH_EMBEDDING_DIMENSIONS": "64", "MEMORY_API_KEY_CACHE_SECONDS": "0",
           "MEMORY_MAINTENANCE_DEFAULT_MODEL": "extractive",
           "MEMORY_DATA_DIR": str(tmp_path / "state"),
           "MEMORY_DAGSTER_DATABASE_NAME": f"dagster_{uuid.uuid4().hex[:12]}",
           "MEMORY_DAGSTER_PORT": str(_free_port())}
    clean_environment(monkeypatch, **env)
    monkeypatch.chdir(tmp_path)                      # no stray .env file
    settings = get_settings()
    admin = bearer(make_key("anna", (ADMIN,), instance=instance))
    try:
        with TestClient(create_app(), raise_server_exceptions=False) as client, \
                psycopg.connect(shared_database_url, autocommit=True) as conn:
            register_vector(conn)
            report = seed(conn, settings, instance)
            key = Partition(instance, "private", "dora").partition_key
            assert key in {p.partition_key for p in report.eligible}
            response = client.post("/internal/memory/dreams", headers=admin,
                                   json={"partition": key, "model": "extractive"})
            assert response.status_code == 202, response.text
            body = response.json()
            assert body["partitions"] == [key] and body["mode"] == "in_process"
            run_id = body["runId"]
            dagster = dagster_instance(settings)
            try:
                deadline = time.monotonic() + 60
                run = dagster.get_run_by_id(run_id)
                while (run is None or not run.is_finished) and time.monotonic() < deadline:
                    time.sleep(0.2)
                    run = dagster.get_run_by_id(run_id)
                assert run is not None and run.status == DagsterRunStatus.SUCCESS
                assert run.tags.get("dagster/partition") == key
            finally:
                dagster.dispose()
            listed = client.get("/internal/memory/dreams", headers=admin).json()["dreams"]
            (dream,) = [d for d in listed if d["dagsterRunId"] == run_id]
            assert dream["partitionKey"] == key and dream["status"] == "completed"
            assert dream["model"] == "extractive" and dream["stats"]["accepted"] >= 3
    finally:
        close_process_pools()
        get_settings.cache_clear()
        drop_database(server_url, env["MEMORY_DAGSTER_DATABASE_NAME"])
