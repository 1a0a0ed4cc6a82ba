"""/api/v1/feedback: the agent runtime reports what it injected and what it answered."""

from __future__ import annotations

from uuid import UUID

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.auth import access_context, require
from api.db import with_connection
from api.errors import ApiError
from api.requests import read_json
from api.schemas import CitedFeedback, InjectedFeedback
from memory_platform.retrieval.feedback import record_response, record_visible_injection


def _uuids(values: list[str]) -> list[UUID]:
    try:
        return [UUID(v) for v in values]
    except ValueError as exc:
        raise ApiError(400, "validation_error", "assertionIds must be assertion UUIDs",
                       [{"field": "assertionIds", "problem": str(exc)}]) from exc


async def injected(request: Request) -> JSONResponse:
    key = require(request, "memory:write")
    body = await read_json(request, InjectedFeedback)
    ctx = access_context(key, body.context)
    ids = _uuids(body.assertion_ids)
    counted, new = await with_connection(request, record_visible_injection, ctx, ids,
                                         run_id=body.run_id)
    return JSONResponse({"runId": body.run_id, "counted": counted, "recorded": new,
                         "ignored": len(set(ids)) - counted})


async def cited(request: Request) -> JSONResponse:
    key = require(request, "memory:write")
    body = await read_json(request, CitedFeedback)
    cited_ids = await with_connection(
        request, record_response, key.instance_key, run_id=body.run_id,
        response_text=body.response_text, settings=request.app.state.settings,
    )
    return JSONResponse({"runId": body.run_id, "cited": [str(i) for i in cited_ids]})


routes = [
    Route("/api/v1/feedback/injected", injected, methods=["POST"]),
    Route("/api/v1/feedback/cited", cited, methods=["POST"]),
]
