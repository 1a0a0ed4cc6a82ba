"""``memory-platform dev``: the whole platform on one machine, stopped by one Ctrl-C.

Order of life: the data directory's lock (one ``dev`` per data directory: a second one is
refused, naming the first, and starts nothing; :mod:`memory_platform.devlock`) -> a check
that the API and Dagster ports are free (else it says which one is taken, how to choose
another, and starts nothing) -> database (embedded or external) ->
migrations -> DAGSTER_HOME -> Dagster (``dagster dev``: webserver + daemon) and the API as
child processes -> wait until both ports answer -> supervise. On SIGINT/SIGTERM (or when a
child dies) the children are stopped first, each as a whole process group, then this process
releases the embedded server, which stops it when no other process of the platform still
uses it, and last the data directory's lock.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import click

from memory_platform.devlock import DataDirInUse, DataDirLock, claim_data_dir
from memory_platform.foundation.db import embedded, migrations
from memory_platform.foundation.db.connection import connect, start_embedded
from memory_platform.foundation.settings import PROJECT_ROOT, Settings
from memory_platform.orchestration.home import prepare_dagster_home

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


@dataclass(frozen=True)
class ServicePort:
    """A port ``memory-platform dev`` binds, and the setting that chooses it."""

    service: str
    host: str
    number: int
    setting: str
    probe_path: str
    answer_key: str  # a JSON field the service's answer at probe_path always has

    @property
    def probe_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.number}{self.probe_path}"


def service_ports(settings: Settings, with_dagster: bool = True) -> list[ServicePort]:
    """The ports a ``memory-platform dev`` with these settings would bind."""
    ports = [ServicePort("API", settings.api_host, settings.api_port, "MEMORY_API_PORT",
                         "/healthz", "status")]
    if with_dagster:
        ports.append(ServicePort("Dagster UI", "127.0.0.1", settings.dagster_port,
                                 "MEMORY_DAGSTER_PORT", "/server_info", "dagster_version"))
    return ports


def port_is_free(host: str, port: int) -> bool:
    """Whether no other server listens on ``host:port`` now (bound the way uvicorn binds:
    SO_REUSEADDR, so a closing connection does not count as taken). Other bind errors (an
    unknown host, a privileged port) count as free: the server itself reports them."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.create_server((host, port), family=family):
            return True
    except OSError as exc:
        return exc.errno != errno.EADDRINUSE


def _next_free_port(host: str, after: int, avoid: set[int]) -> int | None:
    for candidate in range(after + 1, min(after + 100, 65535) + 1):
        if candidate not in avoid and port_is_free(host, candidate):
            return candidate
    return None


def _json_answer(url: str) -> dict | None:
    """The JSON body ``url`` answers with (whatever its HTTP status), or None."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            body = response.read()
    except urllib.error.HTTPError as error:
        body = error.read()
    except OSError:
        return None
    try:
        answer = json.loads(body)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def _platform_answers(port: ServicePort) -> bool:
    """Whether what listens on ``port`` answers like the platform's service of that port."""
    return port.answer_key in (_json_answer(port.probe_url) or {})


def _taken_line(port: ServicePort, platform_answers: bool) -> str:
    where = f"the {port.service} port {port.host}:{port.number} ({port.setting}) is taken"
    if platform_answers:
        return f"{where}: a memory-platform {port.service} answers {port.probe_url}"
    return f"{where} by another program"


def _free_choices(taken: list[ServicePort], avoid: set[int]) -> str:
    """``SETTING=port`` for each taken port: the next free one above it."""
    choices = []
    for port in taken:
        free = _next_free_port(port.host, port.number, avoid)
        if free is not None:
            avoid.add(free)
        choices.append(f"{port.setting}={free or '<a free port>'}")
    return " ".join(choices)


def port_conflicts(settings: Settings, with_dagster: bool = True) -> list[str]:
    """Why ``memory-platform dev`` cannot start now, one line each: every taken port, whether
    a running platform seems to hold it, and the environment that chooses free ones. Empty
    when every port is free."""
    ports = service_ports(settings, with_dagster)
    taken = [port for port in ports if not port_is_free(port.host, port.number)]
    if not taken:
        return []
    recognised = {port: _platform_answers(port) for port in taken}
    lines = [_taken_line(port, platform) for port, platform in recognised.items()]
    if any(recognised.values()):
        lines.append("another `memory-platform dev` (or `api`) seems to be running: use it, "
                     "stop it (Ctrl-C in its terminal), or start this one on other ports:")
    else:
        lines.append("stop the program that holds it, or start this one on other ports:")
    lines.append(f"  {_free_choices(taken, {port.number for port in ports})} make dev"
                 "   (the same variables work for `memory-platform dev` and in .env)")
    lines.append("nothing was started")
    return lines


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


def service_urls(settings: Settings, with_dagster: bool = True) -> dict[str, str]:
    """The URLs a person opens, as the ready line names them."""
    urls = {"API": f"http://{settings.api_host}:{settings.api_port}"}
    if with_dagster:
        urls["Dagster UI"] = f"http://127.0.0.1:{settings.dagster_port}"
    return urls


def data_dir_in_use_lines(refusal: DataDirInUse) -> list[str]:
    """Why this ``dev`` does not start: which platform already runs on the data directory."""
    pid = refusal.holder.pid
    stop = "Ctrl-C in its terminal" + (f", or kill {pid}" if pid else "")
    return [f"the data directory {refusal.data_dir} is in use by another "
            f"`memory-platform dev`: {refusal.holder.describe()}",
            f"use that one, stop it ({stop}), or start this one on another data directory "
            "(MEMORY_DATA_DIR=<dir> make dev)",
            "nothing was started"]


def _claim(settings: Settings, data_dir: Path, with_dagster: bool) -> DataDirLock | None:
    try:
        return claim_data_dir(data_dir, service_urls(settings, with_dagster))
    except DataDirInUse as refusal:
        for line in data_dir_in_use_lines(refusal):
            _echo(line)
        return None


def run_dev(settings: Settings, with_dagster: bool = True) -> int:
    """Run the platform until a stop signal or a child's exit; answer the exit status.
    Refuses (status 1, nothing started) when another ``dev`` runs on the same data
    directory or a port it would bind is taken."""
    started = time.monotonic()
    data_dir = settings.data_dir.resolve()
    lock = _claim(settings, data_dir, with_dagster)
    if lock is None:
        return 1
    with lock:
        return _run_locked(settings, data_dir, with_dagster, started)


def _run_locked(settings: Settings, data_dir: Path, with_dagster: bool,
                started: float) -> int:
    conflicts = port_conflicts(settings, with_dagster)
    if conflicts:
        for line in conflicts:
            _echo(line)
        return 1

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
                    shown = " | ".join(f"{service} {url}" for service, url
                                       in service_urls(settings, with_dagster).items())
                    _echo(f"ready in {time.monotonic() - started:.1f}s: {shown} "
                          "(Ctrl-C stops everything)")
            time.sleep(0.25)
        _echo(f"received {signal.Signals(stop_requested[0]).name}; shutting down")
        return 0
    finally:
        _stop(children)
        if settings.database_url is None and embedded.release_server(settings.pgdata):
            _echo("embedded PostgreSQL stopped")
        _echo("bye")
