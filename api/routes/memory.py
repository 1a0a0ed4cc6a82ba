"""/api/v1/memory: semantic search, exact retrieval, explicit write."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from api.auth import api_key, with_caller, write_trust_class, writer_header
from api.responses import model_response
from api.schemas import (
    ActingUser,
    MemoryCreate,
    MemoryOut,
    SearchParams,
    SearchResponse,
    StoreResponse,
)
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.retrieval.memories import MemoryRecord, get_memory
from memory_platform.retrieval.question import embed_question
from memory_platform.retrieval.search import MemoryHit, search_memories


def memory_out(item: MemoryHit | MemoryRecord) -> MemoryOut:
    is_hit = isinstance(item, MemoryHit)
    return MemoryOut(
        id=str(item.memory_id if is_hit else item.id),
        content=item.content,
        score=item.score if is_hit else None,
        visibility=item.visibility_scope,
        memory_scope=item.memory_scope,
        source_type=item.source_type,
        subject_refs=item.subject_refs,
        assertion_id=str(item.assertion_id) if item.assertion_id else None,
        created_at=item.created_at.isoformat(),
        occurred_at=item.occurred_at.isoformat() if item.occurred_at else None,
    )


async def search(request: Request, params: SearchParams) -> SearchResponse:
    state = request.state
    criteria = params.criteria()  # checked before the query is embedded
    question = await run_in_threadpool(embed_question, state.embedder, params.query)
    hits = await with_caller(
        request, params,
        lambda conn, ctx: search_memories(
            conn, state.settings, ctx, params.query, limit=params.limit,
            scopes=(params.scope,) if params.scope else None, question=question,
            stamper=state.stamper, criteria=criteria))
    return SearchResponse(results=[memory_out(h) for h in hits])


async def get_one(request: Request, params: ActingUser) -> MemoryOut:
    record = await with_caller(request, params, get_memory, request.path_params["memory_id"])
    return memory_out(record)


async def create(request: Request, body: MemoryCreate) -> Response:
    """201 with the new memory; 200 when the same content was already stored. The write's
    trust class follows the writer (``api.auth.write_trust_class``)."""
    key, state, writer = api_key(request), request.state, writer_header(request)
    metadata = {**(body.metadata or {}), "writtenVia": "api", "apiKeyId": str(key.id),
                "keyKind": key.kind}
    if writer:
        metadata["writer"] = writer

    def write(conn, ctx):
        memory = MemoryWrite(
            content=body.content, source_type="fact", memory_class="explicit",
            visibility=body.visibility, explicit_private=body.explicit_private,
            subject_refs=body.subject_refs, assertion_type=body.assertion_type,
            title=body.title, trust_class=write_trust_class(key, ctx, writer),
            metadata=metadata, occurred_at=body.occurred_at,
        )
        return store_memory(conn, state.settings, ctx, memory, embedder=state.embedder,
                            enforce_quota=True)

    stored = await with_caller(request, body.context, write)
    response = StoreResponse(id=str(stored.id), audience=stored.audience.as_dict(),
                             deduplicated=stored.deduplicated,
                             assertion_id=str(stored.assertion_id) if stored.assertion_id else None,
                             assertion_status=stored.assertion_status)
    return model_response(response, status_code=200 if stored.deduplicated else 201)
