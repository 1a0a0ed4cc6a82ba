"""Bearer-token authentication (pure ASGI middleware) and scope checks.

Every ``/api/`` and ``/internal/`` request must carry ``Authorization: Bearer <token>`` of a
live API key; the key (its user, instance and scopes) is put into the request scope. Routes
then state the scope they need with :func:`require`; ``/internal/`` needs ``admin``. Health,
readiness, metrics and the OpenAPI document are public. Verified keys are cached for a few
seconds per process, so a revocation takes effect within ``api_key_cache_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from api.errors import ApiError, error_response
from memory_platform.access import AccessContext
from memory_platform.apikeys import ApiKey, verify_token

PROTECTED_PREFIXES = ("/api/", "/internal/")


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, pool_getter: Callable, cache_seconds: float) -> None:
        self.app = app
        self.pool_getter = pool_getter
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[float, ApiKey]] = {}

    def _cached(self, token: str) -> ApiKey | None:
        cached = self._cache.get(token)
        if cached and time.monotonic() - cached[0] < self.cache_seconds:
            return cached[1]
        return None

    def _verify(self, token: str) -> ApiKey | None:
        with self.pool_getter().connection() as conn:
            key = verify_token(conn, token)
        if key is None:
            self._cache.pop(token, None)
        else:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[token] = (time.monotonic(), key)
        return key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(PROTECTED_PREFIXES):
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            response = error_response(401, "unauthorized",
                                      "missing bearer token: send 'Authorization: Bearer <key>'")
            await response(scope, receive, send)
            return
        token = token.strip()
        # A cached key is answered on the event loop; only a miss needs the database.
        key = self._cached(token) or await run_in_threadpool(self._verify, token)
        if key is None:
            response = error_response(401, "unauthorized", "unknown, revoked or expired API key")
            await response(scope, receive, send)
            return
        if scope["path"].startswith("/internal/") and "admin" not in key.scopes:
            response = error_response(403, "missing_scope", "this route needs the 'admin' scope",
                                      {"required": "admin", "granted": list(key.scopes)})
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["api_key"] = key
        await self.app(scope, receive, send)


def require(request: Request, scope_name: str) -> ApiKey:
    """The request's key if it holds ``scope_name``; 403 saying which scope is missing."""
    key: ApiKey = request.state.api_key
    if scope_name not in key.scopes:
        raise ApiError(403, "missing_scope", f"this route needs the '{scope_name}' scope",
                       {"required": scope_name, "granted": list(key.scopes)})
    return key


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
