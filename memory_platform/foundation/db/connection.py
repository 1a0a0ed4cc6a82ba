"""Where the database is, and the connection pools on it.

``MEMORY_DATABASE_URL`` names an external PostgreSQL (with pgvector). Without it, the
embedded server of the dev profile is started on first use (or found running) and the
platform's database is created on it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from memory_platform.foundation.db import embedded
from memory_platform.foundation.settings import Settings, get_settings

_lock = threading.Lock()
_pools: dict[tuple[int, str, bool], ConnectionPool] = {}


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


def _configure_timeouts(statement_timeout_ms: int, lock_timeout_ms: int
                        ) -> Callable[[psycopg.Connection], None]:
    """Per-connection setup of :func:`_configure` plus session limits: no statement runs
    longer than ``statement_timeout_ms`` and none waits longer than ``lock_timeout_ms`` for a
    lock (0: no limit); PostgreSQL cancels it with ``QueryCanceled`` /
    ``LockNotAvailable``."""

    def configure(conn: psycopg.Connection) -> None:
        conn.execute("SELECT set_config('statement_timeout', %s, false),"
                     " set_config('lock_timeout', %s, false)",
                     (f"{statement_timeout_ms}ms", f"{lock_timeout_ms}ms"))
        _configure(conn)

    return configure


API_RECONNECT_SECONDS = 5.0


def open_pool(settings: Settings, *, autocommit: bool = False,
              min_size: int | None = None, name: str = "memory-platform",
              configure: Callable[[psycopg.Connection], None] = _configure,
              check: Callable[[psycopg.Connection], None] | None = None,
              reconnect_timeout: float = 300.0) -> ConnectionPool:
    """A new pool on the platform database; the caller owns (and closes) it.

    ``autocommit``: for callers of functions that commit their own units of work and must
    be called outside a transaction (``run_dream_partition``, ``process_outbox``).
    ``check``: run on a connection before it is handed out (a broken one is replaced).
    ``reconnect_timeout``: how long the pool keeps retrying a failed connection (with a
    doubling delay) before it gives up on it and opens a new one on the next demand."""
    return ConnectionPool(
        database_url(settings),
        min_size=settings.pool_min_size if min_size is None else min_size,
        max_size=settings.pool_max_size,
        timeout=settings.pool_timeout_seconds,
        max_waiting=settings.pool_max_waiting,
        kwargs={"autocommit": True} if autocommit else None,
        configure=configure,
        check=check,
        reconnect_timeout=reconnect_timeout,
        open=True,
        name=name,
    )


def open_api_pool(settings: Settings) -> ConnectionPool:
    """The HTTP API's pool: every connection limits its statements to
    ``api_statement_timeout_ms`` and its lock waits to ``api_lock_timeout_ms``, so one
    request cannot hold a connection (and the database's CPU) for long. Dagster runs, the CLI
    and bulk imports open pools without these limits.

    Each connection is checked before a request gets it (an empty query, one round trip):
    after a database restart the pool replaces its dead connections instead of failing one
    request per connection. Reconnection attempts give up after
    :data:`API_RECONNECT_SECONDS` (psycopg_pool doubles the delay between attempts without a
    cap, so after a long outage its next attempt could be minutes away); the next request
    then opens a connection at once."""
    return open_pool(settings, name="memory-platform-api",
                     configure=_configure_timeouts(settings.api_statement_timeout_ms,
                                                   settings.api_lock_timeout_ms),
                     check=ConnectionPool.check_connection,
                     reconnect_timeout=API_RECONNECT_SECONDS)


def process_pool(settings: Settings, *, autocommit: bool = False) -> ConnectionPool:
    """The pool of this process for ``settings``' database, opened on first use and kept for
    the life of the process (a Dagster run worker, the code server that evaluates sensors).

    Keyed by process id, database URL and ``autocommit``: a forked worker never shares a
    parent's sockets, and two databases (tests) never share a pool. It opens at most one
    connection up front; the rest come on demand up to ``pool_max_size``."""
    url = database_url(settings)
    key = (os.getpid(), url, autocommit)
    with _lock:
        pool = _pools.get(key)
        if pool is None:
            pool = open_pool(settings, autocommit=autocommit,
                             min_size=min(settings.pool_min_size, 1),
                             name="memory-platform-process")
            _pools[key] = pool
        return pool


def close_process_pools() -> None:
    """Close this process's pools (tests; a long-lived process that changes databases)."""
    with _lock:
        for (pid, _url, _autocommit), pool in list(_pools.items()):
            if pid == os.getpid():
                pool.close()
        _pools.clear()


def connect(settings: Settings | None = None, **kwargs) -> psycopg.Connection:
    """A single connection outside the pool (CLI commands, migrations)."""
    conn = psycopg.connect(database_url(settings), **kwargs)
    _configure(conn)
    return conn
