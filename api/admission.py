"""Admission control at the front door: overload is shed, not queued.

Past capacity an unbounded queue only makes every answer late (at 200 reads/s + 50
writes/s on 2 cores the queue grew without bound, p95 3.6 s). The API therefore caps the
requests it works on at once (``api_admission_max_in_flight``, default twice the pool
size; the pool size itself keeps admitted answers fastest under overload but refuses more
in ordinary bursts: both measured in docs/benchmarks.md):
one more is answered ``503 overloaded`` with ``Retry-After`` at once, before authentication,
body parsing or the database, so a refusal costs almost nothing and the requests already
admitted keep their pace. Probes (``/healthz``, ``/readyz``), ``/metrics`` and the
inspector's static files are never refused: an orchestrator must see the process alive
while it sheds, and a page must get all of its scripts.

The cap sits first in the ASGI stack (inside the metrics middleware, so refusals are
counted). Behind it, ``api.threads`` refuses a request that still waited longer than
``api_admission_wait_ms`` for a database thread, and bounds the wait for a connection.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import BUSY_RETRY_AFTER_SECONDS, error_response
from memory_platform.settings import Settings

NEVER_REFUSED = ("/healthz", "/readyz", "/metrics")
# Files served from the package (the inspector's scripts and styles): no database, no queue;
# a page loads several at once and must not lose one to the cap.
STATIC_PREFIX = "/inspector/static/"


def in_flight_limit(settings: Settings) -> int | None:
    """Requests the API works on at once, or None when admission control is off."""
    if not settings.api_admission_control:
        return None
    return settings.api_admission_max_in_flight or 2 * settings.pool_max_size


class AdmissionControl:
    """Pure ASGI middleware: counts the HTTP requests in flight and refuses past the cap."""

    def __init__(self, app: ASGIApp, limit: int | None) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or self.limit is None
                or scope["path"] in NEVER_REFUSED or scope["path"].startswith(STATIC_PREFIX)):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            refusal = error_response(
                503, "overloaded", "the server is at capacity and refused this request "
                f"before doing anything; retry after {BUSY_RETRY_AFTER_SECONDS} s",
                {"retryAfterSeconds": BUSY_RETRY_AFTER_SECONDS, "reason": "in_flight"},
                headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})
            await refusal(scope, receive, send)
            return
        self.in_flight += 1          # one event loop: no lock needed
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
