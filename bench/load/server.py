"""The API under test as a subprocess, and the CPU it, PostgreSQL and this process use.

Neither depends on the load generator: any benchmark can start the API with ``ApiServer``
and meter a window with ``CpuMeter``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from memory_platform.foundation.settings import PROJECT_ROOT


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _cpu(processes: list[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seconds[proc.pid] = times.user + times.system
    return seconds


class CpuMeter:
    """CPU seconds of the generator, the API process tree and the PostgreSQL server tree
    over a window (processes that exit inside the window are missed: backends live long).

    ``with CpuMeter(api_pid, postgres_pid) as meter: ...`` leaves ``meter.result``:
    ``wall_seconds`` and the cores used by ``generator`` (this process), ``api`` and
    ``postgres`` (None without a PostgreSQL pid)."""

    def __init__(self, api_pid: int | None, postgres_pid: int | None) -> None:
        self.api_pid, self.postgres_pid = api_pid, postgres_pid

    def __enter__(self) -> CpuMeter:
        self.wall = time.perf_counter()
        self.own = time.process_time()
        self.api = _cpu(_tree(self.api_pid))
        self.pg = _cpu(_tree(self.postgres_pid))
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.wall

        def used(before: dict[int, float], after: dict[int, float]) -> float:
            return sum(v - before.get(pid, 0.0) for pid, v in after.items())

        self.result = {
            "wall_seconds": round(wall, 2),
            "generator_cores": round((time.process_time() - self.own) / wall, 3),
            "api_cores": round(used(self.api, _cpu(_tree(self.api_pid))) / wall, 3),
            "postgres_cores": (round(used(self.pg, _cpu(_tree(self.postgres_pid))) / wall, 3)
                               if self.postgres_pid else None),
        }


class ApiServer:
    """``python -m memory_platform api`` as a subprocess on a free loopback port, serving
    ``instance`` from ``database_url`` with hash embeddings of ``dims`` dimensions.

    ``start()`` returns once /healthz answers (and every worker is up); ``stop()`` ends it.
    The server runs at ``niceness`` (not the caller's); its output goes to ``log_path``."""

    def __init__(self, database_url: str, workers: int, dims: int, pool_max_size: int | None,
                 log_path: Path, niceness: int = 0,
                 extra_env: dict[str, str] | None = None, *, instance: str) -> None:
        self.extra_env = extra_env or {}
        self.database_url, self.workers, self.dims = database_url, workers, dims
        self.pool_max_size, self.log_path, self.niceness = pool_max_size, log_path, niceness
        self.instance = instance
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = _free_port()
        env = {**os.environ, "MEMORY_DATABASE_URL": self.database_url,
               "MEMORY_EMBEDDING_PROVIDER": "hash",
               "MEMORY_HASH_EMBEDDING_DIMENSIONS": str(self.dims),
               "MEMORY_INSTANCE_KEY": self.instance}
        if self.pool_max_size:
            env["MEMORY_POOL_MAX_SIZE"] = str(self.pool_max_size)
        env.update(self.extra_env)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_platform", "api", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", str(self.workers)],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=self._reset_priority)
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited ({self.proc.returncode}); log tail:\n"
                                   + self.log_path.read_text()[-3000:])
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    if self.workers <= 1 or len(_tree(self.proc.pid)) > self.workers:
                        return
            time.sleep(0.2)
        raise RuntimeError("the API did not answer /healthz within 90 s")

    def _reset_priority(self) -> None:
        """In the child: the generator's niceness is not the API's."""
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, self.niceness)

    @property
    def pid(self) -> int | None:
        """The server's main process (None before ``start``)."""
        return self.proc.pid if self.proc else None

    def pids(self) -> list[int]:
        return [p.pid for p in _tree(self.pid)]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this class started
            self.proc.wait(timeout=10)

    def ready(self, settle_seconds: float = 30) -> None:
        """An idle server for the next run: the backlog an overloaded run left drained, or
        a restarted server. (The API keeps executing requests whose client gave up: a
        request waiting for a worker thread or a pool connection is not cancelled when the
        client disconnects.)"""
        if self.settle(settle_seconds) >= settle_seconds:
            print(f"   (API still busy after {settle_seconds:g} s: restarting it)", flush=True)
            self.stop()
            self.start()
            self.settle(settle_seconds)

    def settle(self, timeout: float = 60) -> float:
        """Wait until /healthz answers fast three times in a row (requests an earlier
        overloaded run left queued have drained). Answers the seconds waited."""
        started = time.monotonic()
        fast = 0
        with httpx.Client(base_url=self.base_url, timeout=5) as client:
            while time.monotonic() - started < timeout and fast < 3:
                t0 = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    client.get("/healthz")
                fast = fast + 1 if time.perf_counter() - t0 < 0.05 else 0
                time.sleep(0.2)
        return time.monotonic() - started
