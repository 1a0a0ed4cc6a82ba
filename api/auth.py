"""Bearer authentication, the scope check of a route, and the caller of a request.

A route that declares a scope in the route table (``api.table``) runs behind
:class:`RequireScope`: the request must carry ``Authorization: Bearer <token>`` of a live API
key (401 otherwise) holding that scope, or one of the alternatives the route names (403
naming them otherwise); the key is then in the request state as ``api_key``. The check sits
on the matched route, never on the raw path, so the app answers the same when it is mounted
under a prefix or served with a root path. Routes without a scope (health, readiness,
metrics, the OpenAPI document) are public.

Tokens are checked in memory first (:class:`ApiKeys`): a token that does not have the exact
shape of a platform token is refused without the database; a well-formed token whose public
id names no live key is remembered for ``api_key_unknown_cache_seconds``; a live key is kept
for ``api_key_cache_seconds`` (a revocation takes effect within that time). At most
``api_key_lookup_concurrency`` lookups reach the database at once.

:func:`with_caller` turns the key and the conversation context a request claims into the
request's :class:`~memory_platform.shared.access.AccessContext` with
:func:`memory_platform.shared.trust.resolve_context`, on the connection the route then reads with,
so membership is checked in SQL before any data is read.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import ApiError
from api.threads import with_connection
from memory_platform.features.apikeys import (
    ApiKey,
    StoredKey,
    live_key,
    public_id,
    touch,
    well_formed,
)
from memory_platform.foundation.settings import Settings
from memory_platform.shared.trust import Caller, ContextClaims, resolve_context

T = TypeVar("T")

_KNOWN_LIMIT = 10_000

# The request header with which a client marks a write as the agent's inference. It can only
# lower a write's trust: nothing a request sends raises it.
WRITER_HEADER = "X-Memory-Writer"
AGENT_WRITER = "agent"


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message)


class ApiKeys:
    """Verifies bearer tokens: shape in memory, then caches, then (bounded) the database."""

    def __init__(self, pool: ConnectionPool, settings: Settings) -> None:
        self.pool = pool
        self.connection_wait = settings.api_connection_wait_seconds
        self.cache_seconds = settings.api_key_cache_seconds
        self.unknown_seconds = settings.api_key_unknown_cache_seconds
        self.unknown_size = settings.api_key_unknown_cache_size
        self._known: dict[str, tuple[float, StoredKey]] = {}
        self._unknown: OrderedDict[str, float] = OrderedDict()
        self._lookups = asyncio.Semaphore(settings.api_key_lookup_concurrency)

    def _fresh_known(self, public: str, now: float) -> StoredKey | None:
        cached = self._known.get(public)
        if cached and now - cached[0] < self.cache_seconds:
            return cached[1]
        return None

    def _known_unknown(self, public: str, now: float) -> bool:
        seen = self._unknown.get(public)
        if seen is None:
            return False
        if now - seen < self.unknown_seconds:
            return True
        del self._unknown[public]
        return False

    def _remember(self, public: str, stored: StoredKey | None, now: float) -> None:
        if stored is None:
            self._known.pop(public, None)
            self._unknown[public] = now
            self._unknown.move_to_end(public)
            while len(self._unknown) > self.unknown_size:
                self._unknown.popitem(last=False)
            return
        if len(self._known) >= _KNOWN_LIMIT:
            self._known.clear()
        self._known[public] = (now, stored)

    def _lookup(self, token: str) -> StoredKey | None:
        with self.pool.connection(timeout=self.connection_wait) as conn:
            stored = live_key(conn, public_id(token))
            if stored is not None and stored.matches(token):
                touch(conn, stored.key)
        return stored

    async def authenticate(self, authorization: str) -> ApiKey:
        """The live key of an ``Authorization`` header; 401 without one."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise _unauthorized("missing bearer token: send 'Authorization: Bearer <key>'")
        if not well_formed(token):
            raise _unauthorized("not an API key of this platform (a key looks like "
                                "mpk_<12 hex digits>_<43 characters>)")
        public, now = public_id(token), time.monotonic()
        stored = self._fresh_known(public, now)
        if stored is None:
            if self._known_unknown(public, now):
                raise _unauthorized("unknown, revoked or expired API key")
            # A cached answer stays on the event loop; only a miss needs the database (a
            # short call, so Starlette's thread pool rather than the database threads).
            async with self._lookups:
                stored = await run_in_threadpool(self._lookup, token)
            self._remember(public, stored, time.monotonic())
        if stored is None or not stored.matches(token):
            raise _unauthorized("unknown, revoked or expired API key")
        return stored.key


def scope_names(needs: str | tuple[str, ...]) -> tuple[str, ...]:
    return (needs,) if isinstance(needs, str) else needs


class RequireScope:
    """Route middleware: authenticate the request, then require the key to hold ``needs``
    (one scope, or any one of several)."""

    def __init__(self, app: ASGIApp, *, needs: str | tuple[str, ...]) -> None:
        self.app = app
        self.needs = needs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["state"]
        authorization = Headers(scope=scope).get("authorization", "")
        key = await state["api_keys"].authenticate(authorization)
        names = scope_names(self.needs)
        if not any(name in key.scopes for name in names):
            wanted = " or ".join(f"'{name}'" for name in names)
            raise ApiError(403, "missing_scope", f"this route needs the {wanted} scope",
                           {"required": self.needs if isinstance(self.needs, str)
                            else list(names), "granted": list(key.scopes)})
        state["api_key"] = key
        await self.app(scope, receive, send)


def api_key(request: Request) -> ApiKey:
    """The key the request was authenticated with; 401 on a route that checked none."""
    key = getattr(request.state, "api_key", None)
    if key is None:
        raise _unauthorized("missing bearer token: send 'Authorization: Bearer <key>'")
    return key


def caller_of(key: ApiKey) -> Caller:
    return Caller(instance_key=key.instance_key, user_id=key.user_id, runtime=key.runtime,
                  agent=key.agent)


def claims_of(context: Any) -> ContextClaims:
    """The conversation context a request claims (a ``CallerContext``, the search
    parameters, or None)."""
    return ContextClaims(
        user_id=getattr(context, "user_id", None),
        session_key=getattr(context, "session_key", None),
        group_room_id=getattr(context, "group_room_id", None),
        channel_thread_key=getattr(context, "channel_thread_key", None),
        channel_type=getattr(context, "channel_type", None),
    )


async def with_caller(request: Request, context: Any,
                      fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(conn, ctx, *args, **kwargs)`` on a database thread, where ``ctx`` is the caller's
    access context resolved from the key and the claimed ``context`` on that same connection
    (403 ``not_a_member`` / ``foreign_session`` before anything is read)."""
    caller, claims = caller_of(api_key(request)), claims_of(context)

    def call(conn: psycopg.Connection, *a: Any, **kw: Any) -> T:
        return fn(conn, resolve_context(conn, caller, claims), *a, **kw)

    return await with_connection(request, call, *args, **kwargs)


def writer_header(request: Request) -> str | None:
    """The writer a request declares (``X-Memory-Writer``): ``agent`` or nothing. What it
    means for the write is the domain's (``trust.write_trust_class``,
    ``trust.written_by_agent``)."""
    value = request.headers.get(WRITER_HEADER)
    if value is None:
        return None
    if value.strip().lower() != AGENT_WRITER:
        raise ApiError(400, "validation_error",
                       f"{WRITER_HEADER} may only be '{AGENT_WRITER}' (it marks a write as the "
                       "agent's inference; nothing raises a write's trust)",
                       [{"field": WRITER_HEADER, "problem": "unknown writer"}])
    return AGENT_WRITER

