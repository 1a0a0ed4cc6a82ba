"""Admission control (api/admission.py, api/threads.py): past the cap on requests in flight
the API sheds requests at once with 503 ``overloaded`` and ``Retry-After`` instead of queueing
them; a request that waited too long for a database thread is refused before it touches the
database; connections the database dropped (a restart, a failover) are replaced by the pool's
check, not answered 500.

The database thread is kept busy by holding the app's only pool connection from the test:
the request on the thread then waits for a connection, so the queue in front is real. The
key is looked up (and cached) before, so authentication needs no connection meanwhile."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg

from tests.api.conftest import assert_error, bearer, make_settings, open_client, row_counts

QUERY = {"query": "on-call rota"}


def _app(database_url, tmp_path, **overrides):
    """One database thread, a 5 s connection wait, keys cached (looked up once)."""
    return open_client(make_settings(database_url, tmp_path, pool_min_size=1, pool_max_size=1,
                                     api_connection_wait_seconds=5.0, api_key_cache_seconds=60,
                                     **overrides))


def _wait_until(predicate, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def _threads(client):
    return client.app_state["database_threads"]


def test_a_request_past_the_in_flight_cap_is_refused_at_once(database_url, tmp_path,
                                                              make_key):
    headers = bearer(make_key("alice"))
    before = row_counts(database_url)
    with _app(database_url, tmp_path, api_admission_max_in_flight=2,
              api_admission_wait_ms=0) as client, ThreadPoolExecutor(2) as senders:
        threads = _threads(client)
        assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
        with client.app_state["pool"].connection():          # the one connection: held
            on_thread = senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                       headers=headers)
            queued = senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                    headers=headers)
            _wait_until(lambda: threads.busy == 1 and threads.waiting == 1)
            started = time.monotonic()
            refused = client.post("/api/v1/memory", json={"content": "Refused write."},
                                  headers=headers)
            elapsed = time.monotonic() - started
            assert client.get("/healthz").status_code == 200   # probes are never refused
            static = client.get("/inspector/static/inspector.css")
            assert static.status_code == 200                    # nor the pages' files
            assert client.get("/docs/assets/docs.js").status_code == 200
        answers = [on_thread.result(), queued.result()]
    error = assert_error(refused, 503, "overloaded")
    assert refused.headers["Retry-After"] == "1"
    assert error["details"] == {"retryAfterSeconds": 1, "reason": "in_flight"}
    assert elapsed < 0.25, elapsed                            # refused, not queued
    assert [a.status_code for a in answers] == [200, 200]     # the admitted ones were served
    assert row_counts(database_url) == before


def test_a_request_that_waited_too_long_for_a_thread_never_reaches_the_database(
        database_url, tmp_path, make_key):
    headers = bearer(make_key("alice"))
    before = row_counts(database_url)
    with _app(database_url, tmp_path, api_admission_wait_ms=300,
              api_admission_max_in_flight=4) as client, \
            ThreadPoolExecutor(2) as senders:
        threads = _threads(client)
        assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
        with client.app_state["pool"].connection():
            on_thread = senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                       headers=headers)
            _wait_until(lambda: threads.busy == 1)
            queued = senders.submit(client.post, "/api/v1/memory",
                                    json={"content": "Queued write."}, headers=headers)
            _wait_until(lambda: threads.waiting == 1)
            time.sleep(0.4)                                    # past the 0.3 s bound
        first, second = on_thread.result(), queued.result()
    assert first.status_code == 200, first.text
    assert assert_error(second, 503, "overloaded")["details"]["reason"] == "waited_too_long"
    assert row_counts(database_url) == before                 # the write never landed


def test_admission_off_queues_instead(database_url, tmp_path, make_key):
    headers = bearer(make_key("alice"))
    with _app(database_url, tmp_path, api_admission_control=False,
              api_admission_max_in_flight=1, api_admission_wait_ms=1) as client, \
            ThreadPoolExecutor(2) as senders:
        threads = _threads(client)
        assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
        with client.app_state["pool"].connection():
            answers = [senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                      headers=headers) for _ in range(2)]
            _wait_until(lambda: threads.busy == 1 and threads.waiting == 1)
            time.sleep(0.1)
        assert [a.result().status_code for a in answers] == [200, 200]


def test_connections_the_database_dropped_are_replaced_not_failed(client, make_key,
                                                                 database_url):
    headers = bearer(make_key("alice"))
    assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
    name = psycopg.conninfo.conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(database_url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()", (name,)).fetchone()[0]
    assert killed >= 1
    for _ in range(3):
        response = client.get("/api/v1/memory", params=QUERY, headers=headers)
        assert response.status_code == 200, response.text
