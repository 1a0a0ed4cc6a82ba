"""The inspector's HTML pages: sign-in, graph, review, Dreams, my settings.

Pages are Jinja2 templates (autoescaped) with no inline script or style: each page loads its
own script from ``/inspector/static`` and reads its data from the JSON endpoints
(``api.inspector.data``), which go through the same domain functions and access context as
the REST API. The CSRF token of the session is in a ``<meta>`` element for the scripts and in
a hidden field of every form.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import jinja2
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from api.admission import receive_body
from api.errors import ApiError
from api.inspector import guard, session
from api.threads import with_connection
from memory_platform.features.apikeys import ApiKey, well_formed
from memory_platform.shared.users import get_user, set_sharing


@jinja2.pass_context
def _path_for(context: dict[str, Any], name: str, /, **params: str) -> str:
    return guard.path_of(context["request"], name, **params)


_ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
                          autoescape=True)
_ENV.globals["path_for"] = _path_for       # links are paths, never URLs built from Host
TEMPLATES = Jinja2Templates(env=_ENV)
TITLES = {"graph": "Graph", "review": "Review", "dreams": "Dreams", "settings": "My settings"}
MAX_FORM_BYTES = 4096
MAX_FORM_FIELDS = 10


def _render(request: Request, name: str, key: ApiKey | None, status: int = 200,
            **context: Any) -> Response:
    token = session.session_token(request)
    base = {"key": key, "csrf": session.csrf_token(token) if (token and key) else "",
            "views": guard.views_of(key) if key else [], "titles": TITLES,
            "is_admin": bool(key and guard.ADMIN in key.scopes)}
    return TEMPLATES.TemplateResponse(request, name, {**base, **context}, status_code=status)


async def _form(request: Request) -> dict[str, str]:
    """The inspector's urlencoded form: at most MAX_FORM_BYTES and MAX_FORM_FIELDS, received
    like every body (``api.admission.receive_body``: a body slot, a total deadline)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise ApiError(415, "unsupported_media_type", "send the inspector's form")
    raw = await receive_body(request, MAX_FORM_BYTES)
    try:
        pairs = parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                          max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ApiError(400, "invalid_form", "the form is not a valid urlencoded form") from exc
    return dict(pairs)


async def index(request: Request) -> Response:
    key = await guard.page_key(request)
    if key is None:
        return guard.login_redirect(request)
    views = guard.views_of(key)
    target = views[0] if views else "settings"
    return guard.redirect(request, f"inspector:{target}")


async def login_page(request: Request) -> Response:
    return _render(request, "login.html", None, error=None)


async def login(request: Request) -> Response:
    """Sign in: the only form read before anything is authenticated, so its requests have a
    budget of their own at the front door (``api_sign_in_max_in_flight``)."""
    session.check_login_origin(request)
    form = await _form(request)
    token = form.get("api_key", "").strip()
    if not token or not well_formed(token):
        return _render(request, "login.html", None, status=401,
                       error="That is not an API key of this platform.")
    response = guard.redirect(request, "inspector:index")
    try:
        await session.sign_in(request, token, response)
    except ApiError:
        return _render(request, "login.html", None, status=401,
                       error="Unknown, revoked or expired API key.")
    return response


async def logout(request: Request) -> Response:
    """Sign out. The session is checked from its cookie before the form is read: without a
    live one nothing is read or changed (the browser is sent to the sign-in page)."""
    if await guard.page_key(request) is None:
        response = guard.login_redirect(request)
        session.clear_session(response, request)
        return response
    form = await _form(request)
    session.check_csrf(request, form.get(session.CSRF_FIELD))
    response = guard.login_redirect(request)
    await session.sign_out(request, response)
    return response


def _page(name: str):
    scope = guard.PAGE_SCOPES[name]

    async def page(request: Request) -> Response:
        key = await guard.page_key(request)
        if key is None:
            return guard.login_redirect(request)
        if scope not in key.scopes:
            return _render(request, "forbidden.html", key, status=403, page=name,
                           needed=scope)
        return _render(request, f"{name}.html", key, page=name)

    return page


graph_page = _page("graph")
review_page = _page("review")
dreams_page = _page("dreams")


def _changed_by(key: ApiKey) -> str:
    return f"inspector key {key.token_prefix}"


async def settings_page(request: Request) -> Response:
    key = await guard.page_key(request)
    if key is None:
        return guard.login_redirect(request)
    if not guard.is_person(key):
        return _render(request, "forbidden.html", key, status=403, page="settings",
                       needed="a person's key with a user id")
    user = await with_connection(request, get_user, key.instance_key, key.user_id)
    saved = request.query_params.get("saved") == "1"
    return _render(request, "settings.html", key, page="settings", user=user, saved=saved,
                   shares=user.shares_with_team if user else True)


async def settings_save(request: Request) -> Response:
    key = await guard.page_key(request)
    if key is None:
        raise ApiError(401, "unauthorized", "sign in to the inspector first")
    form = await _form(request)
    session.check_csrf(request, form.get(session.CSRF_FIELD))
    if not guard.is_person(key):
        raise ApiError(403, "person_required",
                       "only a person may change sharing: a runtime or agent key cannot")
    choice = form.get("share")
    if choice not in ("on", "off"):
        raise ApiError(400, "validation_error", "share must be on or off",
                       [{"field": "share", "problem": "on or off"}])
    await with_connection(request, set_sharing, key.instance_key, key.user_id,
                          choice == "on", changed_by=_changed_by(key))
    return guard.redirect(request, "inspector:settings", "?saved=1")
