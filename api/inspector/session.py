"""The inspector's sign-in session and CSRF protection.

Sign-in takes an API key in a form field and verifies it exactly as bearer authentication
does (``request.state.api_keys``: shape, caches, constant-time check, revocation within
``api_key_cache_seconds``). The key is then kept in a cookie that is

* ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's request carries
  it), ``Path=/inspector`` (the REST API never sees it as a credential), ``Secure`` when the
  request came over https;
* re-verified on every request, so a revoked key ends the session at once (key cache off)
  or within the cache time.

CSRF: every POST (forms and the page scripts' ``fetch``) must carry a token that is an
HMAC-SHA256 keyed by the session's key (a secret the page's scripts cannot read), compared in
constant time (the ``csrf_token`` form field or the ``X-CSRF-Token`` header); a POST without
it, or with a foreign ``Origin``, gets 403 and changes nothing. The token is bound to the key
(useless with another session) and needs no server state, so every worker process checks
it alike.
The key is never logged or written anywhere else.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request
from starlette.responses import Response

from api.errors import ApiError
from memory_platform.apikeys import ApiKey

COOKIE = "mp_inspector"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
PATH = "/inspector"
MAX_AGE = 8 * 3600
_LABEL = b"memory-platform inspector csrf v1"


def csrf_token(token: str) -> str:
    """HMAC-SHA256 keyed by the session's secret key: computable only by whoever holds the
    key (the HttpOnly cookie no script or other site reads), the same in every worker."""
    return hmac.new(token.encode(), _LABEL, hashlib.sha256).hexdigest()


def session_token(request: Request) -> str | None:
    value = request.cookies.get(COOKIE)
    return value or None


async def session_key(request: Request) -> ApiKey | None:
    """The live key of the request's session cookie, else None."""
    token = session_token(request)
    if token is None:
        return None
    try:
        key = await request.state.api_keys.authenticate(f"Bearer {token}")
    except ApiError:
        return None
    request.state.api_key = key
    return key


async def verify_key(request: Request, token: str) -> ApiKey:
    """The live key of a sign-in form (401 like bearer authentication otherwise)."""
    return await request.state.api_keys.authenticate(f"Bearer {token.strip()}")


def set_session(response: Response, request: Request, token: str) -> None:
    response.set_cookie(COOKIE, token.strip(), max_age=MAX_AGE, path=PATH, httponly=True,
                        samesite="strict", secure=request.url.scheme == "https")


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict",
                           secure=request.url.scheme == "https")


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin == f"{request.url.scheme}://{request.url.netloc}"


def check_csrf(request: Request, sent: str | None) -> None:
    """403 unless ``sent`` is the session's CSRF token and the request is same-origin."""
    token = session_token(request)
    expected = csrf_token(token) if token else ""
    if (not token or not sent or not _same_origin(request)
            or not hmac.compare_digest(expected.encode(), sent.encode())):
        raise ApiError(403, "csrf_failed", "missing or invalid CSRF token: reload the page")


def check_login_origin(request: Request) -> None:
    """The sign-in form is posted from this origin only (a login CSRF guard)."""
    if not _same_origin(request):
        raise ApiError(403, "csrf_failed", "sign-in from another origin")
