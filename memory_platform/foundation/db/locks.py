"""Runtime-wide advisory locks whose name more than one layer takes.

The Dreaming lock serialises a Dream, a rollback and an erasure across processes and
machines: a Dream holds it as a session lock for its run (``dreaming.lock``); an erasure takes
it for its one transaction, so no Dream that read the person's memories can write their words
into a Dream row after the erasure committed.
"""

from __future__ import annotations

import psycopg

DREAMING_LOCK = "memory-platform:dreaming"


def try_dreaming_lock_for_transaction(conn: psycopg.Connection) -> bool:
    """Take the Dreaming lock until the current transaction ends; False when a Dream (or
    another holder) has it."""
    return bool(conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))",
                             (DREAMING_LOCK,)).fetchone()[0])
