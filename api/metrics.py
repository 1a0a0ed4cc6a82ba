"""Prometheus metrics: request counts and latency per route, connection-pool usage, and
session maintenance (``memory_flush``, ``history_compaction`` and ``shared_facts`` apart).

The route label is the route's path template (``/api/v1/memory/{memory_id}``), never the
raw path, so ids do not explode the label set. Session maintenance runs in Dagster, not in
this process: its numbers are the ``agent_session_maintenance_events`` rows, summed over
all instances (no instance is named) by
:class:`memory_platform.features.sessions.metrics.EventTotals`
(each scrape reads only the new rows). A database that cannot answer leaves those metrics
out of that scrape (logged); the rest of the page is served."""

from __future__ import annotations

import asyncio
import logging
import re
import time

import psycopg
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from psycopg_pool import ConnectionPool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.threads import with_connection
from memory_platform.features.sessions.metrics import OUTCOMES, EventAggregate, EventTotals

log = logging.getLogger("api.metrics")

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# A scrape does not wait longer than this for the session maintenance numbers.
_SESSION_METRICS_WAIT_SECONDS = 5.0
_SESSION_PREFIX = "memory_session_maintenance"


class PoolCollector:
    """The connection pool's gauges, read when the page is rendered."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def collect(self):
        stats = self.pool.get_stats()
        for name in ("pool_size", "pool_available", "requests_waiting", "pool_max"):
            gauge = GaugeMetricFamily(f"memory_db_{name}", f"psycopg pool: {name}")
            gauge.add_metric([], stats.get(name, 0))
            yield gauge


class SessionMaintenanceCollector:
    """Session maintenance per operation: operations by outcome, retries, fallbacks (all
    counters), total duration (counter) and the longest one (gauge), in seconds."""

    def __init__(self, totals: EventAggregate) -> None:
        self.totals = totals

    def collect(self):
        operations = CounterMetricFamily(
            f"{_SESSION_PREFIX}_operations", "Session maintenance operations by outcome",
            labels=["operation", "outcome"])
        retries = CounterMetricFamily(f"{_SESSION_PREFIX}_retries",
                                      "Model re-asks of session maintenance operations",
                                      labels=["operation"])
        fallbacks = CounterMetricFamily(f"{_SESSION_PREFIX}_fallbacks",
                                        "Deterministic fallbacks used instead of a model "
                                        "answer", labels=["operation"])
        total = CounterMetricFamily(f"{_SESSION_PREFIX}_duration_seconds",
                                    "Time spent in session maintenance operations",
                                    labels=["operation"])
        longest = GaugeMetricFamily(f"{_SESSION_PREFIX}_duration_seconds_max",
                                    "Longest session maintenance operation",
                                    labels=["operation"])
        for name, stats in self.totals.operations.items():
            for outcome in OUTCOMES:
                operations.add_metric([name, outcome], stats.outcomes.get(outcome, 0))
            retries.add_metric([name], stats.retries)
            fallbacks.add_metric([name], stats.fallbacks)
            total.add_metric([name], stats.duration_seconds_total)
            longest.add_metric([name], stats.duration_seconds_max)
        yield from (operations, retries, fallbacks, total, longest)


# A path id parsed by the api.paths convertor shows as its name alone: {dream_id}.
_ID_CONVERTOR = re.compile(r"\{(\w+):id\}")


def route_template(scope: Scope) -> str:
    """The full path template of the route that answered (mount prefixes included)."""
    route = scope.get("route")
    if not isinstance(route, Route):
        return "unmatched"
    mounted = scope.get("root_path", "")[len(scope.get("app_root_path", "")):]
    return mounted + _ID_CONVERTOR.sub(r"{\1}", route.path)


class Metrics:
    """Request counts and latencies of one app (its own registry), and the /metrics page."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("memory_http_requests_total", "HTTP requests",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("memory_http_request_duration_seconds",
                                 "HTTP request latency", ["method", "route"],
                                 buckets=_BUCKETS, registry=self.registry)
        self.session_events = EventTotals()

    def middleware(self, app: ASGIApp) -> ASGIApp:
        async def measure(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status = {"code": 500}

            async def send_wrapper(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status["code"] = message["status"]
                await send(message)

            try:
                await app(scope, receive, send_wrapper)
            finally:
                label = route_template(scope)
                self.requests.labels(scope["method"], label, str(status["code"])).inc()
                self.latency.labels(scope["method"], label).observe(
                    time.perf_counter() - started)

        return measure

    def page(self, pool: ConnectionPool, sessions: EventAggregate | None = None) -> bytes:
        """The Prometheus text of the app's metrics, the pool's gauges and (when read) the
        session maintenance totals."""
        text = generate_latest(self.registry) + generate_latest(PoolCollector(pool))
        if sessions is not None:
            text += generate_latest(SessionMaintenanceCollector(sessions))
        return text


async def session_totals(request: Request) -> EventAggregate | None:
    """The session maintenance totals, or None (logged) when the database cannot answer."""
    metrics: Metrics = request.state.metrics
    try:
        return await asyncio.wait_for(
            with_connection(request, metrics.session_events.refresh),
            _SESSION_METRICS_WAIT_SECONDS)
    except (psycopg.Error, TimeoutError) as exc:   # never breaks the page
        log.warning("session maintenance metrics left out of this scrape: %s: %s",
                    type(exc).__name__, exc)
        return None


async def metrics_page(request: Request) -> Response:
    state = request.state
    sessions = await session_totals(request)
    return Response(state.metrics.page(state.pool, sessions), media_type=CONTENT_TYPE_LATEST)
