"""Numbered plain-SQL migrations, applied in order, never edited once applied.

Files are ``migrations/NNNN_name.sql``. Each pending file runs in its own transaction
together with its ``schema_migrations`` row, so a failing file leaves nothing behind. A
session-level advisory lock serialises concurrent starters (API replicas, Dagster processes,
CLI): the second waits, then finds nothing left to do. A file whose checksum differs from
the applied one stops everything: the database no longer matches the code's history.

Why hand-written: the contract (psycopg 3, plain SQL files, checksum refusal, advisory
lock) is ~100 lines; yoyo-migrations keeps its own tables and has no checksum refusal, and
Alembic wants SQLAlchemy and Python revision files.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

# pg_advisory_lock key: the first 8 bytes of sha256("memory-platform:migrations").
LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory-platform:migrations").digest()[:8], "big",
                          signed=True)
_FILE_PATTERN = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")

_CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


class MigrationError(RuntimeError):
    """The migrations cannot be applied as they are."""


class ChecksumMismatch(MigrationError):
    """An applied migration file was edited afterwards."""


class PendingMigrations(MigrationError):
    """The database is behind the code: run ``memory-platform db migrate``."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class MigrationState:
    version: int
    name: str
    state: str  # applied | pending | changed | missing-file
    applied_at: datetime | None


def discover(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations directory not found: {directory}")
    found: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = _FILE_PATTERN.match(path.name)
        if not match:
            raise MigrationError(f"{path.name}: migration files are named NNNN_lower_snake.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"two migrations share version {version:04d}")
        found[version] = Migration(version, match.group(2), path)
    return [found[v] for v in sorted(found)]


def _applied(conn: psycopg.Connection) -> dict[int, tuple[str, str, datetime]]:
    exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not exists:
        return {}
    rows = conn.execute("SELECT version, name, checksum, applied_at FROM schema_migrations")
    return {v: (name, checksum, at) for v, name, checksum, at in rows}


def status(conn: psycopg.Connection, directory: Path) -> list[MigrationState]:
    applied = _applied(conn)
    states = []
    for migration in discover(directory):
        row = applied.pop(migration.version, None)
        if row is None:
            states.append(MigrationState(migration.version, migration.name, "pending", None))
        else:
            state = "applied" if row[1] == migration.checksum else "changed"
            states.append(MigrationState(migration.version, migration.name, state, row[2]))
    for version, (name, _, at) in sorted(applied.items()):
        states.append(MigrationState(version, name, "missing-file", at))
    return states


def verify_checksums(conn: psycopg.Connection, directory: Path) -> None:
    changed = [s for s in status(conn, directory) if s.state in ("changed", "missing-file")]
    if changed:
        listing = ", ".join(f"{s.version:04d}_{s.name} ({s.state})" for s in changed)
        raise ChecksumMismatch(
            f"applied migrations no longer match their files: {listing}. Applied migrations "
            "are never edited; restore the file and add a new migration instead."
        )


def ensure_current(conn: psycopg.Connection, directory: Path) -> None:
    """Refuse to serve from a database whose schema is not exactly the code's."""
    verify_checksums(conn, directory)
    pending = [s for s in status(conn, directory) if s.state == "pending"]
    if pending:
        raise PendingMigrations(
            f"{len(pending)} migration(s) pending (first: {pending[0].version:04d}_"
            f"{pending[0].name}); run `memory-platform db migrate`"
        )


def migrate(conn: psycopg.Connection, directory: Path, progress=None) -> list[Migration]:
    """Apply every pending migration; answer those applied by this call.

    ``conn`` must be in autocommit mode: each file gets its own transaction, and the
    advisory lock is held by the session across them."""
    if not conn.autocommit:
        raise MigrationError("migrate() needs an autocommit connection")
    migrations = discover(directory)
    conn.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
    try:
        conn.execute(_CREATE_TABLE)
        verify_checksums(conn, directory)
        done = _applied(conn)
        applied_now = []
        for migration in migrations:
            if migration.version in done:
                continue
            if progress:
                progress(migration)
            with conn.transaction():
                try:
                    conn.execute(migration.sql)
                except psycopg.Error as exc:
                    raise MigrationError(
                        f"{migration.path.name} failed: {exc.diag.message_primary or exc}"
                    ) from exc
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, migration.checksum),
                )
            applied_now.append(migration)
        return applied_now
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))
