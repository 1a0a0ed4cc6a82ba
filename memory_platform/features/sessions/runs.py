"""The runs of a session, and the conversation context each was said in.

A run is the unit a "turn" is counted in (flush and compaction wait for new completed runs).
Its row keeps the acting user and the room/channel of the request that opened it, so
background work (shared facts, flush, summaries) writes its memories into the audience the
conversation was in, by the same sharing rules as an explicit write, and never wider. It also
keeps whether an agent wrote to it (``agent_written``): then none of its turns is a person's
own statement, and every fact drawn from it waits for review.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from memory_platform.shared.access import AccessContext

_SELECT = sql.SQL(
    "SELECT instance_key, session_key, run_id, run_index, user_id, group_room_id,"
    " channel_thread_key, channel_type, status, item_count, transcript_bytes, prompt_tokens,"
    " context_budget_tokens, shared_facts, created_at, completed_at, agent_written"
    " FROM agent_session_runs WHERE instance_key = %s AND session_key = %s ")


@dataclass(frozen=True)
class SessionRun:
    instance_key: str
    session_key: str
    run_id: str
    run_index: int
    user_id: str | None
    group_room_id: str | None
    channel_thread_key: str | None
    channel_type: str | None
    status: str
    item_count: int
    transcript_bytes: int
    prompt_tokens: int | None
    context_budget_tokens: int | None
    shared_facts: str
    created_at: datetime
    completed_at: datetime | None
    # Written by an agent (an agent key or X-Memory-Writer: agent): its turns are not a
    # person's own statements, so nothing extracted from it is human_direct.
    agent_written: bool = False

    def access(self) -> AccessContext:
        """The context the run was said in: what background writes for it use."""
        return AccessContext(instance_key=self.instance_key, user_id=self.user_id,
                             session_key=self.session_key, group_room_id=self.group_room_id,
                             channel_thread_key=self.channel_thread_key,
                             channel_type=self.channel_type)


def get_run(conn: psycopg.Connection, instance_key: str, session_key: str,
            run_id: str) -> SessionRun | None:
    row = conn.execute(
        _SELECT + sql.SQL("AND run_id = %s"),
        (instance_key, session_key, run_id)).fetchone()
    return SessionRun(*row) if row else None


def completed_runs(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                   after_index: int = -1, limit: int | None = None,
                   newest_first: bool = False) -> list[SessionRun]:
    """Completed runs with ``run_index > after_index``, in run order (or newest first)."""
    order = "DESC" if newest_first else "ASC"
    rows = conn.execute(
        _SELECT + sql.SQL("AND status = 'completed' AND run_index > %s"
                          " ORDER BY run_index {} LIMIT %s").format(sql.SQL(order)),
        (instance_key, session_key, after_index, limit)).fetchall()
    return [SessionRun(*row) for row in rows]


def latest_run(conn: psycopg.Connection, instance_key: str, session_key: str,
               *, completed: bool = True) -> SessionRun | None:
    rows = conn.execute(
        _SELECT + sql.SQL("AND (NOT %s OR status = 'completed')"
                          " ORDER BY run_index DESC LIMIT 1"),
        (instance_key, session_key, completed)).fetchone()
    return SessionRun(*rows) if rows else None
