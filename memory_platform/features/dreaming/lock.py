"""The one runtime-wide Dreaming lock: a PostgreSQL session advisory lock.

Two Dreams (or a Dream and a rollback) never run at once, across processes and machines: the
lock lives in the database, held by the connection that runs the Dream, and PostgreSQL frees
it when that session ends (a crashed worker cannot leave it behind).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from memory_platform.foundation.db.locks import DREAMING_LOCK as LOCK_NAME
from memory_platform.foundation.db.units import commit_if_idle, rollback_if_open
from memory_platform.foundation.errors import DreamLocked


@contextmanager
def dream_lock(conn: psycopg.Connection) -> Iterator[None]:
    """Hold the Dreaming lock on ``conn`` for the block, or raise :class:`DreamLocked`."""
    got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                       (LOCK_NAME,)).fetchone()[0]
    commit_if_idle(conn)
    if not got:
        raise DreamLocked("another Dream is running (the Dreaming advisory lock is held); "
                          "nothing was changed: try again when it has finished")
    try:
        yield
    finally:
        rollback_if_open(conn)
        conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (LOCK_NAME,))
        commit_if_idle(conn)

