"""Application factory: routes, lifespan (the pool), error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool

from api.errors import EXCEPTION_HANDLERS
from api.routes import health
from memory_platform.db import migrations
from memory_platform.db.connection import open_pool
from memory_platform.settings import Settings, get_settings


def _refuse_edited_migrations(pool, settings: Settings) -> None:
    """Never serve from a database whose applied migrations differ from the code's files."""
    with pool.connection() as conn:
        migrations.verify_checksums(conn, settings.migrations_dir)


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.pool = await run_in_threadpool(open_pool, settings)
        await run_in_threadpool(_refuse_edited_migrations, app.state.pool, settings)
        try:
            yield
        finally:
            await run_in_threadpool(app.state.pool.close)

    return Starlette(
        routes=[*health.routes],
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
    )
