"""The embedded server is shared by every process of the platform and survives crashes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memory_platform.foundation.db import embedded

_HOLDER = """
import sys
from pathlib import Path
from memory_platform.foundation.db import embedded
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


def test_auto_shared_buffers_is_an_eighth_of_memory_within_bounds(monkeypatch):
    from types import SimpleNamespace

    gib = 1024 ** 3
    for total, expected in ((4 * gib, "512MB"), (24 * gib, "1024MB"), (gib // 4, "128MB")):
        monkeypatch.setattr(embedded.psutil, "virtual_memory",
                            lambda total=total: SimpleNamespace(total=total))
        assert embedded.auto_shared_buffers() == expected


# --- F20: who may connect ---------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching OS users needs root")


def _as_nobody(info: embedded.ServerInfo) -> subprocess.CompletedProcess:
    """psql run by another local user (``nobody``) against the server's socket."""
    return subprocess.run(
        [str(embedded._wheel_bin_dir() / "psql"), "-h", str(info.socket_dir), "-p",
         str(info.port), "-U", "postgres", "-d", "postgres", "-c", "SELECT 1"],
        user="nobody", capture_output=True, text=True, timeout=30, cwd="/")


@pytest.fixture(scope="module")
def long_pgdata(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A data directory whose socket path is too long for sun_path: the socket goes to /tmp."""
    path = tmp_path_factory.mktemp("embedded-long") / ("deep-" * 16) / "pgdata"
    path.parent.mkdir(parents=True)
    yield path
    embedded.destroy(path)


@needs_root
def test_f20_a_long_pgdata_gets_a_fresh_private_socket_dir_others_cannot_enter(long_pgdata):
    """F20: the /tmp socket directory was 0777 and predictable (another user could prepare
    it, and connect as superuser with trust). Now it is a fresh 0700 directory of the
    server's OS user, the socket is 0700, and another local user is refused."""
    import hashlib
    import pwd
    import tempfile

    digest = hashlib.sha256(str(long_pgdata.resolve()).encode()).hexdigest()[:12]
    prepared = Path(tempfile.gettempdir()) / f"memory-platform-pg-{digest}"
    prepared.mkdir(mode=0o777, exist_ok=True)  # what an attacker could have pre-created
    info = embedded.ensure_server(long_pgdata)
    try:
        socket_dir = info.socket_dir
        assert socket_dir != prepared and socket_dir.parent == Path(tempfile.gettempdir())
        mode = os.lstat(socket_dir)
        assert stat.S_IMODE(mode.st_mode) == 0o700
        assert mode.st_uid == pwd.getpwnam(embedded.SERVER_OS_USER).pw_uid
        socket = socket_dir / f".s.PGSQL.{info.port}"
        assert stat.S_IMODE(socket.stat().st_mode) == 0o700
        with psycopg.connect(info.uri()) as conn:  # the platform's own processes still can
            assert conn.execute("SELECT 1").fetchone() == (1,)
        refused = _as_nobody(info)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    finally:
        embedded.release_server(long_pgdata)
        prepared.rmdir()
    assert not socket_dir.exists()  # removed with the server


@needs_root
def test_f20_another_user_cannot_reach_a_socket_in_pgdata(pgdata):
    info = embedded.ensure_server(pgdata)
    try:
        assert info.socket_dir == pgdata
        assert stat.S_IMODE(os.lstat(pgdata).st_mode) == 0o700
        refused = _as_nobody(info)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    finally:
        embedded.release_server(pgdata)


def test_f20_an_old_trust_everything_cluster_is_brought_to_the_rules(pgdata):
    """F20: pg_hba.conf of a cluster made with --auth=trust is rewritten at start: trust only
    on the private socket, never over TCP; the server listens on no TCP address."""
    embedded.ensure_server(pgdata)
    embedded.release_server(pgdata)
    (pgdata / "pg_hba.conf").write_text("local all all trust\nhost all all 0.0.0.0/0 trust\n")

    info = embedded.ensure_server(pgdata)
    try:
        rules = [line.split() for line in (pgdata / "pg_hba.conf").read_text().splitlines()
                 if line.strip() and not line.startswith("#")]
        assert [r[-1] for r in rules if r[0] == "local"] == ["trust"]
        assert {r[-1] for r in rules if r[0] != "local"} == {"scram-sha-256"}
        with psycopg.connect(info.uri()) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
    finally:
        embedded.release_server(pgdata)


def test_f20_tcp_needs_the_generated_password(tmp_path_factory):
    """F20: when a TCP port is asked for, a client needs the superuser's password, kept 0600
    beside pgdata; without it the server refuses."""
    import socket as sockets

    pgdata = tmp_path_factory.mktemp("embedded-tcp") / "pgdata"
    with sockets.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = embedded.EmbeddedServer(pgdata, tcp_port=port)
    try:
        info = server.ensure()
        assert info.tcp_host == "127.0.0.1"
        secret = pgdata.parent / f".{pgdata.name}.password"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        with psycopg.connect(info.uri()) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres",
                            connect_timeout=5).close()
    finally:
        server.release()
        embedded.destroy(pgdata)
