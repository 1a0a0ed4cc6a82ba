"""Who may open what in the inspector: the signed-in key and the scope each view needs.

graph: ``memory:read``; review: ``memory:review``; Dreams and the combined all-scopes graph
view: ``admin``; settings: a person with a user id (no runtime or agent key). A page request
without a session is redirected to the sign-in page; a JSON request gets 401.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse

from api.errors import ApiError
from api.inspector import session
from memory_platform.features.apikeys import ApiKey

READ, REVIEW, ADMIN = "memory:read", "memory:review", "admin"
PAGE_SCOPES = {"graph": READ, "review": REVIEW, "dreams": ADMIN}


def path_of(request: Request, name: str, **params: str) -> str:
    """The path of the named route (its root path included): redirects and links are paths,
    never URLs built from the request's ``Host`` header, which the client chooses."""
    return request.url_for(name, **params).path


def redirect(request: Request, name: str, query: str = "") -> RedirectResponse:
    """303 to the named inspector page, as a relative ``Location``."""
    return RedirectResponse(path_of(request, name) + query, status_code=303)


def login_redirect(request: Request) -> RedirectResponse:
    return redirect(request, "inspector:login")


async def page_key(request: Request) -> ApiKey | None:
    return await session.session_key(request)


async def json_key(request: Request, scope: str | None = None) -> ApiKey:
    key = await session.session_key(request)
    if key is None:
        raise ApiError(401, "unauthorized", "sign in to the inspector first")
    if scope is not None:
        require(key, scope)
    return key


def require(key: ApiKey, scope: str) -> None:
    if scope not in key.scopes:
        raise ApiError(403, "missing_scope", f"this view needs the '{scope}' scope",
                       {"required": [scope], "granted": list(key.scopes)})


def is_person(key: ApiKey) -> bool:
    return bool(key.user_id) and not key.runtime and not key.agent


def views_of(key: ApiKey) -> list[str]:
    """The inspector pages the key may open, in top-bar order."""
    pages = [name for name, scope in PAGE_SCOPES.items() if scope in key.scopes]
    if is_person(key):
        pages.append("settings")
    return pages
