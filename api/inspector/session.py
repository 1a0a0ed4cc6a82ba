"""The inspector's sign-in session and CSRF protection.

Sign-in takes an API key in a form field and verifies it exactly as bearer authentication
does (``request.state.api_keys``: shape, caches, constant-time check). It then starts a
server-side session (``memory_platform.features.inspector_sessions``, migration 0029): the cookie
holds
a random session secret, never the key, so

* a leaked cookie opens no REST route (the secret is not an API key, and the REST API reads
  no cookie) and lives at most ``inspector_session_hours``;
* signing out revokes the session in the database: the old cookie stops working even where
  a copy of it survives;
* every request looks the session up joined with its key, so revoking the key ends its
  sessions at once (no key cache in between).

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's request
carries it), ``Path=/inspector``, and ``Secure`` when the request came over https (uvicorn
takes ``X-Forwarded-Proto`` from the proxies it trusts) or ``api_public_url`` is https (a TLS
proxy that forwards nothing).

CSRF: every POST (forms and the page scripts' ``fetch``) must carry a token that is an
HMAC-SHA256 keyed by the session secret (which the page's scripts cannot read), compared in
constant time (the ``csrf_token`` form field or the ``X-CSRF-Token`` header); a POST without
it, or with a foreign ``Origin``, gets 403 and changes nothing. The token is bound to the
session and needs no server state of its own. Neither the key nor the secret is ever logged.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import Response

from api.errors import ApiError
from api.threads import with_connection
from memory_platform.features import inspector_sessions
from memory_platform.features.apikeys import ApiKey

COOKIE = "mp_inspector"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
PATH = "/inspector"
_LABEL = b"memory-platform inspector csrf v2"
_RESOLVED = "inspector_session_key"


def csrf_token(secret: str) -> str:
    """HMAC-SHA256 keyed by the session secret: computable only by whoever holds it (the
    HttpOnly cookie no script or other site reads), the same in every worker."""
    return hmac.new(secret.encode(), _LABEL, hashlib.sha256).hexdigest()


def session_token(request: Request) -> str | None:
    """The session secret the request's cookie carries (not checked)."""
    value = request.cookies.get(COOKIE)
    return value or None


async def session_key(request: Request) -> ApiKey | None:
    """The live key of the request's live session, else None (looked up once a request)."""
    resolved = getattr(request.state, _RESOLVED, False)
    if resolved is not False:
        return resolved
    secret = session_token(request)
    key = None
    if secret is not None and inspector_sessions.well_formed(secret):
        found = await with_connection(request, inspector_sessions.live, secret)
        key = found.key if found else None
    setattr(request.state, _RESOLVED, key)
    if key is not None:
        request.state.api_key = key
    return key


async def sign_in(request: Request, token: str, response: Response) -> None:
    """Verify the API key of a sign-in form (:class:`ApiError` 401 like bearer
    authentication otherwise) and give ``response`` the cookie of a new session."""
    key = await request.state.api_keys.authenticate(f"Bearer {token.strip()}")
    hours = request.state.settings.inspector_session_hours
    secret, _ = await with_connection(request, inspector_sessions.start, key,
                                      timedelta(hours=hours))
    response.set_cookie(COOKIE, secret, max_age=int(hours * 3600), path=PATH, httponly=True,
                        samesite="strict", secure=_secure(request))


async def sign_out(request: Request, response: Response) -> None:
    """Revoke the request's session in the database and clear its cookie."""
    secret = session_token(request)
    if secret is not None:
        await with_connection(request, inspector_sessions.revoke, secret)
    clear_session(response, request)


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(COOKIE, path=PATH, httponly=True, samesite="strict",
                           secure=_secure(request))


def _secure(request: Request) -> bool:
    public = request.state.settings.api_public_url or ""
    return request.url.scheme == "https" or public.lower().startswith("https://")


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return origin == f"{request.url.scheme}://{request.url.netloc}"


def check_csrf(request: Request, sent: str | None) -> None:
    """403 unless ``sent`` is the session's CSRF token and the request is same-origin."""
    secret = session_token(request)
    expected = csrf_token(secret) if secret else ""
    if (not secret or not sent or not _same_origin(request)
            or not hmac.compare_digest(expected.encode(), sent.encode())):
        raise ApiError(403, "csrf_failed", "missing or invalid CSRF token: reload the page")


def check_login_origin(request: Request) -> None:
    """The sign-in form is posted from this origin only (a login CSRF guard)."""
    if not _same_origin(request):
        raise ApiError(403, "csrf_failed", "sign-in from another origin")
