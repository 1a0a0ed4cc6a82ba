"""``agent_memory_dreams`` rows: one per partition execution, from ``running`` to its end.

The row is written (and committed) with the exact model before generation starts, so a
crash mid-generation leaves evidence of what ran; :func:`reconcile_stale_dreams` turns such
rows into ``failed`` with a diagnostic once they are older than ``dream_stale_minutes``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.settings import Settings

Trigger = Literal["scheduled", "sensor", "manual", "backfill", "system"]
TRIGGERS: tuple[str, ...] = get_args(Trigger)
FINAL_STATUSES = ("completed", "partial", "skipped", "failed")


def start_dream(
    conn: psycopg.Connection,
    partition: Partition,
    *,
    model: str | None,
    trigger: Trigger,
    dry_run: bool,
    orchestrator_run_id: str | None,
    stats: dict[str, Any],
) -> UUID:
    return conn.execute(
        """
        INSERT INTO agent_memory_dreams
               (instance_key, audience_kind, audience_key, partition_key, status,
                trigger_kind, model, dry_run, stats_json, dagster_run_id)
        VALUES (%s, %s, %s, %s, 'running', %s, %s, %s, %s, %s)
        RETURNING id
        """,
        (partition.instance_key, partition.kind, partition.key, partition.partition_key,
         trigger, model, dry_run, Jsonb(stats), orchestrator_run_id),
    ).fetchone()[0]


def heartbeat(conn: psycopg.Connection, dream_id: UUID) -> None:
    conn.execute("UPDATE agent_memory_dreams SET heartbeat_at = now() WHERE id = %s",
                 (dream_id,))


def finish_dream(
    conn: psycopg.Connection,
    dream_id: UUID,
    status: str,
    *,
    stats: dict[str, Any],
    diagnostics: list[dict[str, Any]],
    proposals: dict[str, Any] | None = None,
    error: str | None = None,
) -> None:
    if status not in FINAL_STATUSES:
        raise ValueError(f"a dream finishes as one of {FINAL_STATUSES}, not {status!r}")
    conn.execute(
        """
        UPDATE agent_memory_dreams
           SET status = %s, stats_json = %s, diagnostics = %s,
               proposals_json = coalesce(%s, proposals_json), error = %s,
               finished_at = now(), heartbeat_at = now()
         WHERE id = %s AND status = 'running'
        """,
        (status, Jsonb(stats), Jsonb(diagnostics),
         Jsonb(proposals) if proposals is not None else None, error, dream_id),
    )


def record_finished_dream(
    conn: psycopg.Connection,
    partition: Partition,
    status: str,
    *,
    model: str | None,
    trigger: Trigger,
    dry_run: bool,
    orchestrator_run_id: str | None,
    stats: dict[str, Any],
    diagnostics: list[dict[str, Any]],
    error: str | None = None,
) -> UUID:
    """A row for an execution that ended before generation (too few inputs, no model)."""
    dream_id = start_dream(conn, partition, model=model, trigger=trigger, dry_run=dry_run,
                           orchestrator_run_id=orchestrator_run_id, stats=stats)
    finish_dream(conn, dream_id, status, stats=stats, diagnostics=diagnostics, error=error)
    return dream_id


def reconcile_stale_dreams(conn: psycopg.Connection, settings: Settings) -> int:
    """Fail ``running`` rows without a sign of life for ``dream_stale_minutes`` (a worker
    or provider restart); answer how many. The bounded phase timeout is far shorter than the
    window, so a live generation is never reclaimed."""
    rows = conn.execute(
        """
        UPDATE agent_memory_dreams
           SET status = 'failed', finished_at = now(),
               error = 'stale running dream reconciled',
               diagnostics = diagnostics || jsonb_build_array(jsonb_build_object(
                   'code', 'stale_running_dream', 'phase', 'reconcile',
                   'message', 'no progress for ' || %s || ' minutes; the worker or the '
                              'provider process probably restarted',
                   'startedAt', started_at, 'lastHeartbeatAt', heartbeat_at))
         WHERE status = 'running'
           AND heartbeat_at < now() - make_interval(mins => %s)
        RETURNING id
        """,
        (settings.dream_stale_minutes, settings.dream_stale_minutes),
    ).fetchall()
    if not conn.autocommit:
        conn.commit()
    return len(rows)


def get_dream(conn: psycopg.Connection, dream_id: UUID) -> dict[str, Any] | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM agent_memory_dreams WHERE id = %s",
                           (dream_id,)).fetchone()


_LISTED = """
    SELECT id, instance_key, audience_kind, audience_key, partition_key, status,
           trigger_kind, model, dry_run, stats_json, diagnostics, dagster_run_id,
           error, started_at, heartbeat_at, finished_at, rolled_back_at
      FROM agent_memory_dreams
"""


def list_dreams(conn: psycopg.Connection, *, instance_key: str | None = None,
                limit: int) -> list[dict[str, Any]]:
    """The most recent dream rows (newest first), optionally of one instance."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            _LISTED + """
             WHERE %s::text IS NULL OR instance_key = %s::text
             ORDER BY started_at DESC, id
             LIMIT %s
            """,
            (instance_key, instance_key, max(1, min(limit, 1000))),
        ).fetchall()


def dreams_of_run(conn: psycopg.Connection, run_id: str) -> list[dict[str, Any]]:
    """The dream rows one orchestrator run wrote, in the order it started them (the columns
    of :func:`list_dreams`)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(_LISTED + " WHERE dagster_run_id = %s ORDER BY started_at, id",
                           (run_id,)).fetchall()
