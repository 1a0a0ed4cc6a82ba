"""The API killed with SIGKILL in the middle of writes: no partial rows (every memory that
exists is whole: its source, its chunks, its assertion with evidence), and a client that
retries the same content after the restart gets it stored exactly once (created if the kill
beat the commit, deduplicated if it did not).

The API is the real ``memory-platform api`` process (uvicorn) on a free loopback port,
against the test's own database; writes come from a thread pool over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg

from tests.api.conftest import READ, WRITE, key_maker

WRITES = 48


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_api(database_url: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    env.update(MEMORY_DATABASE_URL=database_url, MEMORY_DATA_DIR=str(data_dir),
               MEMORY_EMBEDDING_PROVIDER="hash", MEMORY_API_DREAM_LAUNCHER="",
               MEMORY_API_ROLLBACK_RECORDER="")
    proc = subprocess.Popen([sys.executable, "-m", "memory_platform", "api", "--host",
                             "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the API did not start: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.2)


def _content(n: int) -> str:
    return f"Deployment note {n}: the canary for service {n % 7} runs in zone {n % 3}."


def _whole(conn: psycopg.Connection) -> dict[str, int]:
    """Counts of memories and of memories missing a piece (all must be 0)."""
    row = conn.execute("""
        SELECT count(*),
               count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM agent_memory_sources s
                                                   WHERE s.id = m.source_id)),
               count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM agent_memory_chunks c
                                                   WHERE c.memory_id = m.id)),
               count(*) FILTER (WHERE m.assertion_id IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM agent_memory_assertion_evidence e
                    WHERE e.assertion_id = m.assertion_id))
          FROM agent_memories m""").fetchone()
    return {"memories": row[0], "no_source": row[1], "no_chunks": row[2],
            "no_evidence": row[3]}


def test_a_sigkilled_api_leaves_no_partial_rows_and_retries_deduplicate(database_url,
                                                                        tmp_path):
    token = key_maker(database_url)("alice", (READ, WRITE))
    headers = {"Authorization": f"Bearer {token}"}
    proc, url = _start_api(database_url, tmp_path / "state")
    answered: dict[int, int] = {}

    def write(n: int) -> None:
        try:
            response = httpx.post(f"{url}/api/v1/memory", headers=headers, timeout=10,
                                  json={"content": _content(n), "visibility": "team"})
            answered[n] = response.status_code
        except httpx.HTTPError:
            pass                                   # the kill cut it off: the client retries

    try:
        with ThreadPoolExecutor(8) as senders:
            futures = [senders.submit(write, n) for n in range(WRITES)]
            deadline = time.monotonic() + 60
            while len(answered) < WRITES // 4:     # kill once writes are well under way
                assert time.monotonic() < deadline, "writes did not get going"
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            for future in futures:
                future.result()
    finally:
        proc.kill()
        proc.wait(10)
    unanswered = [n for n in range(WRITES) if n not in answered]
    assert unanswered, "the kill came too late to cut any write off"

    with psycopg.connect(database_url) as conn:
        after_kill = _whole(conn)
    assert after_kill["no_source"] == after_kill["no_chunks"] == 0
    assert after_kill["no_evidence"] == 0
    assert WRITES // 4 <= after_kill["memories"] <= WRITES

    proc, url = _start_api(database_url, tmp_path / "state")
    try:
        retried = {}
        for n in range(WRITES):                     # every client retries what it sent
            response = httpx.post(f"{url}/api/v1/memory", headers=headers, timeout=10,
                                  json={"content": _content(n), "visibility": "team"})
            assert response.status_code in (200, 201), response.text
            retried[n] = response.json()["deduplicated"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
    assert all(retried[n] for n, status in answered.items() if status == 201)
    with psycopg.connect(database_url) as conn:
        final = _whole(conn)
        contents = [r[0] for r in conn.execute("SELECT content FROM agent_memories")]
    assert final == {"memories": WRITES, "no_source": 0, "no_chunks": 0, "no_evidence": 0}
    assert sorted(contents) == sorted(_content(n) for n in range(WRITES))
    print(f"killed with {len(answered)} of {WRITES} writes answered, "
          f"{after_kill['memories']} stored whole, {sum(not d for d in retried.values())} "
          "created by the retries")
