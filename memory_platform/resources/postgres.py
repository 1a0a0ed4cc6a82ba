"""The platform database as a Dagster resource: autocommit connections from the process pool
(:func:`memory_platform.foundation.db.connection.process_pool`), one per run process or code
server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from dagster import ConfigurableResource
from pydantic import Field

from memory_platform.foundation.db.connection import process_pool
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.resources.overrides import with_overrides


class PostgresResource(ConfigurableResource):
    """Autocommit connections to the platform database (the domain functions a step calls
    commit their own units and must be called outside a transaction).

    ``database_url`` unset: ``MEMORY_DATABASE_URL``, else the embedded server of the dev
    profile. Bind it with ``EnvVar("MEMORY_DATABASE_URL")`` so the UI never shows the
    password."""

    database_url: str | None = Field(
        default=None, description="PostgreSQL URL (unset: MEMORY_DATABASE_URL / embedded).")
    pool_max_size: int | None = Field(
        default=None, description="Connections per run process (unset: MEMORY_POOL_MAX_SIZE).")

    def settings(self) -> Settings:
        """The platform settings with this resource's overrides."""
        return with_overrides(get_settings(), database_url=self.database_url,
                              pool_max_size=self.pool_max_size)

    @contextmanager
    def connection(self, settings: Settings | None = None) -> Iterator[psycopg.Connection]:
        pool = process_pool(settings or self.settings(), autocommit=True)
        with pool.connection() as conn:
            yield conn
