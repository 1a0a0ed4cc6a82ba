"""/healthz and /readyz over HTTP against the ASGI app and a real database."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql
from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.features.apikeys import create_key
from memory_platform.foundation.settings import Settings
from tests.api.conftest import assert_error, bearer, make_settings, open_client


@pytest.fixture
def client(settings: Settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_healthz_answers_ok_after_checking_the_database(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_is_ready_when_migrations_are_current(client):
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json() == {"status": "ready"}


def test_readyz_is_not_ready_on_an_unmigrated_database(empty_database_url, tmp_path):
    settings = Settings(database_url=empty_database_url, data_dir=tmp_path,
                        _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as test_client:
        response = test_client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["reason"] == "migrations_pending"


def _allow_connections(server_url: str, name: str, allowed: bool) -> None:
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}").format(
                sql.Identifier(name), sql.Literal(allowed))
        )
        if not allowed:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )


def test_healthz_reports_an_unreachable_database(settings, database_url, server_url):
    name = urlsplit(database_url).path.lstrip("/")
    with TestClient(create_app(settings)) as test_client:
        _allow_connections(server_url, name, False)
        try:
            response = test_client.get("/healthz")
        finally:
            _allow_connections(server_url, name, True)
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


def test_unknown_routes_use_the_json_error_shape(client):
    response = client.get("/no/such/route")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


# --- F21: probes answer reason codes, never the exception text ---------------------------
def _leaks(text: str, database_url: str) -> list[str]:
    """Parts of the connection or the migration files an unauthenticated body shows."""
    parts = urlsplit(database_url)
    secrets = [parts.hostname or "", parts.username or "", urlsplit(database_url).path.lstrip("/"),
               "0001_", "db migrate", "psycopg", "connection"]
    return [s for s in secrets if s and s in text]


def test_f21_readyz_names_pending_migrations_by_code_only(empty_database_url, tmp_path, caplog):
    """F21: /readyz answered str(exc): migration names and how to run them, to anyone."""
    settings = Settings(database_url=empty_database_url, data_dir=tmp_path,
                        _env_file=None)  # type: ignore[call-arg]
    with caplog.at_level(logging.WARNING, logger="api.health"), \
            TestClient(create_app(settings)) as test_client:
        response = test_client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "not_ready", "reason": "migrations_pending"}
    assert _leaks(response.text, empty_database_url) == []
    assert "db migrate" in caplog.text  # the details stay in the server log


def test_f21_readyz_and_healthz_hide_why_the_database_is_unreachable(
        settings, database_url, server_url, caplog):
    name = urlsplit(database_url).path.lstrip("/")
    with caplog.at_level(logging.WARNING, logger="api.health"), \
            TestClient(create_app(settings)) as test_client:
        _allow_connections(server_url, name, False)
        try:
            answers = [test_client.get("/readyz"), test_client.get("/healthz")]
        finally:
            _allow_connections(server_url, name, True)
    assert [r.status_code for r in answers] == [503, 503]
    assert answers[0].json() == {"status": "not_ready", "reason": "database_unavailable"}
    assert answers[1].json() == {"status": "unavailable", "reason": "database_unavailable"}
    for response in answers:
        assert _leaks(response.text, database_url) == []
    assert name in caplog.text


def test_f21_readyz_reports_an_edited_migration_by_code(client, database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "not_ready", "reason": "migrations_changed"}


def test_metrics_stay_public_and_hold_no_tenant_data(client, database_url):
    """/metrics is unauthenticated: its labels are methods, route templates and statuses,
    and pool gauges; no instance, user, key, id or query text of any request."""
    tenant = ["acme-secret-instance", "user-zelda", "web:zelda-session", "needle-query-7781"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        _, token = create_key(conn, instance_key=tenant[0], user_id=tenant[1],
                              scopes=("memory:read", "memory:write"))
    headers = {"Authorization": f"Bearer {token}"}
    stored = client.post("/api/v1/memory", headers=headers, json={
        "content": "Zelda prefers the blue deploy window.",
        "context": {"sessionKey": tenant[2]}})
    assert stored.status_code == 201, stored.text
    memory_id = stored.json()["id"]
    client.get("/api/v1/memory", params={"query": tenant[3]}, headers=headers)
    client.get(f"/api/v1/memory/{memory_id}", headers=headers)
    client.get(f"/api/v1/nothing/{tenant[3]}", headers=headers)
    page = client.get("/metrics")
    assert page.status_code == 200
    for value in [*tenant, memory_id, token, token.split("_")[1]]:
        assert value not in page.text
    assert 'route="/api/v1/memory/{memory_id}"' in page.text


# --- F15: a busy pool is a 503 with Retry-After, never a 500 -----------------------------
@pytest.fixture
def one_connection_app(database_url, tmp_path):
    """An app with one pool connection, a short wait for it, and at most one waiter."""
    settings = make_settings(database_url, tmp_path, pool_min_size=1, pool_max_size=1,
                             api_connection_wait_seconds=0.3, pool_max_waiting=1)
    with open_client(settings) as test_client:
        yield test_client


@pytest.fixture
def long_wait_app(database_url, tmp_path):
    """One pool connection, at most one waiter, and a long wait for it (3 s): an answer well
    under that did not wait for the pool."""
    settings = make_settings(database_url, tmp_path, pool_min_size=1, pool_max_size=1,
                             api_connection_wait_seconds=3.0, pool_max_waiting=1)
    with open_client(settings) as test_client:
        yield test_client


def test_f15_a_pool_timeout_is_503_with_retry_after(one_connection_app, make_key):
    headers = bearer(make_key("alice"))
    pool = one_connection_app.app_state["pool"]
    with pool.connection():                       # every connection held by another caller
        response = one_connection_app.get("/api/v1/memory", params={"query": "on-call"},
                                          headers=headers)
    error = assert_error(response, 503, "database_busy")
    assert response.headers["Retry-After"] == "1"
    assert error["details"] == {"retryAfterSeconds": 1}
    assert one_connection_app.get("/api/v1/memory", params={"query": "on-call"},
                                  headers=headers).status_code == 200


def test_f15_a_full_pool_queue_is_503_at_once(long_wait_app, make_key):
    headers = bearer(make_key("alice"))
    pool = long_wait_app.app_state["pool"]
    waiting = threading.Event()

    def wait_in_queue() -> None:
        waiting.set()
        with contextlib.suppress(Exception), pool.connection(timeout=3):
            pass

    with pool.connection():
        waiter = threading.Thread(target=wait_in_queue)
        waiter.start()
        waiting.wait()
        deadline = time.monotonic() + 2
        while pool.get_stats().get("requests_waiting", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        response = long_wait_app.get("/api/v1/memory", params={"query": "on-call"},
                                     headers=headers)
        elapsed = time.monotonic() - started
    waiter.join()
    assert_error(response, 503, "database_busy")
    assert response.headers["Retry-After"] == "1"
    assert elapsed < 1.5  # the pool's wait is 3 s: the full queue answered without waiting


def test_probes_answer_while_every_pool_connection_is_busy(long_wait_app):
    """/healthz and /readyz use a connection of their own: a saturated request pool (here
    its one connection held) neither delays nor fails them."""
    pool = long_wait_app.app_state["pool"]
    with pool.connection():
        started = time.monotonic()
        answers = [long_wait_app.get("/healthz"), long_wait_app.get("/readyz")]
        elapsed = time.monotonic() - started
    assert [r.status_code for r in answers] == [200, 200]
    assert elapsed < 1.5  # the pool's wait is 3 s: no pool connection was asked for
