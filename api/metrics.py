"""Prometheus metrics: request counts and latency per route, connection-pool usage.

The route label is the route's path template (``/api/v1/memory/{memory_id}``), never the
raw path, so ids do not explode the label set."""

from __future__ import annotations

import time

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from psycopg_pool import ConnectionPool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


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


def route_template(scope: Scope) -> str:
    """The full path template of the route that answered (mount prefixes included)."""
    route = scope.get("route")
    if not isinstance(route, Route):
        return "unmatched"
    mounted = scope.get("root_path", "")[len(scope.get("app_root_path", "")):]
    return mounted + route.path


class Metrics:
    """Request counts and latencies of one app (its own registry), and the /metrics page."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("memory_http_requests_total", "HTTP requests",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("memory_http_request_duration_seconds",
                                 "HTTP request latency", ["method", "route"],
                                 buckets=_BUCKETS, registry=self.registry)

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

    def page(self, pool: ConnectionPool) -> bytes:
        """The Prometheus text of the app's metrics and the pool's gauges."""
        return generate_latest(self.registry) + generate_latest(PoolCollector(pool))


async def metrics_page(request: Request) -> Response:
    state = request.state
    return Response(state.metrics.page(state.pool), media_type=CONTENT_TYPE_LATEST)
