"""Numbers of session maintenance: the event aggregates behind ``/metrics``, and the
operator status of an instance's sessions.

``agent_session_maintenance_events`` grows by one row per operation per pass, so a scrape
never aggregates the whole table. :class:`EventTotals` keeps running totals per process
and reads only the rows after the last one it counted, in id order through the primary
key, at most ``max_rows`` per batch: a scrape costs the new events, not the history. (A
process that starts catches up over a few scrapes; Prometheus counters start from wherever
a process starts anyway.)

Rows are counted once they are *settled*: written more than ``settle_seconds`` ago. An
identity id is taken at insert but visible at commit, so a scan could see id 11 before id 10
commits and then never go back; every event is written in its own short transaction
(``maintenance._record_event``), and the scan stops at the first recent row, so nothing is
skipped.
"""

from __future__ import annotations

import threading
from copy import deepcopy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from memory_platform.foundation.db.units import commit_if_idle

__all__ = ["OPERATIONS", "OUTCOMES", "EventAggregate", "EventTotals", "OperationStats",
           "aggregate_events", "session_status"]

# The operations of a pass, in its order (the event table's CHECK names the same).
OPERATIONS = ("shared_facts", "memory_flush", "history_compaction")
OUTCOMES = ("completed", "failed", "skipped")

SCAN_ROWS = 50_000          # events read per batch (primary-key range, in id order)
MAX_BATCHES = 4             # batches per refresh: a fresh process catches up over scrapes
SETTLE_SECONDS = 5.0        # events younger than this wait for the next refresh


@dataclass
class OperationStats:
    """One operation's events: counts per outcome, retries, fallbacks, durations."""

    operation: str
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    retries: int = 0
    fallbacks: int = 0
    duration_seconds_total: float = 0.0
    duration_seconds_max: float = 0.0

    @property
    def completed(self) -> int:
        return self.outcomes["completed"]

    @property
    def failed(self) -> int:
        return self.outcomes["failed"]

    @property
    def skipped(self) -> int:
        return self.outcomes["skipped"]

    def merge(self, other: OperationStats) -> None:
        for outcome, count in other.outcomes.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        self.retries += other.retries
        self.fallbacks += other.fallbacks
        self.duration_seconds_total += other.duration_seconds_total
        self.duration_seconds_max = max(self.duration_seconds_max, other.duration_seconds_max)

    def as_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, **self.outcomes, "retries": self.retries,
                "fallbacks": self.fallbacks,
                "durationSecondsTotal": round(self.duration_seconds_total, 6),
                "durationSecondsMax": round(self.duration_seconds_max, 6)}


def _empty() -> dict[str, OperationStats]:
    return {name: OperationStats(name) for name in OPERATIONS}


@dataclass
class EventAggregate:
    """Events with ``after_id < id <= through_id``, per operation."""

    operations: dict[str, OperationStats] = field(default_factory=_empty)
    through_id: int = 0
    rows: int = 0

    def merge(self, other: EventAggregate) -> None:
        for name, stats in other.operations.items():
            self.operations.setdefault(name, OperationStats(name)).merge(stats)
        self.through_id = max(self.through_id, other.through_id)
        self.rows += other.rows


_AGGREGATE = """
WITH scanned AS (
    SELECT id, operation, outcome, retries, fallbacks, duration_ms, created_at
      FROM agent_session_maintenance_events
     WHERE id > %(after)s
     ORDER BY id
     LIMIT %(rows)s
), settled AS (
    SELECT *, bool_or(created_at >= now() - make_interval(secs => %(settle)s))
                  OVER (ORDER BY id) AS too_recent
      FROM scanned
)
SELECT operation, outcome, count(*), sum(retries), sum(fallbacks), sum(duration_ms),
       max(duration_ms), max(id)
  FROM settled
 WHERE NOT too_recent
 GROUP BY operation, outcome
"""


def aggregate_events(conn: psycopg.Connection, *, after_id: int = 0,
                     max_rows: int = SCAN_ROWS,
                     settle_seconds: float = SETTLE_SECONDS) -> EventAggregate:
    """The settled events after ``after_id`` (at most ``max_rows``, in id order), per
    operation and outcome."""
    aggregate = EventAggregate(through_id=after_id)
    rows = conn.execute(_AGGREGATE, {"after": after_id, "rows": max_rows,
                                     "settle": float(settle_seconds)}).fetchall()
    commit_if_idle(conn)
    for operation, outcome, count, retries, fallbacks, total_ms, max_ms, last_id in rows:
        stats = aggregate.operations.setdefault(operation, OperationStats(operation))
        stats.merge(OperationStats(
            operation, {**dict.fromkeys(OUTCOMES, 0), outcome: int(count)},
            int(retries or 0), int(fallbacks or 0), float(total_ms or 0) / 1000.0,
            float(max_ms or 0) / 1000.0))
        aggregate.through_id = max(aggregate.through_id, int(last_id))
        aggregate.rows += int(count)
    return aggregate


class EventTotals:
    """Running totals of every settled event (one object per process). Thread-safe: a
    refresh while another one runs does not wait for it, it answers the last totals."""

    def __init__(self, *, max_rows: int = SCAN_ROWS, max_batches: int = MAX_BATCHES,
                 settle_seconds: float = SETTLE_SECONDS) -> None:
        self.max_rows = max_rows
        self.max_batches = max_batches
        self.settle_seconds = settle_seconds
        self._totals = EventAggregate()
        self._snapshot = EventAggregate()
        self._lock = threading.Lock()

    def refresh(self, conn: psycopg.Connection) -> EventAggregate:
        """Count the events settled since the last refresh; the totals (a copy)."""
        if not self._lock.acquire(blocking=False):
            return self._snapshot
        try:
            for _ in range(self.max_batches):
                batch = aggregate_events(conn, after_id=self._totals.through_id,
                                         max_rows=self.max_rows,
                                         settle_seconds=self.settle_seconds)
                self._totals.merge(batch)
                if batch.rows < self.max_rows:
                    break
            self._snapshot = deepcopy(self._totals)
            return self._snapshot
        finally:
            self._lock.release()


# --- the operator status of an instance's sessions -----------------------------------------


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def session_status(conn: psycopg.Connection, instance_key: str) -> dict[str, Any]:
    """The ``sessions`` section of the operator status: the maintenance queue (due now,
    waiting out a backoff after a failure, the oldest due request's age), the context
    graph's size, and when the last flush and compaction completed."""
    due, waiting, oldest = conn.execute(
        """
        SELECT count(*) FILTER (WHERE maintenance_requested_at <= now()),
               count(*) FILTER (WHERE maintenance_requested_at > now()),
               extract(epoch FROM now() - min(maintenance_requested_at)
                                          FILTER (WHERE maintenance_requested_at <= now()))
          FROM agent_session_state
         WHERE maintenance_requested_at IS NOT NULL
           AND (maintenance_done_at IS NULL
                OR maintenance_requested_at > maintenance_done_at)
           AND instance_key = %s
        """, (instance_key,)).fetchone()
    runs, sessions = conn.execute(
        "SELECT count(*), count(DISTINCT session_key) FROM agent_session_runs"
        " WHERE instance_key = %s", (instance_key,)).fetchone()
    messages = conn.execute("SELECT count(*) FROM agent_context_messages"
                            " WHERE instance_key = %s", (instance_key,)).fetchone()[0]
    summaries = conn.execute("SELECT count(*) FROM agent_context_summaries"
                             " WHERE instance_key = %s", (instance_key,)).fetchone()[0]
    last = dict(conn.execute(
        "SELECT operation, max(created_at) FROM agent_session_maintenance_events"
        " WHERE instance_key = %s AND outcome = 'completed'"
        "   AND operation IN ('memory_flush', 'history_compaction')"
        " GROUP BY operation", (instance_key,)).fetchall())
    commit_if_idle(conn)
    return {
        "due": int(due), "waitingForRetry": int(waiting),
        "oldestDueAgeSeconds": round(float(oldest), 1) if oldest is not None else None,
        "sessions": int(sessions), "runs": int(runs), "messages": int(messages),
        "summaries": int(summaries),
        "lastFlushAt": _iso(last.get("memory_flush")),
        "lastCompactionAt": _iso(last.get("history_compaction")),
    }
