"""Which audience partitions automation should Dream, as plain functions over a connection.

* :func:`plan_new_partitions`: what the partitions sensor adds in one tick (bounded, oldest
  new input first, behind a watermark cursor).
* :func:`plan_daily`: which partitions the daily schedule Dreams, and why every other known
  partition is skipped (the spec's "recent memory/run thresholds", applied to scheduled runs
  only; manual runs skip them, but never the input minimum, which the engine enforces).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg

from memory_platform.features.dreaming.inputs import PartitionSummary, eligible_partitions
from memory_platform.foundation.settings import Settings

__all__ = ["DailyPlan", "NewPartitions", "SKIP_BELOW_MIN_INPUTS", "SKIP_DREAMED_RECENTLY",
           "SKIP_NO_NEW_INPUT", "batches", "keys_digest", "plan_daily",
           "plan_new_partitions", "read_cursor", "write_cursor"]

SKIP_BELOW_MIN_INPUTS = "below_min_inputs"
SKIP_NO_NEW_INPUT = "no_new_input_since_last_dream"
SKIP_DREAMED_RECENTLY = "dreamed_recently"


def batches(keys: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(keys), max(1, size)):
        yield list(keys[start:start + size])


def keys_digest(keys: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:12]


# --- the partitions sensor -----------------------------------------------------------------


def read_cursor(cursor: str | None) -> datetime | None:
    """The newest input time the sensor has seen (None: from the beginning)."""
    if not cursor:
        return None
    value = json.loads(cursor).get("newestInputAt")
    return datetime.fromisoformat(value) if value else None


def write_cursor(watermark: datetime | None) -> str:
    return json.dumps({"newestInputAt": watermark.isoformat() if watermark else None})


@dataclass
class NewPartitions:
    considered: list[PartitionSummary]          # input newer than the cursor, this tick
    new_keys: list[str]                         # not yet a Dagster partition
    watermark: datetime | None                  # the cursor after this tick
    more: bool                                  # more partitions wait for the next tick


def plan_new_partitions(conn: psycopg.Connection, settings: Settings, since: datetime | None,
                        is_known: Callable[[str], bool], limit: int) -> NewPartitions:
    """Eligible partitions whose newest input is after ``since``, oldest first, at most
    ``limit``; the watermark advances to the newest input taken. A group of partitions
    sharing the boundary timestamp is never split (the cursor is strict), unless it alone
    exceeds the limit."""
    found = sorted(eligible_partitions(conn, settings, since=since),
                   key=lambda s: (s.newest_input_at, s.partition_key))
    taken = found[:limit]
    if len(found) > limit:
        boundary = taken[-1].newest_input_at
        if found[limit].newest_input_at == boundary:
            whole = [s for s in taken if s.newest_input_at != boundary]
            taken = whole or [s for s in found if s.newest_input_at == boundary]
    watermark = taken[-1].newest_input_at if taken else since
    return NewPartitions(taken, [s.partition_key for s in taken if not is_known(s.partition_key)],
                         watermark, len(found) > len(taken))


# --- the daily schedule --------------------------------------------------------------------

_LAST_DREAMS = """
    SELECT p.instance_key, p.kind, p.key, d.last_attempt, d.last_success
      FROM unnest(%s::text[], %s::text[], %s::text[]) AS p(instance_key, kind, key)
     CROSS JOIN LATERAL (
        SELECT max(started_at) FILTER (WHERE NOT dry_run) AS last_attempt,
               max(finished_at) FILTER (WHERE NOT dry_run
                                          AND status IN ('completed', 'partial'))
                   AS last_success
          FROM agent_memory_dreams
         WHERE instance_key = p.instance_key
           AND audience_kind = p.kind
           AND audience_key = p.key) d
"""


@dataclass
class DailyPlan:
    due: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)   # reason -> keys

    def skip(self, reason: str, key: str) -> None:
        self.skipped.setdefault(reason, []).append(key)

    def describe(self, examples: int = 3) -> str:
        """One line per skip reason with a few partition keys (tick log, SkipReason)."""
        if not self.skipped:
            return "no audience partition skipped"
        parts = []
        for reason, keys in sorted(self.skipped.items()):
            shown = ", ".join(keys[:examples]) + (", ..." if len(keys) > examples else "")
            parts.append(f"{len(keys)} {reason} ({shown})")
        return "skipped " + "; ".join(parts)

    def as_json(self) -> dict[str, Any]:
        return {"due": len(self.due),
                "skipped": {reason: len(keys) for reason, keys in self.skipped.items()}}


def plan_daily(conn: psycopg.Connection, settings: Settings, *, now: datetime,
               known_keys: Iterable[str] = ()) -> DailyPlan:
    """Due: at least ``dream_min_inputs`` eligible inputs, an input newer than the end of
    the last successful Dream, and no Dream attempt in the last
    ``dream_min_interval_hours``. Every other partition Dagster knows is skipped with its
    reason (below the input minimum, nothing new, dreamed recently)."""
    summaries = eligible_partitions(conn, settings)
    plan = DailyPlan()
    last: dict[tuple[str, str, str], tuple[datetime | None, datetime | None]] = {}
    if summaries:
        columns = list(zip(*[(s.partition.instance_key, s.partition.kind, s.partition.key)
                             for s in summaries], strict=True))
        for instance, kind, key, attempt, success in conn.execute(
                _LAST_DREAMS, [list(c) for c in columns]):
            last[(instance, kind, key)] = (attempt, success)
    interval = timedelta(hours=settings.dream_min_interval_hours)
    for summary in sorted(summaries, key=lambda s: s.partition_key):
        p = summary.partition
        attempt, success = last.get((p.instance_key, p.kind, p.key), (None, None))
        if attempt is not None and now - attempt < interval:
            plan.skip(SKIP_DREAMED_RECENTLY, summary.partition_key)
        elif success is not None and summary.newest_input_at is not None \
                and summary.newest_input_at <= success:
            plan.skip(SKIP_NO_NEW_INPUT, summary.partition_key)
        else:
            plan.due.append(summary.partition_key)
    eligible = {s.partition_key for s in summaries}
    for key in sorted(set(known_keys) - eligible):
        plan.skip(SKIP_BELOW_MIN_INPUTS, key)
    return plan
