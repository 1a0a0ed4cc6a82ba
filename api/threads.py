"""Run blocking domain functions (psycopg, sync) off the event loop with a pool connection.

They run on the app's database threads, one per pool connection (:class:`DatabaseThreads`): a
request never holds a thread while it waits for a connection, and the hop is a plain
executor future, without the capacity limiter, cancel scope and library detection anyio's
``run_sync`` adds per call (its cost is measured in docs/benchmarks.md).

Behind the front door's cap on requests in flight (``api.admission``), two bounds keep an
admitted request from waiting long:

* a request that waited longer than ``api_admission_wait_ms`` for a database thread is
  refused (503 ``overloaded``) when a thread takes it, before it touches the database (its
  client has given up, or soon will);
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

from memory_platform.foundation.settings import Settings

T = TypeVar("T")


class Overloaded(Exception):
    """The request was refused by admission control (the API answers 503 ``overloaded``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DatabaseThreads:
    """The database threads (one per pool connection) and the bound on waiting for one."""

    def __init__(self, settings: Settings) -> None:
        self.size = settings.pool_max_size
        self.max_wait = (settings.api_admission_wait_ms / 1000
                         if settings.api_admission_control else 0.0)
        self.connection_wait = settings.api_connection_wait_seconds
        self.executor = ThreadPoolExecutor(max_workers=self.size,
                                           thread_name_prefix="memory-db")
        self._lock = threading.Lock()
        self.busy = 0         # requests on a thread
        self.waiting = 0      # requests waiting for a thread

    def enqueue(self) -> float:
        """A request starts waiting for a thread: its enqueue time."""
        with self._lock:
            self.waiting += 1
        return time.monotonic()

    def start(self, enqueued_at: float) -> None:
        """On the thread: the request leaves the queue; refused if it waited too long."""
        with self._lock:
            self.waiting -= 1
            if self.max_wait and time.monotonic() - enqueued_at > self.max_wait:
                raise Overloaded("waited_too_long")
            self.busy += 1

    def done(self) -> None:
        with self._lock:
            self.busy -= 1

    def shutdown(self) -> None:
        self.executor.shutdown()


async def with_connection(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(conn, *args, **kwargs)`` on a database thread with a pool connection
    (:class:`Overloaded` when it waited too long for the thread).

    The connection is idle when ``fn`` starts (no transaction open), so ``fn`` may be a
    function that commits its own units (``memory_platform.foundation.db.units``); whatever ``fn``
    leaves
    open is committed when it returns and rolled back when it raises (the pool's connection
    context does both). If the request is cancelled meanwhile, the call still finishes and
    gives its connection back."""
    pool = request.state.pool
    threads: DatabaseThreads = request.state.database_threads
    enqueued_at = threads.enqueue()

    def call() -> T:
        threads.start(enqueued_at)
        try:  # from here on the request holds a thread
            with pool.connection(timeout=threads.connection_wait) as conn:
                return fn(conn, *args, **kwargs)
        finally:
            threads.done()

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        threads.executor, functools.partial(context.run, call))
