"""``agent_session_state``: a session's maintenance state and its queue.

``state_json`` holds one section per operation, as the specification names them:
``memoryFlush`` (lastFlushedAt, lastFlushedRunCount, lastMemoryId, lastBytesWritten, skip
reasons, last budget check) and ``compaction`` (compactedThroughSeq, passes, fallbacks, the
last outcome). :func:`merge_section` updates one section without touching the others.

The queue: an append or a run completion calls :func:`request_maintenance` (it sets
``maintenance_requested_at``). :func:`due_sessions` lists the due sessions, oldest request
first; a pass holds the session's advisory lock (:func:`try_lock_session`, one pass per
session at a time across processes) and records the time it *started* as
``maintenance_done_at`` (:func:`finish_pass`), so every request that arrived during the pass
keeps the session due: the requests that piled up collapse into one trailing pass.

A pass with a failed operation retries later without hammering a broken provider:
:func:`retry_later` moves ``maintenance_requested_at`` into the future (a backoff), and a
request is only due once its time has come. A new request never pulls a backoff earlier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

FLUSH_SECTION = "memoryFlush"
COMPACTION_SECTION = "compaction"


@dataclass(frozen=True)
class DueSession:
    instance_key: str
    session_key: str
    requested_at: datetime


def ensure_state(conn: psycopg.Connection, instance_key: str, session_key: str,
                 user_id: str | None) -> None:
    """The session's state row (its ``user_id`` is the user who first used the session)."""
    conn.execute(
        "INSERT INTO agent_session_state (instance_key, session_key, user_id)"
        " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (instance_key, session_key, user_id))


def request_maintenance(conn: psycopg.Connection, instance_key: str, session_key: str,
                        user_id: str | None) -> None:
    """Mark the session due for a background pass (in the caller's transaction)."""
    conn.execute(
        "INSERT INTO agent_session_state (instance_key, session_key, user_id,"
        "                                 maintenance_requested_at)"
        " VALUES (%s, %s, %s, clock_timestamp())"
        " ON CONFLICT (instance_key, session_key)"
        " DO UPDATE SET maintenance_requested_at ="
        "   GREATEST(agent_session_state.maintenance_requested_at, clock_timestamp())",
        (instance_key, session_key, user_id))


def due_sessions(conn: psycopg.Connection, limit: int,
                 instance_key: str | None = None) -> list[DueSession]:
    """Sessions with a request newer than their last pass whose time has come (a backoff
    keeps a failing session out until then), oldest request first."""
    rows = conn.execute(
        "SELECT instance_key, session_key, maintenance_requested_at FROM agent_session_state"
        " WHERE maintenance_requested_at IS NOT NULL"
        "   AND (maintenance_done_at IS NULL"
        "        OR maintenance_requested_at > maintenance_done_at)"
        "   AND maintenance_requested_at <= now()"
        "   AND (%s::text IS NULL OR instance_key = %s::text)"
        " ORDER BY maintenance_requested_at LIMIT %s",
        (instance_key, instance_key, limit)).fetchall()
    return [DueSession(*row) for row in rows]


def is_due(conn: psycopg.Connection, instance_key: str, session_key: str) -> bool:
    """Whether the session is due now (checked again under its lock: another process may
    have done the pass since the session was listed)."""
    row = conn.execute(
        "SELECT 1 FROM agent_session_state"
        " WHERE instance_key = %s AND session_key = %s"
        "   AND maintenance_requested_at IS NOT NULL"
        "   AND (maintenance_done_at IS NULL"
        "        OR maintenance_requested_at > maintenance_done_at)"
        "   AND maintenance_requested_at <= now()",
        (instance_key, session_key)).fetchone()
    return row is not None


def _lock_key(instance_key: str, session_key: str) -> str:
    return f"session-maintenance:{instance_key}:{session_key}"


def try_lock_session(conn: psycopg.Connection, instance_key: str, session_key: str) -> bool:
    """Take the session's maintenance lock (session-level, on this connection) if free."""
    return bool(conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                             (_lock_key(instance_key, session_key),)).fetchone()[0])


def unlock_session(conn: psycopg.Connection, instance_key: str, session_key: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))",
                 (_lock_key(instance_key, session_key),))


def start_pass(conn: psycopg.Connection, instance_key: str, session_key: str) -> datetime:
    """The time a pass starts (the database clock): :func:`finish_pass` records it."""
    return conn.execute("SELECT clock_timestamp()").fetchone()[0]


def finish_pass(conn: psycopg.Connection, instance_key: str, session_key: str,
                started_at: datetime) -> None:
    conn.execute(
        "UPDATE agent_session_state SET maintenance_done_at = %s"
        " WHERE instance_key = %s AND session_key = %s",
        (started_at, instance_key, session_key))


def retry_later(conn: psycopg.Connection, instance_key: str, session_key: str,
                delay_seconds: float) -> datetime | None:
    """Keep the session due, but not before ``delay_seconds`` from now (after a failed
    operation); a later request already recorded stays. Returns the time it is due again
    (None: the session has no state row)."""
    row = conn.execute(
        "UPDATE agent_session_state SET maintenance_requested_at ="
        "   GREATEST(maintenance_requested_at,"
        "            clock_timestamp() + make_interval(secs => %s))"
        " WHERE instance_key = %s AND session_key = %s"
        " RETURNING maintenance_requested_at",
        (float(delay_seconds), instance_key, session_key)).fetchone()
    return row[0] if row else None


def read_state(conn: psycopg.Connection, instance_key: str, session_key: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT state_json FROM agent_session_state WHERE instance_key = %s AND session_key = %s",
        (instance_key, session_key)).fetchone()
    return dict(row[0]) if row else {}


def read_section(conn: psycopg.Connection, instance_key: str, session_key: str,
                 section: str) -> dict[str, Any]:
    return dict(read_state(conn, instance_key, session_key).get(section) or {})


def merge_section(conn: psycopg.Connection, instance_key: str, session_key: str,
                  section: str, values: Mapping[str, Any]) -> None:
    """Merge ``values`` into one section of ``state_json`` (other sections untouched)."""
    conn.execute(
        "INSERT INTO agent_session_state (instance_key, session_key, state_json)"
        " VALUES (%(i)s, %(s)s, jsonb_build_object(%(section)s::text, %(values)s::jsonb))"
        " ON CONFLICT (instance_key, session_key) DO UPDATE SET state_json ="
        "   agent_session_state.state_json || jsonb_build_object(%(section)s::text,"
        "     COALESCE(agent_session_state.state_json -> %(section)s, '{}'::jsonb)"
        "     || %(values)s::jsonb)",
        {"i": instance_key, "s": session_key, "section": section, "values": Jsonb(dict(values))})
