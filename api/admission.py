"""Admission control at the front door: overload is shed, not queued, and slow clients hold
no answer slot.

Past capacity an unbounded queue only makes every answer late (at 200 reads/s + 50
writes/s on 2 cores the queue grew without bound, p95 3.6 s). The API therefore caps the
requests it works on at once (``api_admission_max_in_flight``, default twice the pool
size; the pool size itself keeps admitted answers fastest under overload but refuses more
in ordinary bursts: both measured in docs/benchmarks.md):
one more is answered ``503 overloaded`` with ``Retry-After`` at once, before authentication,
body parsing or the database, so a refusal costs almost nothing and the requests already
admitted keep their pace. Probes (``/healthz``, ``/readyz``), ``/metrics`` and the
static files of the inspector and of ``/docs`` are never refused: an orchestrator must see
the process alive while it sheds, and a page must get all of its scripts.

Bodies. A client decides how fast its body arrives, so a request whose body is being
received gives its answer slot back meanwhile (:func:`receive_body`, the one place bodies
are read) and holds a body slot instead: at most ``api_body_readers_max`` bodies at once
(503 ``overloaded``, reason ``body_readers``), ``api_body_readers_per_client`` from one
client address (429 ``too_many_bodies``), each received within
``api_body_read_timeout_seconds`` (408 ``body_timeout``, the connection closed). Once the
body is in, the request takes an answer slot again (503 ``in_flight`` when none is free).
Bodies are read only after the request is authenticated (bearer routes: the route's scope
check; the inspector: its session), except the sign-in form, which has a small budget of
its own (``api_sign_in_max_in_flight``, 503 ``sign_in``) held from its headers on. So
connections that trickle a body cannot take the answers of key holders away (measured:
``bench/slow_bodies.py``, docs/benchmarks.md).

The cap sits first in the ASGI stack (inside the metrics middleware, so refusals are
counted). Behind it, ``api.threads`` refuses a request that still waited longer than
``api_admission_wait_ms`` for a database thread, and bounds the wait for a connection.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import BUSY_RETRY_AFTER_SECONDS, ApiError, error_response
from memory_platform.foundation.settings import Settings

NEVER_REFUSED = ("/healthz", "/readyz", "/metrics")
# Files served from the packages (the scripts and styles of the inspector and /docs): no
# database, no queue; a page loads several at once and must not lose one to the cap.
STATIC_PREFIXES = ("/inspector/static/", "/docs/assets/")
SIGN_IN_PATH = "/inspector/login"
# Where a request's admission ticket is kept for the code that reads its body.
_TICKET = "admission_ticket"


def in_flight_limit(settings: Settings) -> int | None:
    """Requests the API works on at once, or None when admission control is off."""
    if not settings.api_admission_control:
        return None
    return settings.api_admission_max_in_flight or 2 * settings.pool_max_size


def _retry_later(status: int, code: str, message: str, reason: str) -> ApiError:
    return ApiError(status, code, message,
                    {"retryAfterSeconds": BUSY_RETRY_AFTER_SECONDS, "reason": reason},
                    headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})


def _at_capacity(reason: str) -> ApiError:
    return _retry_later(503, "overloaded", "the server is at capacity and refused this request "
                        f"before doing anything; retry after {BUSY_RETRY_AFTER_SECONDS} s",
                        reason)


class FrontDoor:
    """The counters of one API process: answers in flight, sign-ins, bodies being received
    (in all and per client address). One event loop changes them: no lock needed."""

    def __init__(self, settings: Settings) -> None:
        self.limit = in_flight_limit(settings)
        on = self.limit is not None
        self.sign_in_limit = settings.api_sign_in_max_in_flight if on else None
        self.readers_limit = settings.api_body_readers_max if on else None
        self.per_client_limit = settings.api_body_readers_per_client if on else None
        self.body_deadline = settings.api_body_read_timeout_seconds
        self.in_flight = 0
        self.signing_in = 0
        self.reading = 0
        self.reading_by_client: Counter[str] = Counter()

    def snapshot(self) -> dict[str, int | None]:
        """The counters and their limits (for /readyz and the tests)."""
        return {"inFlight": self.in_flight, "inFlightLimit": self.limit,
                "signingIn": self.signing_in, "signInLimit": self.sign_in_limit,
                "bodiesReceiving": self.reading, "bodyReadersLimit": self.readers_limit}


class Ticket:
    """One request's hold on the door: its answer slot (given back while its body arrives)
    and its sign-in slot."""

    def __init__(self, door: FrontDoor, client: str) -> None:
        self.door = door
        self.client = client
        self.answering = False
        self.signing_in = False

    def admit(self) -> None:
        door = self.door
        if door.limit is not None and door.in_flight >= door.limit:
            raise _at_capacity("in_flight")
        door.in_flight += 1
        self.answering = True

    def step_out(self) -> None:
        if self.answering:
            self.door.in_flight -= 1
            self.answering = False

    def release(self) -> None:
        self.step_out()
        if self.signing_in:
            self.door.signing_in -= 1
            self.signing_in = False

    @asynccontextmanager
    async def receiving(self) -> AsyncIterator[None]:
        """Hold a body slot instead of the answer slot while the body arrives; the answer
        slot is taken again after it (503 when none is free), not after a failure."""
        door = self.door
        if door.readers_limit is not None and door.reading >= door.readers_limit:
            raise _at_capacity("body_readers")
        if (door.per_client_limit is not None
                and door.reading_by_client[self.client] >= door.per_client_limit):
            raise _retry_later(429, "too_many_bodies", "this client is already sending "
                               f"{door.per_client_limit} request bodies; finish those first",
                               "body_readers_per_client")
        had_slot = self.answering
        self.step_out()
        door.reading += 1
        door.reading_by_client[self.client] += 1
        try:
            yield
        finally:
            door.reading -= 1
            door.reading_by_client[self.client] -= 1
            if door.reading_by_client[self.client] <= 0:
                del door.reading_by_client[self.client]
        if had_slot:
            self.admit()


class AdmissionControl:
    """Pure ASGI middleware: counts the HTTP requests in flight and refuses past the cap;
    gives each request the ticket :func:`receive_body` reads its body under."""

    def __init__(self, app: ASGIApp, door: FrontDoor) -> None:
        self.app = app
        self.door = door

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["path"] in NEVER_REFUSED
                or scope["path"].startswith(STATIC_PREFIXES)):
            await self.app(scope, receive, send)
            return
        door = self.door
        client = scope.get("client")
        ticket = Ticket(door, client[0] if client else "")
        try:
            if (door.sign_in_limit is not None and scope["method"] == "POST"
                    and scope["path"] == SIGN_IN_PATH):
                if door.signing_in >= door.sign_in_limit:
                    raise _at_capacity("sign_in")
                door.signing_in += 1
                ticket.signing_in = True
            ticket.admit()
        except ApiError as refused:
            ticket.release()
            await error_response(refused.status, refused.code, refused.message,
                                 refused.details, refused.headers)(scope, receive, send)
            return
        scope.setdefault("state", {})[_TICKET] = ticket
        try:
            await self.app(scope, receive, send)
        finally:
            ticket.release()


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "body_too_large", f"request body exceeds {limit} bytes",
                    {"limit": limit})


async def receive_body(request: Request, limit: int) -> bytes:
    """The request's whole body: at most ``limit`` bytes (413), received within the body
    deadline (408 ``body_timeout``, and the connection is closed: the rest of the body is
    never read), on a body slot rather than an answer slot (module docstring)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    ticket: Ticket | None = getattr(request.state, _TICKET, None)
    deadline = (ticket.door.body_deadline if ticket is not None
                else request.state.settings.api_body_read_timeout_seconds)
    body = bytearray()

    async def read() -> None:
        try:
            async with asyncio.timeout(deadline):
                async for part in request.stream():
                    body.extend(part)
                    if len(body) > limit:
                        raise _too_large(limit)
        except TimeoutError as exc:
            raise ApiError(408, "body_timeout", f"the request body did not arrive within "
                           f"{deadline:g} s; send it at once", {"timeoutSeconds": deadline},
                           headers={"Connection": "close"}) from exc

    if ticket is None:
        await read()
    else:
        async with ticket.receiving():
            await read()
    return bytes(body)

