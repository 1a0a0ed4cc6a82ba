"""A server span per HTTP request (docs/observability.md), as a tiny pure-ASGI middleware.

The span is named ``<METHOD> <route template>`` (``POST /api/v1/context/search``) and
carries the method, the route template (never the raw path or the query string: ids and
keys stay out), the response status and whether the request was refused. With tracing off
(:mod:`memory_platform.foundation.tracing`) the span is the no-op tracer's and costs next to
nothing.
An incoming ``traceparent`` header is not honoured: callers of a memory API are not trusted
to join its traces.
"""

from __future__ import annotations

from opentelemetry.trace import SpanKind, Status, StatusCode
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.metrics import route_template
from memory_platform.foundation import tracing


class TracingMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.enabled():
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "")
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        with tracing.tracer().start_as_current_span(
                f"{method} request", kind=SpanKind.SERVER, record_exception=False,
                set_status_on_exception=False,
                attributes={"http.request.method": method}) as span:
            try:
                await self.app(scope, receive, send_wrapper)
            except BaseException as exc:
                span.set_attribute("error.type", type(exc).__name__)
                raise
            finally:
                route = route_template(scope)
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status["code"])
                if status["code"] >= 500:
                    span.set_status(Status(StatusCode.ERROR))
