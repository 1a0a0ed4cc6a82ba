"""Run blocking domain functions (psycopg, sync) off the event loop with a pool connection.

They run on the app's database threads, one per pool connection (``database_threads``): a
request never holds a thread while it waits for a connection, and the hop is a plain
executor future, without the capacity limiter, cancel scope and library detection anyio's
``run_sync`` adds per call (its cost is measured in docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from starlette.requests import Request

T = TypeVar("T")


def database_threads(pool_max_size: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=pool_max_size, thread_name_prefix="memory-db")


async def with_connection(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(conn, *args, **kwargs)`` on a database thread with a pool connection.

    The connection is idle when ``fn`` starts (no transaction open), so ``fn`` may be a
    function that commits its own units (``memory_platform.db.units``); whatever ``fn`` leaves
    open is committed when it returns and rolled back when it raises (the pool's connection
    context does both). If the request is cancelled meanwhile, the call still finishes and
    gives its connection back."""
    pool = request.state.pool

    def call() -> T:
        with pool.connection() as conn:
            return fn(conn, *args, **kwargs)

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        request.state.database_threads, functools.partial(context.run, call))
