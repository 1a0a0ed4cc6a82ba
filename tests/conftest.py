"""Real PostgreSQL for every test: one server per test session, one fresh database per test.

The server is the embedded PostgreSQL 18 + pgvector wheel (in a temporary directory), or the
server of ``MEMORY_TEST_DATABASE_URL`` when set (its role needs CREATEDB). The schema is
migrated once into a template database; each test gets a clone (``CREATE DATABASE ...
TEMPLATE``), which costs milliseconds instead of a migration run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql

from memory_platform.foundation.db import embedded, migrations
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import PROJECT_ROOT, Settings

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Admin URL (database ``postgres``) of the test server."""
    external = os.environ.get("MEMORY_TEST_DATABASE_URL")
    if external:
        yield with_database(external, "postgres")
        return
    parent = server_scratch_dir(tmp_path_factory, "pg")
    pgdata = parent / "pgdata"
    info = embedded.ensure_server(pgdata, config=TEST_SERVER_CONFIG)
    try:
        yield info.uri("postgres")
    finally:
        embedded.release_server(pgdata)
        embedded.destroy(pgdata)
        shutil.rmtree(parent, ignore_errors=True)


# A throwaway server: its files on tmpfs where the machine has one with room, its WAL bounded.
# Most tests clone the template database (about 11 MB written); on this machine's disk a clone
# took 40-500 ms (growing as writeback fell behind), on /dev/shm 20-27 ms, and a stopping
# server's checkpoint waited behind the suite's writeback (the lifetime tests' 30 s timeouts).
TEST_SERVER_CONFIG = {"max_wal_size": "256MB", "min_wal_size": "64MB"}
TMPFS = Path("/dev/shm")
TMPFS_NEEDS = 2 * 2**30  # free bytes: a worker's server with its WAL stays far below


def server_scratch_dir(factory: pytest.TempPathFactory, name: str) -> Path:
    """A new directory for a test server's data: on tmpfs when there is one with room (the
    caller removes it), else under pytest's temporary directory."""
    if (TMPFS.is_dir() and os.access(TMPFS, os.W_OK)
            and shutil.disk_usage(TMPFS).free >= TMPFS_NEEDS):
        return Path(tempfile.mkdtemp(prefix=f"memory-platform-test-{name}-", dir=TMPFS))
    return factory.mktemp(name)


def create_database(server_url: str, template: str | None = None) -> str:
    name = f"test_{uuid.uuid4().hex[:16]}"
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        statement += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(statement)
    return name


def drop_database(server_url: str, name: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def template_database(server_url: str) -> Iterator[str]:
    name = create_database(server_url)
    with psycopg.connect(with_database(server_url, name), autocommit=True) as conn:
        migrations.migrate(conn, MIGRATIONS_DIR)
    yield name
    drop_database(server_url, name)


@pytest.fixture
def empty_database_url(server_url: str) -> Iterator[str]:
    """A fresh database without any migration applied."""
    name = create_database(server_url)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture
def database_url(server_url: str, template_database: str) -> Iterator[str]:
    """A fresh, fully migrated database of its own."""
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture(scope="module")
def module_database_url(server_url: str, template_database: str) -> Iterator[str]:
    """One migrated database shared by a test module (its tests keep apart by instance key:
    a fresh database costs about half a second)."""
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture(scope="module")
def db(module_database_url: str) -> Iterator[psycopg.Connection]:
    """Autocommit connection (pgvector registered) to the module's shared database."""
    with psycopg.connect(module_database_url, autocommit=True) as connection:
        register_vector(connection)
        yield connection


@pytest.fixture
def instance() -> str:
    """An instance key no other test uses."""
    return f"inst-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection]:
    """Autocommit connection to the test's migrated database (a failing statement does not
    poison the next one)."""
    with psycopg.connect(database_url, autocommit=True) as connection:
        register_vector(connection)  # as every platform connection has (db/connection.py)
        yield connection


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, data_dir=tmp_path / "state",
                    _env_file=None)  # type: ignore[call-arg]
