"""The API's in-process worker for deferred write vectors (``write_vectors = "deferred"``,
docs/deferred-vectors.md).

One daemon thread drains ``memory_embedding`` outbox jobs in batches
(projection/memory_vectors.py ``drain``): at once when a write of this process signals that
it enqueued one, otherwise every ``POLL_SECONDS`` (jobs of other API processes, retries).
Each wake-up does bounded work (at most ``MAX_BATCHES`` batches of ``BATCH`` jobs); the
Dagster outbox job remains the safety net for jobs no API process is running for. Several
API processes split the jobs (the outbox claims with ``SKIP LOCKED``).
"""

from __future__ import annotations

import logging
import threading

from psycopg_pool import ConnectionPool

from memory_platform.features.memories.vectors import subscribe, unsubscribe
from memory_platform.features.projection.memory_vectors import drain
from memory_platform.foundation.settings import Settings

log = logging.getLogger(__name__)

POLL_SECONDS = 0.2
BATCH = 200
MAX_BATCHES = 10


class VectorWorker:
    def __init__(self, pool: ConnectionPool, settings: Settings) -> None:
        self._pool = pool
        self._settings = settings
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="memory-vector-worker",
                                        daemon=True)

    def start(self) -> VectorWorker:
        subscribe(self._wake)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping = True
        unsubscribe(self._wake)
        self._wake.set()
        self._thread.join(timeout)

    def tick(self) -> int:
        """One bounded pass: jobs applied."""
        done = 0
        with self._pool.connection() as conn:
            for _ in range(MAX_BATCHES):
                claimed = drain(conn, self._settings, BATCH)
                done += claimed
                if claimed < BATCH or self._stopping:
                    break
        return done

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()
            if self._stopping:
                break
            try:
                self.tick()
            except Exception as exc:  # the database is away: try again on the next tick
                log.warning("vector worker: %s", exc)
                self._wake.wait(1.0)
