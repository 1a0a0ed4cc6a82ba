"""Recall stamps: every successful recall counts on each memory it returned
(``retrieval_count``, ``last_retrieved_at``) and is a ``retrieved`` event in
``agent_memory_retrieval_feedback`` (the specification's durable retrieved events, seed:75,
89): which memory (and its assertion), recalled by whom, in which session, how often. One
statement writes both (:data:`_STAMP`).

In the API the stamps are deferred: each process buffers what it returned and flushes it
once per interval (:class:`RetrievalStamper`), so a burst of searches over the same popular
memories costs one write instead of one per request (and no row-lock queue behind it); the
events of one interval are one row per (memory, user, session) with its ``count``. A crash
loses at most one interval of stamps: they are ranking and retention hints, not ledger facts.
Without a stamper (library callers) :func:`stamp_retrieved` writes them at once.

A person's erasure must not be undone by a stamp still in a buffer: an event is not written
for a user whose erasure finished after the recall (the erasure report names the person by
``subject_hash``, sha256 of instance key, NUL, user id: ``maintenance/erasure.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import psycopg

from memory_platform.shared.access import AccessContext

log = logging.getLogger(__name__)

_STAMP = """
WITH recalled AS (
    SELECT *
      FROM unnest(%(instances)s::text[], %(ids)s::uuid[], %(users)s::text[],
                  %(sessions)s::text[], %(counts)s::int[], %(times)s::timestamptz[])
           AS v(instance_key, memory_id, user_id, session_key, n, recalled_at)
), counted AS (
    UPDATE agent_memories m
       SET retrieval_count = m.retrieval_count + t.n, last_retrieved_at = now()
      FROM (SELECT instance_key, memory_id, sum(n)::int AS n
              FROM recalled GROUP BY instance_key, memory_id) t
     WHERE m.instance_key = t.instance_key AND m.id = t.memory_id
    RETURNING m.instance_key, m.id, m.assertion_id
)
INSERT INTO agent_memory_retrieval_feedback
       (instance_key, memory_id, assertion_id, event_type, user_id, session_key, details,
        created_at)
SELECT r.instance_key, r.memory_id, c.assertion_id, 'retrieved', r.user_id, r.session_key,
       jsonb_build_object('count', r.n), r.recalled_at
  FROM recalled r
  JOIN counted c ON c.instance_key = r.instance_key AND c.id = r.memory_id
 WHERE r.user_id IS NULL OR NOT EXISTS (
       SELECT 1 FROM agent_memory_erasures e
        WHERE e.instance_key = r.instance_key
          AND e.subject_hash = encode(sha256(convert_to(r.instance_key, 'UTF8')
                                             || '\\x00'::bytea
                                             || convert_to(r.user_id, 'UTF8')), 'hex')
          AND e.finished_at >= r.recalled_at)
"""


@dataclass(frozen=True)
class _Recall:
    instance_key: str
    memory_id: UUID
    user_id: str | None
    session_key: str | None


def _write(conn: psycopg.Connection, stamps: dict[_Recall, list]) -> None:
    keys = list(stamps)
    conn.execute(_STAMP, {
        "instances": [k.instance_key for k in keys], "ids": [k.memory_id for k in keys],
        "users": [k.user_id for k in keys], "sessions": [k.session_key for k in keys],
        "counts": [stamps[k][0] for k in keys], "times": [stamps[k][1] for k in keys]})


def _recalls(ctx: AccessContext, memory_ids: Iterable[UUID]) -> list[_Recall]:
    return [_Recall(ctx.instance_key, memory_id, ctx.user_id, ctx.session_key)
            for memory_id in memory_ids]


def stamp_retrieved(conn: psycopg.Connection, ctx: AccessContext,
                    memory_ids: Iterable[UUID]) -> None:
    """Stamp one recall of ``memory_ids`` by ``ctx`` at once, in the caller's transaction."""
    now = datetime.now(UTC)
    stamps = {recall: [1, now] for recall in _recalls(ctx, memory_ids)}
    if stamps:
        _write(conn, stamps)


class RetrievalStamper:
    # A quarter second: the same rows per second as longer intervals, in bursts short enough
    # not to hold up the searches beside them (docs/benchmarks.md).
    def __init__(self, pool, interval_seconds: float = 0.25) -> None:
        self.pool = pool
        self.interval = interval_seconds
        self._pending: dict[_Recall, list] = {}     # recall -> [count, first recalled at]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retrieval-stamper", daemon=True)
        self._thread.start()

    def record(self, ctx: AccessContext, memory_ids: Iterable[UUID]) -> None:
        now = datetime.now(UTC)
        with self._lock:
            for recall in _recalls(ctx, memory_ids):
                stamp = self._pending.setdefault(recall, [0, now])
                stamp[0] += 1

    def flush(self) -> int:
        with self._lock:
            batch, self._pending = self._pending, {}
        if not batch:
            return 0
        try:
            with self.pool.connection() as conn:
                _write(conn, batch)
        except Exception:
            log.exception("could not flush %d retrieval stamps", len(batch))
            return 0
        return len(batch)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.flush()
