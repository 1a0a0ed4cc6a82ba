"""/api/v1/context: the unified retrieval facade (search, then exact get)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from api.auth import with_caller
from api.operation import API, READ, Operation, Section
from api.schemas.common import ExactRead
from api.schemas.context import ContextItemOut, ContextSearch, ContextSearchResponse
from memory_platform.features.context import ContextItem, context_get, context_search
from memory_platform.features.retrieval.question import embed_question


def item_out(item: ContextItem, with_score: bool = True) -> ContextItemOut:
    return ContextItemOut(id=item.id, kind=item.kind, content=item.content,
                          score=item.score if with_score else None, found_by=item.found_by,
                          details=item.details)


async def search(request: Request, body: ContextSearch) -> ContextSearchResponse:
    state = request.state
    criteria = body.criteria()  # checked before the query is embedded
    subjects = body.subjects()
    question = await run_in_threadpool(embed_question, state.embedder, body.query)
    items = await with_caller(
        request, body.context,
        lambda conn, ctx: context_search(
            conn, state.settings, ctx, body.query, depth=body.depth, intent=body.intent,
            limit=body.limit, question=question, stamper=state.stamper, criteria=criteria,
            subject_refs=subjects))
    return ContextSearchResponse(results=[item_out(i) for i in items])


async def get_one(request: Request, params: ExactRead) -> ContextItemOut:
    item = await with_caller(request, params, context_get, request.path_params["item_id"])
    return item_out(item, with_score=False)


ROUTES = (Section(API, (
    Operation("POST", "/context/search", search,
              "Unified search: assertions, memories, session history, graph", READ,
              body=ContextSearch, response=ContextSearchResponse),
    Operation("GET", "/context/{item_id:path}", get_one,
              "One context item with its provenance", READ, query=ExactRead,
              response=ContextItemOut),
)),)
