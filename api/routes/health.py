"""Liveness and readiness (public).

Both run on Starlette's thread pool rather than the database threads: a probe is not queued
behind the requests waiting for those threads; it waits at most 5 s for a connection and
answers 503 after that. It needs no fast path.
"""

from __future__ import annotations

import psycopg
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from memory_platform.db import migrations


def _ping(pool) -> None:
    with pool.connection(timeout=5) as conn:
        conn.execute("SELECT 1")


async def healthz(request: Request) -> JSONResponse:
    """The process serves and the database answers."""
    try:
        await run_in_threadpool(_ping, request.state.pool)
    except Exception as exc:
        return JSONResponse({"status": "unavailable", "database": type(exc).__name__},
                            status_code=503)
    return JSONResponse({"status": "ok"})


def _check_ready(pool, directory) -> None:
    with pool.connection(timeout=5) as conn:
        migrations.ensure_current(conn, directory)


async def readyz(request: Request) -> JSONResponse:
    """Database reachable and the schema exactly at the code's migrations."""
    try:
        await run_in_threadpool(_check_ready, request.state.pool,
                                request.state.settings.migrations_dir)
    except (psycopg.Error, migrations.MigrationError, TimeoutError) as exc:
        return JSONResponse({"status": "not_ready", "reason": str(exc)}, status_code=503)
    return JSONResponse({"status": "ready"})
