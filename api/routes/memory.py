"""/api/v1/memory: explicit write and exact retrieval (semantic search over the same
path is ``api.routes.retrieval``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from api.auth import api_key, caller_of, with_caller, writer_header
from api.errors import ApiError
from api.operation import API, READ, WRITE, Operation, Section
from api.responses import model_response
from api.schemas.common import ExactRead, MemoryOut, memory_out
from api.schemas.memory import (
    CorrectionResponse,
    ForgetResponse,
    MemoryCorrection,
    MemoryCreate,
    MemoryListParams,
    MemoryListResponse,
    StoreResponse,
)
from api.threads import with_connection
from memory_platform.features.maintenance.corrections import correct_memory
from memory_platform.features.maintenance.erasure import forget_memory
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.memories import get_memory, list_memories, parse_uuid
from memory_platform.shared.trust import write_trust_class, written_by_agent


async def get_one(request: Request, params: ExactRead) -> MemoryOut:
    record = await with_caller(request, params, get_memory, request.path_params["memory_id"])
    return memory_out(record)


async def create(request: Request, body: MemoryCreate) -> Response:
    """201 with the new memory; 200 when the same content was already stored. The write's
    trust class follows the writer (``trust.write_trust_class``)."""
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
            subject=body.subject, predicate=body.predicate, title=body.title,
            trust_class=write_trust_class(caller_of(key), ctx,
                                          declared_agent=writer is not None),
            metadata=metadata, occurred_at=body.occurred_at, valid_until=body.valid_until,
            valid_from=body.valid_from,
        )
        return store_memory(conn, state.settings, ctx, memory, embedder=state.embedder,
                            enforce_quota=True)

    stored = await with_caller(request, body.context, write)
    response = StoreResponse(id=str(stored.id), audience=stored.audience.as_dict(),
                             deduplicated=stored.deduplicated,
                             assertion_id=str(stored.assertion_id) if stored.assertion_id else None,
                             assertion_status=stored.assertion_status)
    return model_response(response, status_code=200 if stored.deduplicated else 201)


async def list_route(request: Request, params: MemoryListParams) -> MemoryListResponse:
    """The memories the caller may recall, newest first, narrowed by the search's filters
    (``retrieval.memories.list_memories``): an export, a store over the platform."""
    criteria = params.criteria()
    page = await with_caller(request, params, lambda conn, ctx: list_memories(
        conn, ctx, criteria=criteria, ids=params.id_list(), limit=params.limit,
        cursor=params.cursor))
    return MemoryListResponse(memories=[memory_out(r) for r in page.records],
                              next_cursor=page.next_cursor)


async def forget(request: Request) -> ForgetResponse:
    """A person deletes one of their own memories and what was derived only from it
    (``erasure.forget_memory``). Only with their own user key: an agent or runtime key
    cannot (it may write a correction, which waits for review). Someone else's memory and an
    unknown id answer the same 404."""
    key = api_key(request)
    if not key.person or not key.user_id:
        raise ApiError(403, "person_required",
                       "only the memory's owner, with their own user key, deletes a memory: "
                       "an agent or runtime key cannot", {"keyKind": key.kind})
    memory_id = parse_uuid(request.path_params["memory_id"])
    report = await with_connection(request, forget_memory, request.state.settings,
                                   key.instance_key, key.user_id, memory_id)
    return ForgetResponse(memory_id=str(memory_id), erasure_id=str(report.id),
                          removed={t: n for t, n in report.removed.items() if n},
                          total_removed=report.total_removed)


async def correct(request: Request, body: MemoryCorrection) -> CorrectionResponse:
    """Correct one of the caller's own memories (``corrections.correct_memory``): a person's
    correction supersedes it at once; an agent's (agent key, or ``X-Memory-Writer: agent``)
    is proposed and waits for review."""
    key, state, writer = api_key(request), request.state, writer_header(request)
    memory_id = parse_uuid(request.path_params["memory_id"])
    caller = caller_of(key)
    metadata = {"writtenVia": "api", "apiKeyId": str(key.id), "keyKind": key.kind}

    def run(conn, ctx):
        return correct_memory(
            conn, state.settings, ctx, memory_id, body.content,
            trust_class=write_trust_class(caller, ctx, declared_agent=writer is not None),
            by_agent=written_by_agent(caller, declared=writer is not None),
            metadata=metadata, own_metadata=body.metadata, embedder=state.embedder)

    done = await with_caller(request, body.context, run)
    return CorrectionResponse(
        id=str(done.memory_id), status=done.status, corrected_id=str(done.corrected_id),
        assertion_id=str(done.assertion_id) if done.assertion_id else None,
        conflict_id=str(done.conflict_id) if done.conflict_id else None)


ROUTES = (Section(API, (
    Operation("POST", "/memory", create,
              "Store a memory (201 created, 200 when deduplicated)", WRITE,
              body=MemoryCreate, response=StoreResponse, status=201),
    Operation("GET", "/memories", list_route,
              "List the memories you may recall, newest first, with their metadata", READ,
              query=MemoryListParams, response=MemoryListResponse),
    Operation("GET", "/memory/{memory_id}", get_one, "Exact retrieval of one memory",
              READ, query=ExactRead, response=MemoryOut),
    Operation("POST", "/memory/{memory_id}/correction", correct,
              "Correct one of your own memories (an agent's correction waits for review)",
              WRITE, body=MemoryCorrection, response=CorrectionResponse,
              errors=((404, "not_found: no memory of yours with this id"),
                      (409, "conflict: the memory was already superseded"))),
    Operation("DELETE", "/memory/{memory_id}", forget,
              "Delete one of your own memories and what was derived only from it", WRITE,
              response=ForgetResponse,
              errors=((403, "person_required: an agent or runtime key cannot delete"),
                      (404, "not_found: no memory of yours with this id"),
                      (409, "a Dream is running: delete again when it has finished"))),
)),)
