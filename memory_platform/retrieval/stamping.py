"""Deferred recall stamps: ``retrieval_count`` / ``last_retrieved_at`` without a write on the
request path.

Each process buffers the ids it returned and flushes them in one UPDATE per interval, so a
burst of searches over the same popular memories costs one write instead of one per request
(and no row-lock queue behind it). A crash loses at most one interval of counts: they are
ranking hints, not ledger facts.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable
from uuid import UUID

log = logging.getLogger(__name__)

_FLUSH = """
    UPDATE agent_memories m
       SET retrieval_count = m.retrieval_count + v.n, last_retrieved_at = now()
      FROM (SELECT unnest(%s::text[]) AS instance_key, unnest(%s::uuid[]) AS id,
                   unnest(%s::int[]) AS n) v
     WHERE m.instance_key = v.instance_key AND m.id = v.id
"""


class RetrievalStamper:
    # A quarter second: the same rows per second as longer intervals, in bursts short enough
    # not to hold up the searches beside them (docs/benchmarks.md).
    def __init__(self, pool, interval_seconds: float = 0.25) -> None:
        self.pool = pool
        self.interval = interval_seconds
        self._pending: Counter[tuple[str, UUID]] = Counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retrieval-stamper", daemon=True)
        self._thread.start()

    def record(self, instance_key: str, memory_ids: Iterable[UUID]) -> None:
        with self._lock:
            self._pending.update((instance_key, i) for i in memory_ids)

    def flush(self) -> int:
        with self._lock:
            batch, self._pending = self._pending, Counter()
        if not batch:
            return 0
        keys = list(batch)
        try:
            with self.pool.connection() as conn:
                conn.execute(_FLUSH, ([k[0] for k in keys], [k[1] for k in keys],
                                      [batch[k] for k in keys]))
        except Exception:
            log.exception("could not flush %d retrieval stamps", len(keys))
            return 0
        return len(keys)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.flush()
