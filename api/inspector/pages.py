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

import jinja2
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from api.errors import ApiError
from api.inspector import guard, session
from api.threads import with_connection
from memory_platform.apikeys import ApiKey, well_formed
from memory_platform.users import get_user, set_sharing

TEMPLATES = Jinja2Templates(env=jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"), autoescape=True))
TITLES = {"graph": "Graph", "review": "Review", "dreams": "Dreams", "settings": "My settings"}
MAX_FORM_BYTES = 4096


def _render(request: Request, name: str, key: ApiKey | None, status: int = 200,
            **context: Any) -> Response:
    token = session.session_token(request)
    base = {"key": key, "csrf": session.csrf_token(token) if (token and key) else "",
            "views": guard.views_of(key) if key else [], "titles": TITLES,
            "is_admin": bool(key and guard.ADMIN in key.scopes)}
    return TEMPLATES.TemplateResponse(request, name, {**base, **context}, status_code=status)


async def _form(request: Request) -> dict[str, str]:
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > MAX_FORM_BYTES):
        raise ApiError(413, "payload_too_large", "form too large")
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        raise ApiError(415, "unsupported_media_type", "send the inspector's form")
    async with request.form(max_files=0, max_fields=10, max_part_size=MAX_FORM_BYTES) as form:
        return {k: v for k, v in form.items() if isinstance(v, str)}


async def index(request: Request) -> Response:
    key = await guard.page_key(request)
    if key is None:
        return guard.login_redirect(request)
    views = guard.views_of(key)
    target = views[0] if views else "settings"
    return RedirectResponse(str(request.url_for(f"inspector:{target}")), status_code=303)


async def login_page(request: Request) -> Response:
    return _render(request, "login.html", None, error=None)


async def login(request: Request) -> Response:
    session.check_login_origin(request)
    form = await _form(request)
    token = form.get("api_key", "").strip()
    if not token or not well_formed(token):
        return _render(request, "login.html", None, status=401,
                       error="That is not an API key of this platform.")
    try:
        await session.verify_key(request, token)
    except ApiError:
        return _render(request, "login.html", None, status=401,
                       error="Unknown, revoked or expired API key.")
    response = RedirectResponse(str(request.url_for("inspector:index")), status_code=303)
    session.set_session(response, request, token)
    return response


async def logout(request: Request) -> Response:
    form = await _form(request)
    session.check_csrf(request, form.get(session.CSRF_FIELD))
    response = RedirectResponse(str(request.url_for("inspector:login")), status_code=303)
    session.clear_session(response, request)
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
    return RedirectResponse(str(request.url_for("inspector:settings")) + "?saved=1",
                            status_code=303)
