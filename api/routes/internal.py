"""/internal/memory: operator routes (admin scope, checked by the auth middleware)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.db import with_connection
from api.requests import read_json
from api.schemas import ReembedRequest
from memory_platform.operator_status import memory_status


async def status(request: Request) -> JSONResponse:
    key = request.state.api_key
    return JSONResponse(await with_connection(request, memory_status, key.instance_key))


async def reembed(request: Request) -> JSONResponse:
    from memory_platform.projection.reembed import reembed_backfill

    body = await read_json(request, ReembedRequest)
    result = await with_connection(request, reembed_backfill, request.app.state.settings,
                                   limit=body.limit, embedder=request.app.state.embedder)
    return JSONResponse(result.as_dict())


routes = [
    Route("/internal/memory/status", status, methods=["GET"]),
    Route("/internal/memory/reembed", reembed, methods=["POST"]),
]
