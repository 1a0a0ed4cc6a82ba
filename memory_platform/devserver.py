"""``memory-platform dev``: the whole platform on one machine, stopped by one Ctrl-C.

Order of life: database (embedded or external) -> migrations -> DAGSTER_HOME -> Dagster
(``dagster dev``: webserver + daemon) and the API as child processes -> wait until both
ports answer -> supervise. On SIGINT/SIGTERM (or when a child dies) the children are stopped
first, each as a whole process group, then this process releases the embedded server, which
stops it when no other process of the platform still uses it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import click

from memory_platform.db import embedded, migrations
from memory_platform.db.connection import connect, start_embedded
from memory_platform.orchestration.home import prepare_dagster_home
from memory_platform.settings import PROJECT_ROOT, Settings

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_GRACE_SECONDS = 20


def _echo(message: str) -> None:
    click.echo(f"[dev] {message}", err=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def _start(name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
    _echo(f"starting {name}: {' '.join(args)}")
    # Own session and process group: the supervisor decides the shutdown order.
    return subprocess.Popen(args, env=env, cwd=PROJECT_ROOT, start_new_session=True)


def _stop(children: dict[str, subprocess.Popen]) -> None:
    for name, proc in children.items():
        if proc.poll() is None:
            _echo(f"stopping {name}")
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + _GRACE_SECONDS
    for name, proc in children.items():
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _echo(f"{name} did not stop in {_GRACE_SECONDS}s; killing it")
        try:  # stragglers of the group (e.g. run workers) go too
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_dev(settings: Settings, with_dagster: bool = True) -> int:
    started = time.monotonic()
    data_dir = settings.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)

    stop_requested: list[int] = []

    def request_stop(signum, _frame) -> None:
        stop_requested.append(signum)

    for sig in _STOP_SIGNALS:
        signal.signal(sig, request_stop)

    if settings.database_url is None:
        info = start_embedded(settings)
        _echo(f"embedded PostgreSQL ready (pid {info.pid}, data {settings.pgdata})")
    with connect(settings, autocommit=True) as conn:
        applied = migrations.migrate(conn, settings.migrations_dir,
                                     progress=lambda m: _echo(f"migrating {m.path.name}"))
    _echo(f"schema current ({len(applied)} migration(s) applied now)")

    env = {**os.environ, "MEMORY_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    if settings.embedded_pgdata is not None:
        env["MEMORY_EMBEDDED_PGDATA"] = str(settings.pgdata)
    children: dict[str, subprocess.Popen] = {}
    bin_dir = Path(sys.executable).parent
    try:
        urls = {"api": f"http://{settings.api_host}:{settings.api_port}/healthz"}
        children["api"] = _start("api", [sys.executable, "-m", "memory_platform", "api"], env)
        if with_dagster:
            env["DAGSTER_HOME"] = str(prepare_dagster_home(settings))
            children["dagster"] = _start(
                "dagster",
                [str(bin_dir / "dagster"), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
                 "-h", "127.0.0.1", "-p", str(settings.dagster_port)],
                env,
            )
            urls["dagster"] = f"http://127.0.0.1:{settings.dagster_port}/server_info"

        pending = dict(urls)
        while not stop_requested:
            for name, proc in children.items():
                if proc.poll() is not None:
                    _echo(f"{name} exited with status {proc.returncode}; stopping everything")
                    return proc.returncode or 1
            for name in [n for n, url in pending.items() if _answers(url)]:
                del pending[name]
                if not pending:
                    _echo(f"ready in {time.monotonic() - started:.1f}s: "
                          f"API http://{settings.api_host}:{settings.api_port} "
                          + (f"| Dagster UI http://127.0.0.1:{settings.dagster_port} "
                             if with_dagster else "")
                          + "(Ctrl-C stops everything)")
            time.sleep(0.25)
        _echo(f"received {signal.Signals(stop_requested[0]).name}; shutting down")
        return 0
    finally:
        _stop(children)
        if settings.database_url is None and embedded.release_server(settings.pgdata):
            _echo("embedded PostgreSQL stopped")
        _echo("bye")
