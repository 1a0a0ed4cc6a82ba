"""The platform database as a Dagster resource (one pool per run process)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from dagster import ConfigurableResource

from memory_platform.db.connection import get_pool


class PostgresResource(ConfigurableResource):
    """Connections from the process-wide pool; the URL comes from the platform settings
    (``MEMORY_DATABASE_URL`` or the embedded server)."""

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        with get_pool().connection() as conn:
            yield conn
