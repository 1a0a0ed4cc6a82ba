"""Application factory: routes, middleware (metrics, auth), lifespan (pool), error mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware

from api import openapi
from api.auth import AuthMiddleware
from api.db import database_threads
from api.errors import EXCEPTION_HANDLERS
from api.metrics import Metrics
from api.routes import context, dreams, feedback, health, internal, memory
from memory_platform.db import migrations
from memory_platform.db.connection import open_pool
from memory_platform.embeddings.factory import get_provider
from memory_platform.retrieval.stamping import RetrievalStamper
from memory_platform.settings import Settings, get_settings


def _refuse_edited_migrations(pool, settings: Settings) -> None:
    """Never serve from a database whose applied migrations differ from the code's files."""
    with pool.connection() as conn:
        migrations.verify_checksums(conn, settings.migrations_dir)


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or get_settings()
    holder: dict = {"pool": None}
    metrics = Metrics(lambda: holder["pool"])

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.embedder = await run_in_threadpool(get_provider, settings)
        app.state.pool = holder["pool"] = await run_in_threadpool(open_pool, settings)
        app.state.stamper = RetrievalStamper(app.state.pool)
        app.state.database_threads = database_threads(settings.pool_max_size)
        try:
            await run_in_threadpool(_refuse_edited_migrations, app.state.pool, settings)
            yield
        finally:
            await run_in_threadpool(app.state.database_threads.shutdown)
            await run_in_threadpool(app.state.stamper.close)
            holder["pool"] = None
            await run_in_threadpool(app.state.pool.close)

    routes = [*health.routes, *memory.routes, *context.routes, *feedback.routes,
              *internal.routes, *dreams.routes, *openapi.routes, metrics.route()]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[
            Middleware(metrics.middleware),
            Middleware(AuthMiddleware, pool_getter=lambda: holder["pool"],
                       cache_seconds=settings.api_key_cache_seconds),
        ],
    )
