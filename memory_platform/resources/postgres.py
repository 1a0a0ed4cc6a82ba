"""The platform database as a Dagster resource: one connection pool per run process.

A Dagster run (and the code server that evaluates sensors) is one process; its pool is
created on first use and kept for the life of that process, keyed by process id and database
URL, so a forked worker never shares a parent's sockets and two databases (tests) never share
a pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from dagster import ConfigurableResource
from psycopg_pool import ConnectionPool
from pydantic import Field

from memory_platform.db.connection import database_url
from memory_platform.resources.overrides import base_settings, with_overrides
from memory_platform.settings import Settings

__all__ = ["PostgresResource", "close_pools"]

_pools: dict[tuple[int, str], ConnectionPool] = {}
_pools_lock = threading.Lock()


def _configure(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    if conn.execute("SELECT to_regtype('vector') IS NOT NULL").fetchone()[0]:
        register_vector(conn)


def _pool(settings: Settings) -> ConnectionPool:
    url = database_url(settings)
    key = (os.getpid(), url)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            # Autocommit: the domain functions commit their own units of work and must be
            # called outside a transaction (run_dream_partition, process_outbox).
            pool = ConnectionPool(url, min_size=min(settings.pool_min_size, 1),
                                  max_size=settings.pool_max_size,
                                  kwargs={"autocommit": True}, configure=_configure,
                                  open=True, name="memory-platform-dagster")
            _pools[key] = pool
        return pool


def close_pools() -> None:
    """Close this process's pools (tests; a long-lived process that changes databases)."""
    with _pools_lock:
        for (pid, _url), pool in list(_pools.items()):
            if pid == os.getpid():
                pool.close()
        _pools.clear()


class PostgresResource(ConfigurableResource):
    """Autocommit connections to the platform database.

    ``database_url`` unset: ``MEMORY_DATABASE_URL``, else the embedded server of the dev
    profile. Bind it with ``EnvVar("MEMORY_DATABASE_URL")`` so the UI never shows the
    password."""

    database_url: str | None = Field(
        default=None, description="PostgreSQL URL (unset: MEMORY_DATABASE_URL / embedded).")
    pool_max_size: int | None = Field(
        default=None, description="Connections per run process (unset: MEMORY_POOL_MAX_SIZE).")

    def settings(self) -> Settings:
        """The platform settings with this resource's overrides."""
        return with_overrides(base_settings(), database_url=self.database_url,
                              pool_max_size=self.pool_max_size)

    @contextmanager
    def connection(self, settings: Settings | None = None) -> Iterator[psycopg.Connection]:
        with _pool(settings or self.settings()).connection() as conn:
            yield conn
