"""Run blocking domain functions (psycopg, sync) off the event loop with a pool connection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

T = TypeVar("T")


async def with_connection(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(conn, *args, **kwargs)`` in a worker thread; committed when it returns, rolled
    back when it raises (the pool's connection context does both)."""

    def call() -> T:
        with request.app.state.pool.connection() as conn:
            return fn(conn, *args, **kwargs)

    return await run_in_threadpool(call)
