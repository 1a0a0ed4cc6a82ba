"""/api/v1/context: the unified retrieval facade (search, then exact get)."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import access_context, api_key
from api.schemas import ContextItemOut, ContextSearch, ContextSearchResponse
from api.threads import with_connection
from memory_platform.retrieval.context import ContextItem, context_get, context_search


def item_out(item: ContextItem, with_score: bool = True) -> ContextItemOut:
    return ContextItemOut(id=item.id, kind=item.kind, content=item.content,
                          score=item.score if with_score else None, found_by=item.found_by,
                          details=item.details)


async def search(request: Request, body: ContextSearch) -> ContextSearchResponse:
    state = request.state
    items = await with_connection(
        request, context_search, state.settings, access_context(api_key(request), body.context),
        body.query, depth=body.depth, intent=body.intent, limit=body.limit,
        embedder=state.embedder, stamper=state.stamper,
    )
    return ContextSearchResponse(results=[item_out(i) for i in items])


async def get_one(request: Request) -> ContextItemOut:
    item = await with_connection(request, context_get, access_context(api_key(request)),
                                 request.path_params["item_id"])
    return item_out(item, with_score=False)
