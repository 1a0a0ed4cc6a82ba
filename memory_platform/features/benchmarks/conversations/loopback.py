"""The real HTTP API for ``--via api``: ``python -m memory_platform api`` as a subprocess on a
free loopback port, over the caller's database, embedding with the benchmark's provider.

A subprocess rather than an in-process client, so the benchmark goes through what a client
meets: uvicorn, the network stack, the API's own pool and settings. (``bench/load/server.py``
does the same for the load benchmarks; the package cannot import ``bench/``, which needs a
checkout, nor ``api``, which sits above it: this module only starts a command.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from memory_platform.foundation.settings import Settings

START_SECONDS = 90
STOP_SECONDS = 20
REQUEST_TIMEOUT_SECONDS = 120  # the first request of the local model loads it


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(settings: Settings, provider_kind: str) -> dict[str, str]:
    """This process's environment, plus what makes the server use the same database and the
    benchmark's embedding provider whatever its own environment or .env say."""
    env = {**os.environ, "MEMORY_EMBEDDING_PROVIDER": provider_kind,
           "MEMORY_HASH_EMBEDDING_DIMENSIONS": str(settings.hash_embedding_dimensions),
           "MEMORY_LOCAL_EMBEDDING_MODEL": settings.local_embedding_model,
           "MEMORY_DATA_DIR": str(settings.data_dir.resolve()),
           "MEMORY_DATABASE_NAME": settings.database_name}
    if settings.database_url is not None:
        env["MEMORY_DATABASE_URL"] = settings.database_url.get_secret_value()
    return env


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this module started
        proc.wait(timeout=STOP_SECONDS)


def _wait_until_up(proc: subprocess.Popen, base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the API exited ({proc.returncode}); log tail:\n"
                               + log_path.read_text(errors="replace")[-3000:])
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the API did not answer /healthz within {START_SECONDS} s "
                       f"(log: {log_path})")


@contextlib.contextmanager
def loopback_api(settings: Settings, provider_kind: str, log_path: Path) -> Iterator[httpx.Client]:
    """A client of a just-started API (one worker); the server is stopped on exit. Its output
    goes to ``log_path``."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_platform", "api", "--host", "127.0.0.1",
             "--port", str(port), "--workers", "1"],
            env=server_environment(settings, provider_kind), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_until_up(proc, base_url, log_path)
        with httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS) as client:
            yield client
    finally:
        _stop(proc)
