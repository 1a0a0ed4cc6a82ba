"""What the inspector's JSON endpoints (under ``/inspector/api``) share; the endpoints live in
one module per feature (``api/inspector/<feature>.py``, each declaring its ``ROUTES``,
collected over ``memory_platform.foundation.features.FEATURES``).

Each one resolves the signed-in key to the caller's access context exactly as the REST API
does (``api.auth.with_caller``: ``memory_platform.shared.trust.resolve_context`` on the request's
connection) and calls the same domain functions: ``memory_platform.features.graph.views`` for the
graph, ``memory_platform.features.review`` for the queues and decisions,
``memory_platform.features.dreaming``
and ``api.launching`` for Dreams, ``memory_platform.shared.llm.selection`` for the model. Every POST
checks the session's CSRF token first (403 otherwise, nothing changed). Errors are the API's
one JSON error shape.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import JSONResponse

from api.inspector import guard, session


class StrictQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def dagster_base(request: Request) -> str:
    """The Dagster UI the operator opens (the dev profile serves it on loopback)."""
    return f"http://127.0.0.1:{request.state.settings.dagster_port}"


def answer(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


async def signed_post(request: Request, scope: str):
    key = await guard.json_key(request, scope)
    session.check_csrf(request, request.headers.get(session.CSRF_HEADER))
    return key
