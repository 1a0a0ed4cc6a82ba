"""Where the database is, and the one connection pool of this process.

``MEMORY_DATABASE_URL`` names an external PostgreSQL (with pgvector). Without it, the
embedded server of the dev profile is started on first use (or found running) and the
platform's database is created on it.
"""

from __future__ import annotations

import os
import threading
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from memory_platform.db import embedded
from memory_platform.settings import Settings, get_settings

_lock = threading.Lock()
_pool: ConnectionPool | None = None
_pool_pid: int | None = None


def database_identity(conn: psycopg.Connection) -> tuple:
    """Which database ``conn`` talks to: the key of per-process caches of database facts."""
    info = conn.info
    return (info.host, info.port, info.dbname)


def with_database(url: str, database: str) -> str:
    """The same server URL pointing at another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def server_url(settings: Settings) -> str:
    """URL of the maintenance database (``postgres``) of the configured server."""
    if settings.database_url is not None:
        return with_database(settings.database_url.get_secret_value(), "postgres")
    return start_embedded(settings).uri("postgres")


def start_embedded(settings: Settings) -> embedded.ServerInfo:
    """Start (or find running) the embedded server of ``settings.pgdata`` with its settings."""
    shared_buffers = settings.embedded_shared_buffers
    if shared_buffers == "auto":
        shared_buffers = embedded.auto_shared_buffers()
    config = {"shared_buffers": shared_buffers,
              "maintenance_work_mem": settings.index_build_maintenance_work_mem}
    return embedded.ensure_server(settings.pgdata, config=config)


def ensure_database(settings: Settings, database: str) -> str:
    """Create ``database`` on the configured server if missing; answer its URL.

    On an external server the database must exist already unless the role may create it."""
    if settings.database_url is not None and database == settings.database_name:
        return settings.database_url.get_secret_value()
    admin_url = server_url(settings)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            except psycopg.errors.DuplicateDatabase:
                pass  # a concurrent starter won the race
    return with_database(admin_url, database)


def database_url(settings: Settings | None = None) -> str:
    """URL of the platform's database, creating it on the embedded server when needed."""
    settings = settings or get_settings()
    return ensure_database(settings, settings.database_name)


def _configure(conn: psycopg.Connection) -> None:
    """Per-connection setup: pgvector's types once the extension exists (after migrate)."""
    from pgvector.psycopg import register_vector

    if conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()[0]:
        register_vector(conn)
    conn.commit()


def open_pool(settings: Settings) -> ConnectionPool:
    """A new pool on the platform database; the caller owns (and closes) it."""
    return ConnectionPool(
        database_url(settings),
        min_size=settings.pool_min_size,
        max_size=settings.pool_max_size,
        configure=_configure,
        open=True,
        name="memory-platform",
    )


def get_pool(settings: Settings | None = None) -> ConnectionPool:
    """The process-wide pool (re-created after a fork, never shared across processes)."""
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = open_pool(settings or get_settings())
            _pool_pid = os.getpid()
        return _pool


def close_pool() -> None:
    global _pool
    with _lock:
        if _pool is not None and _pool_pid == os.getpid():
            _pool.close()
        _pool = None


def connect(settings: Settings | None = None, **kwargs) -> psycopg.Connection:
    """A single connection outside the pool (CLI commands, migrations)."""
    conn = psycopg.connect(database_url(settings), **kwargs)
    _configure(conn)
    return conn
