"""GET /api/v1/memory: semantic search over the memories the caller may see."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from api.auth import with_caller
from api.operation import API, READ, Operation, Section
from api.schemas.common import memory_out
from api.schemas.retrieval import SearchParams, SearchResponse
from memory_platform.features.retrieval.question import embed_question
from memory_platform.features.retrieval.search import search_memories


async def search(request: Request, params: SearchParams) -> SearchResponse:
    state = request.state
    criteria = params.criteria()  # checked before the query is embedded
    subjects = params.subjects()
    question = await run_in_threadpool(embed_question, state.embedder, params.query)
    hits = await with_caller(
        request, params,
        lambda conn, ctx: search_memories(
            conn, state.settings, ctx, params.query, limit=params.limit,
            scopes=(params.scope,) if params.scope else None, question=question,
            stamper=state.stamper, criteria=criteria, min_score=params.min_score,
            subject_refs=subjects))
    return SearchResponse(results=[memory_out(h) for h in hits])


ROUTES = (Section(API, (
    Operation("GET", "/memory", search, "Semantic search over visible memories",
              READ, query=SearchParams, response=SearchResponse),
)),)
