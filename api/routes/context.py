"""/api/v1/context: the unified retrieval facade (search, then exact get)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.auth import access_context, require
from api.db import with_connection
from api.requests import read_json
from api.responses import model_response
from api.schemas import ContextItemOut, ContextSearch, ContextSearchResponse
from memory_platform.retrieval.context import ContextItem, context_get, context_search


def item_out(item: ContextItem, with_score: bool = True) -> ContextItemOut:
    return ContextItemOut(id=item.id, kind=item.kind, content=item.content,
                          score=item.score if with_score else None, found_by=item.found_by,
                          details=item.details)


async def search(request: Request) -> Response:
    key = require(request, "memory:read")
    body = await read_json(request, ContextSearch)
    items = await with_connection(
        request, context_search, request.app.state.settings, access_context(key, body.context),
        body.query, depth=body.depth, intent=body.intent, limit=body.limit,
        embedder=request.app.state.embedder, stamper=request.app.state.stamper,
    )
    response = ContextSearchResponse(results=[item_out(i) for i in items])
    return model_response(response)


async def get_one(request: Request) -> Response:
    key = require(request, "memory:read")
    item = await with_connection(request, context_get, access_context(key),
                                 request.path_params["item_id"])
    return model_response(item_out(item, with_score=False))


routes = [
    Route("/api/v1/context/search", search, methods=["POST"]),
    Route("/api/v1/context/{item_id:path}", get_one, methods=["GET"]),
]
