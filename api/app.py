"""Application factory: the route table's routes, middleware (metrics), lifespan state, error
mapping."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypedDict

from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware

from api import apidocs, inspector, table
from api.admission import AdmissionControl, FrontDoor
from api.auth import ApiKeys
from api.errors import EXCEPTION_HANDLERS
from api.hosts import TrustedHosts
from api.launching import (
    DreamLauncher,
    RollbackRecorder,
    configured_launcher,
    configured_rollback_recorder,
)
from api.metrics import Metrics
from api.routes.health import ProbeConnection
from api.threads import DatabaseThreads
from api.tracing import TracingMiddleware
from api.vector_worker import VectorWorker
from memory_platform.features.retrieval.stamping import RetrievalStamper
from memory_platform.foundation import tracing
from memory_platform.foundation.db import migrations
from memory_platform.foundation.db.connection import open_api_pool
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider


class AppState(TypedDict):
    """What the lifespan holds for the app's life: handlers read it as ``request.state``,
    middleware as ``scope["state"]``."""

    settings: Settings
    pool: ConnectionPool
    embedder: EmbeddingProvider
    stamper: RetrievalStamper
    database_threads: DatabaseThreads
    api_keys: ApiKeys
    metrics: Metrics
    launcher: DreamLauncher | None
    rollback_recorder: RollbackRecorder | None
    probe: ProbeConnection


def _refuse_edited_migrations(pool: ConnectionPool, settings: Settings) -> None:
    """Never serve from a database whose applied migrations differ from the code's files."""
    with pool.connection() as conn:
        migrations.verify_checksums(conn, settings.migrations_dir)


def create_app(settings: Settings | None = None, *,
               launcher: DreamLauncher | None = None,
               rollback_recorder: RollbackRecorder | None = None) -> Starlette:
    """The API for ``settings`` (default: the environment's; also uvicorn's factory).
    ``launcher`` (default: the one ``settings.api_dream_launcher`` names) starts Dream runs
    (``POST /internal/memory/dreams``); without one that route answers 503.
    ``rollback_recorder`` (default: ``settings.api_rollback_recorder``'s) shows a rollback
    made through the API in Dagster (``api.launching``)."""
    settings = settings or get_settings()
    launcher = launcher or configured_launcher(settings)
    rollback_recorder = rollback_recorder or configured_rollback_recorder(settings)
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[AppState]:
        tracing.setup("memory-platform-api")  # once per process; off unless OTEL_* say so
        embedder = await run_in_threadpool(get_provider, settings)
        pool = await run_in_threadpool(open_api_pool, settings)
        stamper = RetrievalStamper(pool)
        threads = DatabaseThreads(settings)
        probe = ProbeConnection(pool.conninfo)
        vector_worker: VectorWorker | None = None
        try:
            await run_in_threadpool(_refuse_edited_migrations, pool, settings)
            if settings.write_vectors == "deferred":
                vector_worker = VectorWorker(pool, settings).start()
            yield AppState(settings=settings, pool=pool, embedder=embedder, stamper=stamper,
                           database_threads=threads,
                           api_keys=ApiKeys(pool, settings),
                           metrics=metrics, launcher=launcher,
                           rollback_recorder=rollback_recorder,
                           probe=probe)
        finally:
            if vector_worker is not None:
                await run_in_threadpool(vector_worker.stop)
            await run_in_threadpool(probe.close)
            await run_in_threadpool(threads.shutdown)
            await run_in_threadpool(stamper.close)
            await run_in_threadpool(pool.close)

    return Starlette(
        routes=[*table.routes(), *inspector.routes(), *apidocs.routes()],
        lifespan=lifespan,
        exception_handlers=EXCEPTION_HANDLERS,
        # Outermost first: a refused Host or an overload is still traced and counted.
        middleware=[Middleware(TracingMiddleware), Middleware(metrics.middleware),
                    Middleware(TrustedHosts, allowed=settings.api_trusted_hosts),
                    Middleware(AdmissionControl, door=FrontDoor(settings))],
    )
