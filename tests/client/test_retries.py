"""The retry rule against the real API's own 503: a server that may receive one body at a time
(``api_body_readers_max=1``) while a slow client holds that slot, so the next write is
refused ``503 overloaded`` with ``Retry-After: 1`` before anything is done.

A write the server deduplicates (a memory write) waits the Retry-After and succeeds on its
second attempt; a correction (not idempotent) is never sent twice; a dead port is a
connection error. Attempts are counted by the real transport the client sends through.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import anyio
import httpx
import pytest

from memory_platform.client import (
    AsyncMemoryClient,
    MemoryClient,
    MemoryConnectionError,
    RetryPolicy,
    Unavailable,
)
from tests.client.conftest import READ, WRITE, live_settings
from tests.support.live_server import LiveServer, free_port

USER = "rory"


class CountingTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return super().handle_request(request)


class AsyncCountingTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(f"{request.method} {request.url.path}")
        return await super().handle_async_request(request)


@pytest.fixture(scope="module")
def one_body_api(module_database_url: str,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = live_settings(module_database_url, tmp_path_factory.mktemp("one-body"),
                             api_body_readers_max=1)
    with LiveServer(settings) as server:
        yield server


def hold_the_body_slot(url: str, token: str, seconds: float) -> threading.Thread:
    """A client that sends a write's headers and a little of its body, then nothing, for
    ``seconds``: it holds the server's one body slot until it hangs up."""
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall((f"POST /api/v1/memory HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                  f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                  "Content-Length: 100\r\n\r\n{\"content\": ").encode())
    _until_the_slot_is_held(url, token)
    closer = threading.Timer(seconds, sock.close)
    closer.start()
    return closer


def _until_the_slot_is_held(url: str, token: str, within: float = 10.0) -> None:
    """Wait until the server refuses another body (503): the slow client holds the slot. The
    probe's body is not JSON, so a probe let in changes nothing (400)."""
    deadline = time.monotonic() + within
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}",
                                             "Content-Type": "application/json"}) as http:
        while time.monotonic() < deadline:
            if http.post("/api/v1/memory", content=b"{").status_code == 503:
                return
            time.sleep(0.02)
    raise AssertionError("the slow client never held the body slot")


def test_a_deduplicated_write_waits_the_retry_after_and_succeeds(one_body_api, keys):
    token = keys(USER, (READ, WRITE))
    transport = CountingTransport()
    with MemoryClient(one_body_api.url, token, transport=transport) as client:
        hold_the_body_slot(one_body_api.url, token, seconds=0.5)
        started = time.monotonic()
        stored = client.store("Rory waters the office plants on Fridays.")
        waited = time.monotonic() - started
    assert stored.id and transport.sent == ["POST /api/v1/memory"] * 2
    assert waited >= 0.9                 # the server's Retry-After: 1, not an instant retry


def test_a_correction_is_never_sent_twice(one_body_api, keys):
    token = keys(USER, (READ, WRITE))
    transport = CountingTransport()
    with MemoryClient(one_body_api.url, token, transport=transport) as client:
        memory = client.store("Rory's desk is by the window.")
        closer = hold_the_body_slot(one_body_api.url, token, seconds=1.0)
        with pytest.raises(Unavailable) as refused:
            client.correct(memory.id, "Rory's desk is by the door.")
        closer.join()
    assert refused.value.code == "overloaded" and refused.value.retry_after == 1.0
    assert transport.sent.count(f"POST /api/v1/memory/{memory.id}/correction") == 1


def test_the_async_client_retries_the_same_way(one_body_api, keys):
    token = keys(USER, (READ, WRITE))
    transport = AsyncCountingTransport()

    async def main() -> str:
        async with AsyncMemoryClient(one_body_api.url, token, transport=transport) as client:
            hold_the_body_slot(one_body_api.url, token, seconds=0.5)
            return (await client.store("Rory books the meeting room on Mondays.")).id

    assert anyio.run(main)
    assert transport.sent == ["POST /api/v1/memory"] * 2


def test_no_answer_is_a_connection_error_after_the_retries():
    transport = CountingTransport()
    dead = f"http://127.0.0.1:{free_port()}"
    policy = RetryPolicy(attempts=3, backoff=0.01)
    with MemoryClient(dead, "mp_x", transport=transport, retry=policy) as client:
        with pytest.raises(MemoryConnectionError):
            client.search("anything")                 # a read: tried three times
        with pytest.raises(MemoryConnectionError):
            client.correct("00000000-0000-0000-0000-000000000000", "x")   # once
    assert transport.sent.count("GET /api/v1/memory") == 3
    assert len(transport.sent) == 4


def test_every_call_has_a_timeout(live_api, keys):
    with MemoryClient(live_api.url, keys(USER, (READ,)), timeout=0.000_001) as client, \
            pytest.raises(MemoryConnectionError, match="Timeout"):
        client.search("anything")
