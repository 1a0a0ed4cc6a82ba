"""Admission control (api/threads.py): past capacity the API sheds requests at once with 503
``overloaded`` and ``Retry-After`` instead of queueing them; a request that waited too long
for a database thread is refused before it touches the database; connections the database
dropped (a restart, a failover) are replaced by the pool's check, not answered 500.

The database thread is kept busy by holding the app's only pool connection from the test:
the request on the thread then waits for a connection, so the queue in front is real. The
key is looked up (and cached) before, so authentication needs no connection meanwhile."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from tests.api.conftest import assert_error, bearer, make_settings, open_client, row_counts

QUERY = {"query": "on-call rota"}


@pytest.fixture
def one_thread_app(database_url, tmp_path):
    """One database thread, one admitted waiter, a 0.3 s queue wait, a 5 s connection wait."""
    settings = make_settings(database_url, tmp_path, pool_min_size=1, pool_max_size=1,
                             api_admission_queue=1, api_admission_wait_ms=300,
                             api_connection_wait_seconds=5.0, api_key_cache_seconds=60)
    with open_client(settings) as client:
        yield client


def _wait_until(predicate, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def _threads(client):
    return client.app_state["database_threads"]


def test_a_request_past_the_queue_is_refused_at_once_without_the_database(
        one_thread_app, make_key, database_url):
    client, headers = one_thread_app, bearer(make_key("alice"))
    threads = _threads(client)
    assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
    before = row_counts(database_url)
    with ThreadPoolExecutor(2) as senders:
        with client.app_state["pool"].connection():          # the one connection: held
            on_thread = senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                       headers=headers)
            _wait_until(lambda: threads._busy == 1)
            queued = senders.submit(client.post, "/api/v1/memory",
                                    json={"content": "Queued write."}, headers=headers)
            _wait_until(lambda: threads._waiting == 1)
            started = time.monotonic()
            refused = client.post("/api/v1/memory", json={"content": "Refused write."},
                                  headers=headers)
            elapsed = time.monotonic() - started
            time.sleep(0.4)                      # the queued write waits past its 0.3 s
        first, second = on_thread.result(), queued.result()
    error = assert_error(refused, 503, "overloaded")
    assert refused.headers["Retry-After"] == "1"
    assert error["details"] == {"retryAfterSeconds": 1, "reason": "queue_full"}
    assert elapsed < 0.25, elapsed                            # refused, not queued
    assert first.status_code == 200, first.text
    # the queued write waited past 0.3 s for the thread: refused before the database too
    assert assert_error(second, 503, "overloaded")["details"]["reason"] == "waited_too_long"
    assert row_counts(database_url) == before                 # neither write landed
    assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200


def test_admission_off_queues_instead(database_url, tmp_path, make_key):
    settings = make_settings(database_url, tmp_path, pool_min_size=1, pool_max_size=1,
                             api_admission_control=False, api_connection_wait_seconds=5.0,
                             api_key_cache_seconds=60)
    headers = bearer(make_key("alice"))
    with open_client(settings) as client, ThreadPoolExecutor(3) as senders:
        threads = _threads(client)
        assert client.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
        hold = threading.Event()

        def holder():
            with client.app_state["pool"].connection():
                hold.wait(5)

        held = senders.submit(holder)
        _wait_until(lambda: client.app_state["pool"].get_stats()["pool_available"] == 0)
        answers = [senders.submit(client.get, "/api/v1/memory", params=QUERY,
                                  headers=headers) for _ in range(2)]
        _wait_until(lambda: threads._waiting + threads._busy == 2)
        time.sleep(0.4)                                      # past the default wait limit
        hold.set()
        held.result()
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
