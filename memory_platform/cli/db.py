"""`memory-platform db`: migrations, status, URL, psql, index repair, backup, restore."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from memory_platform.cli.common import PlatformGroup
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def db() -> None:
    """Database: migrations, status, shell, backup and restore."""


def _migrations_connection():
    from memory_platform.foundation.db.connection import connect

    return connect(autocommit=True)


@db.command("migrate")
def db_migrate() -> None:
    """Apply pending migrations (safe to run concurrently; refuses edited migrations)."""
    from memory_platform.foundation.db import migrations

    settings = get_settings()
    with _migrations_connection() as conn:
        applied = migrations.migrate(
            conn,
            settings.migrations_dir,
            progress=lambda m: click.echo(f"applying {m.version:04d}_{m.name} ..."),
        )
    click.echo(f"{len(applied)} migration(s) applied; schema is current.")


@db.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def db_status(as_json: bool) -> None:
    """List every migration with its state, and the pgvector version."""
    from memory_platform.foundation.db import migrations

    settings = get_settings()
    with _migrations_connection() as conn:
        states = migrations.status(conn, settings.migrations_dir)
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
        server = conn.execute("SHOW server_version").fetchone()[0]
    vector = row[0] if row else None
    if as_json:
        click.echo(json.dumps({
            "server_version": server,
            "vector": vector,
            "migrations": [
                {"version": s.version, "name": s.name, "state": s.state,
                 "applied_at": s.applied_at.isoformat() if s.applied_at else None}
                for s in states
            ],
        }, indent=2))
        return
    click.echo(f"PostgreSQL {server}; pgvector {vector or 'not installed (run db migrate)'}")
    for s in states:
        when = s.applied_at.strftime("%Y-%m-%d %H:%M:%S") if s.applied_at else ""
        click.echo(f"  {s.version:04d}  {s.name:<32} {s.state:<12} {when}")
    if any(s.state != "applied" for s in states):
        click.echo("Run `memory-platform db migrate` to apply pending migrations.")


@db.command("url")
def db_url() -> None:
    """Print the database URL (password redacted), e.g. for psql."""
    from memory_platform.foundation.db.connection import database_url
    from memory_platform.foundation.settings import redact_url

    click.echo(redact_url(database_url()))


@db.command("psql", context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def db_psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on the platform database (the embedded server's own psql when embedded).

    Extra arguments go to psql, e.g. `memory-platform db psql -c '\\dx'`."""
    import os
    import shutil
    import subprocess

    from memory_platform.foundation.db import embedded
    from memory_platform.foundation.db.connection import database_url

    settings = get_settings()
    url = database_url(settings)
    psql = (
        str(embedded._wheel_bin_dir() / "psql")
        if settings.database_url is None
        else shutil.which("psql")
    )
    if not psql:
        raise click.ClickException("psql not found on PATH; install the PostgreSQL client")
    target, password = psql_target(url)
    env = {**os.environ, "PGCONNECT_TIMEOUT": "10"}
    if password is not None:
        env["PGPASSWORD"] = password
    sys.exit(subprocess.call([psql, target, *psql_args], env=env))


def psql_target(url: str) -> tuple[str, str | None]:
    """The connection string psql gets on its command line, without the password (a
    process's arguments are readable by every local user), and the password, which goes
    to psql through ``PGPASSWORD`` in its environment."""
    from memory_platform.foundation.db.backup import split_password

    return split_password(url)


@db.command("repair-indexes")
def db_repair_indexes() -> None:
    """Rebuild search indexes an interrupted import left behind.

    A large import swaps the HNSW vector indexes for empty placeholders and drops the GIN
    full-text indexes while it loads, and builds them at the end; a killed import leaves
    them so (search scans instead; /internal/memory/status lists them under "indexes").
    This rebuilds them now (the next import would too); indexes an import is loading right
    now are left to it."""
    from memory_platform.cli.common import platform_connection
    from memory_platform.features.memories.bulk.indexes import broken_indexes, repair_indexes

    settings = get_settings()
    with platform_connection(settings) as conn:
        repaired = repair_indexes(conn, settings)
        left = broken_indexes(conn)
    for name in repaired:
        click.echo(f"rebuilt {name}")
    if left:
        click.echo("still broken (an import is loading them): "
                   + ", ".join(str(b["index"]) for b in left), err=True)
        sys.exit(1)
    click.echo(f"{len(repaired)} index(es) rebuilt; every search index is sound.")


@db.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
def db_backup(file: Path, force: bool) -> None:
    """Write a logical backup of the platform database to FILE.

    FILE is a pg_dump custom-format archive (restore it with `memory-platform db restore`).
    pg_dump reads the database in one snapshot: the backup is consistent while the API and
    Dagster keep writing (it holds what was committed when it began) and blocks no writer.
    The archive appears under FILE only when complete. With the embedded server, it runs the
    embedded wheel's pg_dump; against MEMORY_DATABASE_URL too (pg_dump 18 dumps older
    servers), else the pg_dump on PATH. The password never appears on a command line."""
    from memory_platform.foundation.db.backup import backup
    from memory_platform.foundation.db.connection import database_url

    backup(database_url(get_settings()), file, overwrite=force, progress=click.echo)


@db.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--database", "database", default=None, metavar="NAME",
              help="Restore into database NAME on the configured server (default: the "
                   "platform database).")
@click.option("--create", is_flag=True, help="Create the target database if it is missing.")
@click.option("--force", is_flag=True,
              help="DROP a non-empty target database and restore in its place (its data is "
                   "lost; stop the API and Dagster first).")
def db_restore(file: Path, database: str | None, create: bool, force: bool) -> None:
    """Restore a backup made by `memory-platform db backup` FILE.

    The target database must be empty or missing (--create); a non-empty one is refused
    unless --force. The restore runs in one transaction (a failure leaves the target as it
    was), then checks the applied migrations against this version's and prints the row
    counts of the main tables. A backup of an older version restores too: run
    `memory-platform db migrate` afterwards."""
    from memory_platform.foundation.db.backup import restore
    from memory_platform.foundation.db.connection import server_url, with_database

    settings = get_settings()
    if database is None:
        url = (settings.database_url.get_secret_value() if settings.database_url is not None
               else with_database(server_url(settings), settings.database_name))
    else:
        url = with_database(server_url(settings), database)
    result = restore(url, file, migrations_dir=settings.migrations_dir, create=create,
                     force=force, progress=click.echo)
    click.echo(f"restored into database {result.database}"
               + (" (created)" if result.created else "") + "; rows:")
    for table, count in result.counts.items():
        click.echo(f"  {table:<40} {count}")
    if result.pending_migrations:
        click.echo(f"{len(result.pending_migrations)} migration(s) newer than the backup are "
                   "pending: run `memory-platform db migrate`.")


COMMANDS = (db,)  # collected by memory_platform.cli
