"""The embedded server is shared by every process of the platform and survives crashes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_platform.db import embedded

_HOLDER = """
import sys
from pathlib import Path
from memory_platform.db import embedded
info = embedded.ensure_server(Path(sys.argv[1]))
print(info.pid, flush=True)
sys.stdin.readline()
"""


@pytest.fixture(scope="module")
def pgdata(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One initialised data directory for this module; each test leaves the server stopped."""
    path = tmp_path_factory.mktemp("embedded") / "pgdata"
    yield path
    embedded.destroy(path)


class Holder:
    """Another process of the platform holding the server."""

    def __init__(self, pgdata: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(pgdata)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()
        assert line.strip().isdigit(), f"holder failed to start the server: {line!r}"
        self.server_pid = int(line)

    def exit(self) -> None:
        self.proc.communicate("\n", timeout=60)


def _wait_until_stopped(pgdata: Path, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if embedded.read_server_info(pgdata) is None:
            return True
        time.sleep(0.1)
    return False


def test_a_second_process_finds_the_running_server(pgdata):
    holder = Holder(pgdata)
    try:
        info = embedded.ensure_server(pgdata)
        assert info.pid == holder.server_pid
        with psycopg.connect(info.uri()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # This process leaves first: the holder still uses the server, so it keeps running.
        assert embedded.release_server(pgdata) is False
        assert embedded.read_server_info(pgdata) is not None
    finally:
        holder.exit()
    # The last user out stops it.
    assert _wait_until_stopped(pgdata)


def test_the_last_user_stops_the_server(pgdata):
    info = embedded.ensure_server(pgdata)
    assert embedded.read_server_info(pgdata) == info
    assert embedded.release_server(pgdata) is True
    assert embedded.read_server_info(pgdata) is None


def test_a_crashed_user_does_not_keep_the_server_alive(pgdata):
    embedded.ensure_server(pgdata)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    users_dir = pgdata.parent / f".{pgdata.name}.users"
    (users_dir / str(dead.pid)).touch()  # registered, then died without releasing
    assert embedded.release_server(pgdata) is True
    assert embedded.read_server_info(pgdata) is None


def test_a_crashed_servers_stale_lock_is_recovered(pgdata):
    holder = Holder(pgdata)
    os.kill(holder.server_pid, signal.SIGKILL)
    holder.exit()
    assert (pgdata / "postmaster.pid").exists(), "the crash must leave a stale pid file"
    assert embedded.read_server_info(pgdata) is None

    info = embedded.ensure_server(pgdata)
    try:
        assert info.pid != holder.server_pid
        with psycopg.connect(info.uri()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        embedded.release_server(pgdata)
    assert embedded.read_server_info(pgdata) is None


def test_the_uri_names_the_socket_directory_and_port(pgdata):
    info = embedded.ensure_server(pgdata)
    try:
        uri = info.uri("memory")
        assert uri.startswith("postgresql://postgres@/memory?host=")
        assert f"port={info.port}" in uri
    finally:
        embedded.release_server(pgdata)


def test_auto_shared_buffers_is_a_quarter_of_memory_within_bounds(monkeypatch):
    from types import SimpleNamespace

    gib = 1024 ** 3
    for total, expected in ((24 * gib, "6144MB"), (256 * gib, "8192MB"), (gib // 4, "128MB")):
        monkeypatch.setattr(embedded.psutil, "virtual_memory",
                            lambda total=total: SimpleNamespace(total=total))
        assert embedded.auto_shared_buffers() == expected
