"""Run blocking domain functions (psycopg, sync) off the event loop with a pool connection,
behind admission control.

They run on the app's database threads, one per pool connection (:class:`DatabaseThreads`): a
request never holds a thread while it waits for a connection, and the hop is a plain
executor future, without the capacity limiter, cancel scope and library detection anyio's
``run_sync`` adds per call (its cost is measured in docs/benchmarks.md).

Admission control sheds overload instead of queueing it: past capacity an unbounded queue only
makes every answer late (at 200 reads/s + 50 writes/s on 2 cores the queue grew without bound,
p95 3.6 s). So

* at most ``api_admission_queue`` requests wait for a database thread (default: as many as
  there are threads, so an admitted request waits about one service time at most); one more
  is refused at once (503 ``overloaded`` with ``Retry-After``) without touching the database;
* a request that still waited longer than ``api_admission_wait_ms`` when a thread takes it
  is refused then, before it touches the database (its client has given up, or soon will);
* the thread waits at most ``api_connection_wait_seconds`` for a pool connection (a
  database that is down or restarting answers 503 quickly, never after the pool's 30 s).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.requests import Request

from memory_platform.settings import Settings

T = TypeVar("T")


class Overloaded(Exception):
    """The request was refused by admission control (the API answers 503 ``overloaded``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DatabaseThreads:
    """The database threads (one per pool connection) and the bounded queue in front."""

    def __init__(self, settings: Settings) -> None:
        self.size = settings.pool_max_size
        on = settings.api_admission_control
        self.queue_limit = (settings.api_admission_queue or self.size) if on else None
        self.max_wait = settings.api_admission_wait_ms / 1000 if on else 0.0
        self.connection_wait = settings.api_connection_wait_seconds
        self.executor = ThreadPoolExecutor(max_workers=self.size,
                                           thread_name_prefix="memory-db")
        self._lock = threading.Lock()
        self._busy = 0        # requests on a thread
        self._waiting = 0     # requests admitted, waiting for a thread

    def admit(self) -> float:
        """Admit one request (its enqueue time) or raise :class:`Overloaded`."""
        with self._lock:
            free = self.size - self._busy
            if self.queue_limit is not None and self._waiting >= free + self.queue_limit:
                raise Overloaded("queue_full")
            self._waiting += 1
        return time.monotonic()

    def start(self, admitted_at: float) -> None:
        """On the thread: the request leaves the queue; refused if it waited too long."""
        with self._lock:
            self._waiting -= 1
            if self.max_wait and time.monotonic() - admitted_at > self.max_wait:
                raise Overloaded("waited_too_long")
            self._busy += 1

    def done(self) -> None:
        with self._lock:
            self._busy -= 1

    def shutdown(self) -> None:
        self.executor.shutdown()


async def with_connection(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(conn, *args, **kwargs)`` on a database thread with a pool connection, if
    admission control admits the request (:class:`Overloaded` otherwise).

    The connection is idle when ``fn`` starts (no transaction open), so ``fn`` may be a
    function that commits its own units (``memory_platform.db.units``); whatever ``fn`` leaves
    open is committed when it returns and rolled back when it raises (the pool's connection
    context does both). If the request is cancelled meanwhile, the call still finishes and
    gives its connection back."""
    pool = request.state.pool
    threads: DatabaseThreads = request.state.database_threads
    admitted_at = threads.admit()

    def call() -> T:
        threads.start(admitted_at)
        try:  # from here on the request holds a thread
            with pool.connection(timeout=threads.connection_wait) as conn:
                return fn(conn, *args, **kwargs)
        finally:
            threads.done()

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        threads.executor, functools.partial(context.run, call))
