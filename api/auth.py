"""Bearer-token authentication and the scope check of a route.

A route that declares a scope in the route table (``api.table``) runs behind
:class:`RequireScope`: the request must carry ``Authorization: Bearer <token>`` of a live API
key (401 otherwise) holding that scope (403 naming it otherwise); the key (its user,
instance and scopes) is then in the request state as ``api_key``. Routes without a scope
(health, readiness, metrics, the OpenAPI document) are public. Verified keys are cached for
``api_key_cache_seconds`` per app, so a revocation takes effect within that time.
"""

from __future__ import annotations

import time

from psycopg_pool import ConnectionPool
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import ApiError
from memory_platform.access import AccessContext
from memory_platform.apikeys import ApiKey, verify_token

_CACHE_LIMIT = 10_000


class ApiKeys:
    """Verifies bearer tokens against the database, with a short per-app cache."""

    def __init__(self, pool: ConnectionPool, cache_seconds: float) -> None:
        self.pool = pool
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, ApiKey]] = {}

    def _cached(self, token: str) -> ApiKey | None:
        cached = self._cache.get(token)
        if cached and time.monotonic() - cached[0] < self.cache_seconds:
            return cached[1]
        return None

    def _verify(self, token: str) -> ApiKey | None:
        with self.pool.connection() as conn:
            key = verify_token(conn, token)
        if key is None:
            self._cache.pop(token, None)
        else:
            if len(self._cache) > _CACHE_LIMIT:
                self._cache.clear()
            self._cache[token] = (time.monotonic(), key)
        return key

    async def authenticate(self, authorization: str) -> ApiKey:
        """The live key of an ``Authorization`` header; 401 without one."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "unauthorized",
                           "missing bearer token: send 'Authorization: Bearer <key>'")
        # A cached key is answered on the event loop; only a miss needs the database (a
        # short call, so Starlette's thread pool rather than the database threads).
        key = self._cached(token) or await run_in_threadpool(self._verify, token)
        if key is None:
            raise ApiError(401, "unauthorized", "unknown, revoked or expired API key")
        return key


class RequireScope:
    """Route middleware: authenticate the request, then require the key to hold ``needs``."""

    def __init__(self, app: ASGIApp, *, needs: str) -> None:
        self.app = app
        self.needs = needs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = scope["state"]
        authorization = Headers(scope=scope).get("authorization", "")
        key = await state["api_keys"].authenticate(authorization)
        if self.needs not in key.scopes:
            raise ApiError(403, "missing_scope", f"this route needs the '{self.needs}' scope",
                           {"required": self.needs, "granted": list(key.scopes)})
        state["api_key"] = key
        await self.app(scope, receive, send)


def api_key(request: Request) -> ApiKey:
    """The key the request was authenticated with (routes that declare a scope)."""
    return request.state.api_key


def access_context(key: ApiKey, context=None) -> AccessContext:
    """The caller: the key's instance and user, plus the conversation context the request
    adds. There is no way to name another user."""
    return AccessContext(
        instance_key=key.instance_key,
        user_id=key.user_id,
        session_key=getattr(context, "session_key", None),
        group_room_id=getattr(context, "group_room_id", None),
        channel_thread_key=getattr(context, "channel_thread_key", None),
        channel_type=getattr(context, "channel_type", None),
    )
