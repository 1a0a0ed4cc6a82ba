"""Run blocking domain functions (psycopg, sync) off the event loop with a pool connection.

They run on the app's database threads, one per pool connection (``database_threads``): a
request never holds a thread while it waits for a connection, and the hop is a plain
executor future. (anyio's ``run_sync`` adds a capacity limiter, a cancel scope and async
library detection per call: about 8% of the API process's CPU under load.)
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
    """``fn(conn, *args, **kwargs)`` on a database thread; committed when it returns, rolled
    back when it raises (the pool's connection context does both). If the request is
    cancelled meanwhile, the call still finishes and gives its connection back."""

    def call() -> T:
        with request.app.state.pool.connection() as conn:
            return fn(conn, *args, **kwargs)

    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        request.app.state.database_threads, functools.partial(context.run, call))
