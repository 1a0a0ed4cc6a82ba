"""/api/v1/sessions: append turn items, complete runs, and read the context graph back
(``memory_grep``, ``memory_describe``, ``memory_expand``). Thin handlers over
``memory_platform.features.sessions``; the caller's context is resolved on the request's connection
(``with_caller``), so session participation and channel membership are checked before
anything is read or written, in the same transaction as the work."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from api.auth import api_key, caller_of, with_caller, writer_header
from api.errors import ApiError
from api.input import refused_character
from api.operation import API, READ, WRITE, Operation, Section
from api.responses import model_response
from api.schemas.common import CallerContext
from api.schemas.sessions import (
    AppendedItemOut,
    ExpandedMessageOut,
    ExpandParams,
    ExpandResponse,
    GrepHitOut,
    GrepParams,
    GrepResponse,
    ItemRemovalParams,
    ItemsParams,
    NodeParams,
    ReplayItemOut,
    ReplayParams,
    ReplayResponse,
    RunComplete,
    RunCompletionResponse,
    SessionAppend,
    SessionAppendResponse,
    SessionItemOut,
    SessionItemPopped,
    SessionItemsCleared,
    SessionItemsResponse,
    SessionNodeOut,
    SummaryRefOut,
    append_value_limit,
)
from memory_platform.features.sessions.items import TurnItem, append_items, complete_run
from memory_platform.features.sessions.reads import (
    MessageNode,
    SummaryNode,
    SummaryRef,
    describe,
    expand,
    grep,
)
from memory_platform.features.sessions.replay import replay
from memory_platform.features.sessions.transcript import (
    TranscriptItem,
    clear_items,
    pop_item,
    read_items,
)
from memory_platform.shared.trust import written_by_agent

KEY_MAX_CHARS = 200


def _path_key(request: Request, name: str, field: str) -> str:
    """A key from the path (already percent-decoded): 1-200 characters, not blank, no
    control or invisible character (the identifier rule of every other key)."""
    value = request.path_params[name]
    if not value.strip() or len(value) > KEY_MAX_CHARS:
        raise ApiError(400, "invalid_path_key",
                       f"{field} in the path must be 1-{KEY_MAX_CHARS} characters, not blank",
                       {"field": field})
    char = refused_character(value, free_text=False)
    if char is not None:
        raise ApiError(400, "invalid_characters",
                       f"{field} in the path contains the character U+{ord(char):04X}; keys "
                       "take no control or invisible characters",
                       {"field": field, "character": f"U+{ord(char):04X}"})
    return value


def _in_session(context: CallerContext | None, session_key: str) -> CallerContext:
    """The request's context with the path's session: a different sessionKey in the body is
    a contradiction, not a choice."""
    if context is None:
        return CallerContext(session_key=session_key)
    if context.session_key is not None and context.session_key != session_key:
        raise ApiError(400, "session_key_mismatch",
                       "context.sessionKey differs from the session in the path; omit it or "
                       "send the same key", {"field": "context.sessionKey"})
    return context.model_copy(update={"session_key": session_key})


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


async def append(request: Request, body: SessionAppend) -> Response:
    """201 with the appended items; 200 when every item was already stored. An agent key or
    ``X-Memory-Writer: agent`` marks the run agent-written: its turns are not a person's own
    statements, so what is drawn from them waits for review (docs/security.md)."""
    session_key = _path_key(request, "session_key", "sessionKey")
    context = _in_session(body.context, session_key)
    key, settings, writer = api_key(request), request.state.settings, writer_header(request)
    by_agent = written_by_agent(caller_of(key), declared=writer is not None)
    items = [TurnItem(role=i.role, content=i.content, author_user_id=i.author_user_id,
                      occurred_at=i.occurred_at, client_item_id=i.client_item_id,
                      metadata=i.metadata.model_dump(by_alias=True, exclude_none=True)
                      if i.metadata is not None else None, raw=i.raw)
             for i in body.items]
    result = await with_caller(
        request, context,
        lambda conn, ctx: append_items(conn, settings, ctx, items, run_id=body.run_id,
                                       author_may_differ=key.runtime,
                                       written_by_agent=by_agent))
    response = SessionAppendResponse(
        session_key=result.session_key, run_id=result.run_id, run_index=result.run_index,
        run_status=result.run_status, appended=result.appended, duplicates=result.duplicates,
        items=[AppendedItemOut(id=f"message:{i.id}", client_item_id=i.client_item_id,
                               seq=i.seq, duplicate=i.duplicate) for i in result.items])
    return model_response(response, status_code=201 if result.appended else 200)


async def complete(request: Request, body: RunComplete) -> RunCompletionResponse:
    session_key = _path_key(request, "session_key", "sessionKey")
    run_id = _path_key(request, "run_id", "runId")
    context = _in_session(body.context, session_key)
    settings = request.state.settings
    done = await with_caller(
        request, context,
        lambda conn, ctx: complete_run(conn, settings, ctx, run_id,
                                       prompt_tokens=body.prompt_tokens,
                                       context_budget_tokens=body.context_budget_tokens))
    return RunCompletionResponse(session_key=done.session_key, run_id=done.run_id,
                                 run_index=done.run_index, status="completed",
                                 completed_at=done.completed_at.isoformat(),
                                 already_completed=done.already_completed)


async def grep_route(request: Request, params: GrepParams) -> GrepResponse:
    roles = [r.strip() for r in params.roles.split(",")] if params.roles is not None else None
    settings = request.state.settings
    page = await with_caller(
        request, params,
        lambda conn, ctx: grep(conn, ctx, params.pattern, all_sessions=params.all_sessions,
                               roles=roles, limit=params.limit, before=params.before,
                               scan_cap=settings.session_grep_scan_cap,
                               max_sessions=settings.session_grep_max_sessions))
    return GrepResponse(
        results=[GrepHitOut(id=h.id, kind=h.kind, session_key=h.session_key,
                            seq=h.first_seq if h.kind == "message" else None,
                            first_seq=h.first_seq, last_seq=h.last_seq, role=h.role,
                            user_id=h.user_id, snippet=h.snippet,
                            occurred_at=_iso(h.occurred_at),
                            created_at=h.created_at.isoformat())
                 for h in page.hits],
        next_before=page.next_before)


def _ref(ref: SummaryRef) -> SummaryRefOut:
    return SummaryRefOut(id=ref.id, kind=ref.kind, depth=ref.depth, first_seq=ref.first_seq,
                         last_seq=ref.last_seq)


def _node_out(node: MessageNode | SummaryNode) -> SessionNodeOut:
    common = {"id": node.id, "kind": node.kind, "content": node.content,
              "session_key": node.session_key, "user_id": node.user_id,
              "created_at": node.created_at.isoformat()}
    if isinstance(node, MessageNode):
        return SessionNodeOut(**common, seq=node.seq, role=node.role, run_id=node.run_id,
                              occurred_at=_iso(node.occurred_at),
                              client_item_id=node.client_item_id, metadata=node.metadata,
                              summaries=[_ref(s) for s in node.summaries])
    return SessionNodeOut(**common, summary_kind=node.summary_kind, depth=node.depth,
                          first_seq=node.first_seq, last_seq=node.last_seq,
                          token_count=node.token_count, produced_by=node.produced_by,
                          model=node.model, memory_id=node.memory_id,
                          child_count=node.child_count, children=node.children,
                          parents=node.parents)


async def describe_route(request: Request, params: NodeParams) -> SessionNodeOut:
    node_id = request.path_params["node_id"]
    node = await with_caller(request, params, describe, node_id)
    return _node_out(node)


async def expand_route(request: Request, params: ExpandParams) -> ExpandResponse:
    node_id = request.path_params["node_id"]
    found = await with_caller(
        request, params,
        lambda conn, ctx: expand(conn, ctx, node_id, limit=params.limit,
                                 after_seq=params.after_seq))
    return ExpandResponse(
        summary_id=found.summary_id,
        messages=[ExpandedMessageOut(id=m.id, seq=m.seq, role=m.role, user_id=m.user_id,
                                     content=m.content, run_id=m.run_id,
                                     occurred_at=_iso(m.occurred_at),
                                     created_at=m.created_at.isoformat())
                  for m in found.messages],
        child_summaries=[_ref(s) for s in found.child_summaries],
        next_after_seq=found.next_after_seq)


def _replay_item(item) -> ReplayItemOut:
    return ReplayItemOut(id=item.node_id, kind=item.kind, content=item.content,
                         tokens=item.tokens, role=item.role, user_id=item.user_id, seq=item.seq,
                         depth=item.depth, first_seq=item.first_seq, last_seq=item.last_seq,
                         created_at=item.created_at.isoformat())


async def replay_route(request: Request, params: ReplayParams) -> ReplayResponse:
    """The session's replay for its participants and the instance's runtime (a user key of
    someone else: 403 foreign_session)."""
    session_key = _path_key(request, "session_key", "sessionKey")
    context = _in_session(params, session_key)
    settings = request.state.settings
    found = await with_caller(request, context, lambda conn, ctx: replay(
        conn, settings, ctx, budget_tokens=params.budget_tokens))
    return ReplayResponse(session_key=found.session_key, budget_tokens=found.budget_tokens,
                          tokens=found.tokens,
                          summaries=[_replay_item(i) for i in found.summaries],
                          turns=[_replay_item(i) for i in found.turns],
                          omitted_turns=found.omitted_turns,
                          omitted_summaries=found.omitted_summaries)


def _item_out(item: TranscriptItem) -> SessionItemOut:
    return SessionItemOut(id=item.node_id, seq=item.seq, role=item.role, content=item.content,
                          user_id=item.user_id, run_id=item.run_id,
                          client_item_id=item.client_item_id,
                          occurred_at=_iso(item.occurred_at),
                          created_at=item.created_at.isoformat(), metadata=item.metadata,
                          raw=item.raw, compacted=item.compacted)


async def items_route(request: Request, params: ItemsParams) -> SessionItemsResponse:
    """The session's items as written (``transcript.read_items``), for its participants and
    the runtime acting for one (THE history rule, in SQL)."""
    session_key = _path_key(request, "session_key", "sessionKey")
    context = _in_session(params, session_key)
    page = await with_caller(request, context, lambda conn, ctx: read_items(
        conn, ctx, limit=params.limit, after_seq=params.after_seq,
        before_seq=params.before_seq))
    return SessionItemsResponse(session_key=page.session_key,
                                items=[_item_out(i) for i in page.items],
                                next_before_seq=page.next_before_seq,
                                next_after_seq=page.next_after_seq)


def _author_key(request: Request) -> None:
    """Removing session items is their author's: a user's own key or the runtime acting for
    them, never an agent key (as forgetting a memory)."""
    key = api_key(request)
    if key.agent:
        raise ApiError(403, "person_required",
                       "an agent key cannot remove session items: their author's own key, or "
                       "the runtime acting for them, can", {"keyKind": key.kind})


async def pop_route(request: Request, params: ItemRemovalParams) -> SessionItemPopped:
    """Remove the newest item of yours and what was derived from it
    (``transcript.pop_item``)."""
    _author_key(request)
    session_key = _path_key(request, "session_key", "sessionKey")
    context = _in_session(params, session_key)
    settings = request.state.settings
    done = await with_caller(request, context,
                             lambda conn, ctx: pop_item(conn, settings, ctx))
    assert done.report is not None
    return SessionItemPopped(session_key=done.session_key, item=_item_out(done.items[0]),
                             session_removed=done.session_removed,
                             erasure_id=str(done.report.id),
                             removed={t: n for t, n in done.report.removed.items() if n},
                             total_removed=done.report.total_removed)


async def clear_route(request: Request, params: ItemRemovalParams) -> SessionItemsCleared:
    """Remove every item of yours in the session and what was derived from them
    (``transcript.clear_items``)."""
    _author_key(request)
    session_key = _path_key(request, "session_key", "sessionKey")
    context = _in_session(params, session_key)
    settings = request.state.settings
    done = await with_caller(request, context,
                             lambda conn, ctx: clear_items(conn, settings, ctx))
    report = done.report
    return SessionItemsCleared(
        session_key=done.session_key, items_removed=len(done.items),
        session_removed=done.session_removed,
        erasure_id=str(report.id) if report else None,
        removed={t: n for t, n in report.removed.items() if n} if report else {},
        total_removed=report.total_removed if report else 0)


ROUTES = (Section(API, (
    Operation("GET", "/sessions/grep", grep_route,
              "memory_grep: exact, case-insensitive text search over session history "
              "(raw items and summaries) the caller may read", READ,
              query=GrepParams, response=GrepResponse),
    Operation("GET", "/sessions/nodes/{node_id}/expand", expand_route,
              "memory_expand: the raw items under a summary, in order, paged", READ,
              query=ExpandParams, response=ExpandResponse),
    Operation("GET", "/sessions/nodes/{node_id}", describe_route,
              "memory_describe: one message or summary of the context graph", READ,
              query=NodeParams, response=SessionNodeOut),
    Operation("GET", "/sessions/{session_key:path}/replay", replay_route,
              "session_replay: what a runtime sends the model for the session (summaries, "
              "then the newest turns within a token budget)", READ,
              query=ReplayParams, response=ReplayResponse),
    Operation("POST", "/sessions/{session_key:path}/runs/{run_id}/complete",
              complete, "Complete a run of a session (idempotent)", WRITE,
              body=RunComplete, response=RunCompletionResponse),
    Operation("POST", "/sessions/{session_key:path}/items", append,
              "Append turn items to a session (201; 200 when every item was a duplicate)",
              WRITE, body=SessionAppend, response=SessionAppendResponse,
              status=201,
              body_bytes=lambda s: s.session_append_max_body_bytes,
              body_values=lambda s: append_value_limit(s.session_append_max_items),
              errors=((409, "run_completed: the named run is completed (append to a new "
                            "run or without a runId); concurrent_append: another writer "
                            "stored the same client item ids meanwhile (retry)"),)),
    Operation("GET", "/sessions/{session_key:path}/items", items_route,
              "The session's items exactly as written (raw form included), in order, "
              "paged: the newest by default, afterSeq forward, beforeSeq backward", READ,
              query=ItemsParams, response=SessionItemsResponse),
    Operation("DELETE", "/sessions/{session_key:path}/items/last", pop_route,
              "Remove the newest item you wrote in the session and what was derived from it",
              WRITE, query=ItemRemovalParams, response=SessionItemPopped,
              errors=((403, "person_required: an agent key cannot remove items; "
                            "user_required: a runtime key names the author (userId)"),
                      (404, "no_items: you have no item in this session"),
                      (409, "item_compacted: a summary covers it already (clear instead); "
                            "dream_locked: a Dream is running, remove again when it has "
                            "finished"))),
    Operation("DELETE", "/sessions/{session_key:path}/items", clear_route,
              "Remove every item you wrote in the session and what was derived from them "
              "(an otherwise empty session goes too)", WRITE,
              query=ItemRemovalParams, response=SessionItemsCleared,
              errors=((403, "person_required: an agent key cannot remove items; "
                            "user_required: a runtime key names the author (userId)"),
                      (409, "dream_locked: a Dream is running: remove again when it has "
                            "finished"))),
)),)
