"""Slow request bodies (security review of 7c85f33, finding 2): connections that trickle a
body cannot take the API away from key holders.

Before, eight connections sending a sign-in form one byte at a time held every admission
slot (twice the pool size) and every key holder got 503 ``overloaded``. Now a body is
received on a body slot, not an answer slot, within a total deadline (408), sign-in has its
own small budget, and logout looks at its cookie before it reads anything.

A real uvicorn on loopback and raw sockets: the ASGI test transport sends a body at once."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.api.conftest import READ, WRITE, key_maker, make_settings, row_counts
from tests.faults.live import closed_by_peer, open_request, read_answer
from tests.support.live_server import LiveServer

POOL = 2                                   # the in-flight cap is twice this: 4
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
QUERY = {"query": "on-call rota"}


def _settings(database_url, tmp_path, **overrides):
    return make_settings(database_url, tmp_path / "state", pool_min_size=1,
                         pool_max_size=POOL, **overrides)


class Trickle:
    """Keeps sending one body byte per connection every ``every`` seconds."""

    def __init__(self, socks, every: float = 0.5) -> None:
        self.socks, self.every = socks, every
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every):
            for sock in self.socks:
                try:
                    sock.sendall(b"x")
                except OSError:
                    pass

    def __enter__(self) -> Trickle:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()
        for sock in self.socks:
            sock.close()


def test_twice_the_pool_of_slow_sign_ins_do_not_make_key_holders_searches_503(
        database_url, tmp_path):
    headers = {"Authorization": f"Bearer {key_maker(database_url)('alice', (READ, WRITE))}"}
    settings = _settings(database_url, tmp_path, api_body_read_timeout_seconds=30)
    with LiveServer(settings) as server, httpx.Client(base_url=server.url) as http:
        assert http.get("/api/v1/memory", params=QUERY, headers=headers).status_code == 200
        slow = [open_request(server.port, "POST", "/inspector/login", length=4000,
                             headers=FORM, start=b"api_key=") for _ in range(2 * POOL)]
        with Trickle(slow):
            time.sleep(0.5)                                   # all of them are reading
            statuses = []
            for _ in range(12):
                statuses.append(http.get("/api/v1/memory", params=QUERY,
                                         headers=headers).status_code)
                time.sleep(0.1)
            # Sign-in has a budget of its own (4): one more sign-in is refused at once.
            started = time.monotonic()
            extra = http.post("/inspector/login", data={"api_key": "x"})
            refused_in = time.monotonic() - started
        assert statuses == [200] * 12, statuses
        assert extra.status_code == 503 and refused_in < 1.0
        assert extra.json()["error"]["details"]["reason"] == "sign_in"
        assert http.get("/healthz").status_code == 200


def test_a_body_slower_than_the_deadline_gets_408_and_changes_nothing(database_url,
                                                                       tmp_path):
    token = key_maker(database_url)("alice", (READ, WRITE))
    before = row_counts(database_url)
    settings = _settings(database_url, tmp_path, api_body_read_timeout_seconds=1.0)
    with LiveServer(settings) as server:
        sock = open_request(server.port, "POST", "/api/v1/memory", length=200,
                            headers={"Authorization": f"Bearer {token}",
                                     "Content-Type": "application/json"},
                            start=b'{"content": "A slow')
        with Trickle([sock], every=0.2):
            started = time.monotonic()
            answer = read_answer(sock, timeout=10)
            elapsed = time.monotonic() - started
            closed = closed_by_peer(sock)
        # The form of sign-in has the same deadline.
        login = open_request(server.port, "POST", "/inspector/login", length=400,
                             headers=FORM, start=b"api_key=")
        login_answer = read_answer(login, timeout=10)
        login.close()
    assert answer.status == 408, answer
    error = answer.json()["error"]
    assert error["code"] == "body_timeout" and error["details"] == {"timeoutSeconds": 1.0}
    assert 0.9 < elapsed < 3.0, elapsed
    assert closed, "the rest of the body is never read: the connection is closed"
    assert login_answer.status == 408
    assert row_counts(database_url) == before


@pytest.mark.parametrize("cookie", [None, "mp_inspector=" + "A" * 43], ids=["none", "forged"])
def test_logout_without_a_live_session_is_refused_before_its_body_is_read(
        database_url, tmp_path, cookie):
    settings = _settings(database_url, tmp_path, api_body_read_timeout_seconds=30)
    with LiveServer(settings) as server:
        headers = {**FORM, **({"Cookie": cookie} if cookie else {})}
        sock = open_request(server.port, "POST", "/inspector/logout", length=1000,
                            headers=headers)                  # not one body byte
        started = time.monotonic()
        answer = read_answer(sock, timeout=10)
        elapsed = time.monotonic() - started
        sock.close()
    assert answer.status == 303 and answer.headers["location"] == "/inspector/login"
    assert elapsed < 2.0, elapsed                            # not after the 30 s deadline


def test_one_client_receives_only_its_share_of_bodies(database_url, tmp_path):
    token = key_maker(database_url)("alice", (READ, WRITE))
    settings = _settings(database_url, tmp_path, api_body_read_timeout_seconds=30,
                         api_body_readers_per_client=2)
    json_headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with LiveServer(settings) as server, httpx.Client(base_url=server.url) as http:
        slow = [open_request(server.port, "POST", "/api/v1/memory", length=200,
                             headers=json_headers, start=b"{") for _ in range(2)]
        with Trickle(slow):
            time.sleep(0.5)
            third = http.post("/api/v1/memory", json={"content": "A third body."},
                              headers={"Authorization": f"Bearer {token}"})
            search = http.get("/api/v1/memory", params=QUERY,
                              headers={"Authorization": f"Bearer {token}"})
    assert third.status_code == 429 and third.json()["error"]["code"] == "too_many_bodies"
    assert third.headers["retry-after"] == "1"
    assert search.status_code == 200                          # a search needs no body
