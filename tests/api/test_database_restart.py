"""PostgreSQL restarted under the API: requests during the outage are answered 503 with
``Retry-After`` within the connection wait (never 500, never a hang), ``/readyz`` says
not ready, and once the server is back the pool recovers by itself: no failed request after
it, no restart of the API.

The test runs its own embedded server (its own data directory and TCP port) so it can stop
and start it; the session's server is never touched."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_platform.foundation.db import embedded, migrations
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import PROJECT_ROOT
from tests.api.conftest import assert_error, bearer, key_maker, make_settings, open_client

QUERY = {"query": "who is on call this week"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[tuple[embedded.EmbeddedServer, str]]:
    """A server of this test's own on a fixed TCP port, with a migrated ``memory`` database."""
    server = embedded.EmbeddedServer(tmp_path / "pgdata", tcp_port=_free_port())
    info = server.ensure()
    admin_url = info.uri("postgres")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE memory")
    url = with_database(admin_url, "memory")
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, PROJECT_ROOT / "migrations")
    try:
        yield server, url
    finally:
        server.release()
        embedded.destroy(server.pgdata)


def test_a_restart_under_the_api_is_503_then_recovers_by_itself(own_server, tmp_path):
    server, url = own_server
    settings = make_settings(url, tmp_path / "state", api_connection_wait_seconds=0.5,
                             pool_min_size=2, pool_max_size=2)
    headers = bearer(key_maker(url)("alice"))
    with open_client(settings) as client:
        stored = client.post("/api/v1/memory", headers=headers,
                             json={"content": "Dana is on call this week."})
        assert stored.status_code == 201, stored.text
        assert client.get("/readyz").status_code == 200

        assert embedded.stop_server(server.pgdata)
        for attempt in range(4):
            started = time.monotonic()
            read = client.get("/api/v1/memory", params=QUERY, headers=headers)
            write = client.post("/api/v1/memory", headers=headers,
                                json={"content": f"Written during the outage {attempt}."})
            elapsed = time.monotonic() - started
            for response in (read, write):
                error = assert_error(response, 503)
                assert error["code"] in ("database_busy", "database_unavailable"), error
                assert response.headers["Retry-After"] == "1"
            assert elapsed < 5.0, elapsed                  # bounded, never the pool's 30 s
        assert client.get("/readyz").status_code == 503

        server.info = None                                  # the handle starts it again
        server.ensure()
        deadline = time.monotonic() + 15
        while client.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, "readyz did not recover"
            time.sleep(0.2)
        # the pool's own retries may still be waiting out their delay: within the
        # reconnect timeout (5 s) the next request opens a connection itself
        while (response := client.get("/api/v1/memory", params=QUERY,
                                      headers=headers)).status_code != 200:
            assert response.status_code == 503, response.text
            assert time.monotonic() < deadline + 10, "the pool did not recover"
            time.sleep(0.2)
        recovered = time.monotonic() - deadline + 15
        print(f"API answering again {recovered:.1f} s after the server came back")
        for _ in range(5):                                  # and stays up
            read = client.get("/api/v1/memory", params=QUERY, headers=headers)
            assert read.status_code == 200, read.text
            assert [r["content"] for r in read.json()["results"]] == \
                ["Dana is on call this week."]
        again = client.post("/api/v1/memory", headers=headers,
                            json={"content": "Dana is on call this week."})
        assert again.status_code == 200 and again.json()["deduplicated"] is True
    with psycopg.connect(url) as conn:
        contents = [r[0] for r in conn.execute("SELECT content FROM agent_memories")]
    assert contents == ["Dana is on call this week."]     # nothing of the outage landed
