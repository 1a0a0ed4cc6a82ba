"""Sessions: turn items in, the context graph back out (``/api/v1/sessions``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.schemas.common import UNTRUSTED, CallerContext, Strict, parse_event_time
from memory_platform.features.sessions.reads import (
    CURSOR_MAX_CHARS,
    EXPAND_DEFAULT_LIMIT,
    EXPAND_MAX_LIMIT,
    GREP_DEFAULT_LIMIT,
    GREP_MAX_LIMIT,
    PATTERN_MAX_CHARS,
)
from memory_platform.features.sessions.replay import BUDGET_MAX as REPLAY_BUDGET_MAX
from memory_platform.features.sessions.replay import BUDGET_MIN as REPLAY_BUDGET_MIN
from memory_platform.features.sessions.transcript import (
    ITEMS_DEFAULT_LIMIT,
    ITEMS_MAX_LIMIT,
    SEQ_MAX,
)

ATTACHMENTS_MAX = 32


# JSON values one turn item can hold at most (the item, its six fields, its metadata and
# every attachment's four): the value budget of an append body follows the item limit.
APPEND_VALUES_PER_ITEM = 8 + 4 + ATTACHMENTS_MAX * 5


def append_value_limit(max_items: int) -> int:
    """Most JSON values an append body with ``max_items`` items can hold (and some slack)."""
    return max_items * APPEND_VALUES_PER_ITEM + 64


class ItemAttachment(Strict):
    name: str = Field(min_length=1, max_length=500)
    media_type: str | None = Field(None, alias="mediaType", min_length=1, max_length=200)
    size_bytes: int | None = Field(None, alias="sizeBytes", ge=0, le=10**15)
    uri: str | None = Field(None, min_length=1, max_length=2000)


class ItemMetadata(Strict):
    """What a runtime knows about an item besides its text."""

    tool: str | None = Field(None, min_length=1, max_length=200, description="Tool name.")
    tool_call_id: str | None = Field(None, alias="toolCallId", min_length=1, max_length=200)
    attachments: list[ItemAttachment] | None = Field(None, max_length=ATTACHMENTS_MAX)


class SessionItemIn(Strict):
    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(description="The item's text, verbatim (MEMORY_SESSION_ITEM_MAX_CHARS "
                         "at most; tab and line breaks allowed).")
    author_user_id: str | None = Field(
        None, alias="authorUserId", min_length=1, max_length=200,
        description="Who said it (default: the acting user). A user key may name only itself; "
        "the runtime may name any user, who then takes part in the session.")
    occurred_at: datetime | None = Field(
        None, alias="occurredAt",
        description="When it was said (ISO-8601 with an offset; at most a day ahead).")
    client_item_id: str | None = Field(
        None, alias="clientItemId", min_length=1, max_length=200,
        description="The client's id of the item: a repeated append of it adds nothing.")
    metadata: ItemMetadata | None = None
    raw: dict[str, Any] | None = Field(
        None, description="The item in the client's own form (a JSON object, e.g. an agent "
        "framework's message, function call or reasoning item), kept exactly and answered by "
        "GET .../items; content stays the text the platform searches, summarises and "
        "remembers (MEMORY_SESSION_ITEM_RAW_MAX_BYTES at most, no credentials).")

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _event_time(cls, value: object) -> datetime | None:
        return parse_event_time(value, "occurredAt")


class SessionAppend(Strict):
    items: list[SessionItemIn] = Field(
        min_length=1, description="Turn items in the order they were said "
        "(MEMORY_SESSION_APPEND_MAX_ITEMS at most).")
    run_id: str | None = Field(
        None, alias="runId", min_length=1, max_length=200,
        description="The run (turn) the items belong to, open until completed; omitted: the "
        "items are a run of their own, completed at once.")
    context: CallerContext | None = Field(
        None, description="Conversation context; its sessionKey, if given, must be the "
        "path's.")


class AppendedItemOut(BaseModel):
    id: str
    client_item_id: str | None = Field(serialization_alias="clientItemId")
    seq: int
    duplicate: bool


class SessionAppendResponse(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    run_id: str | None = Field(serialization_alias="runId")
    run_index: int | None = Field(serialization_alias="runIndex")
    run_status: Literal["open", "completed"] | None = Field(serialization_alias="runStatus")
    appended: int
    duplicates: int
    items: list[AppendedItemOut]


class RunComplete(Strict):
    prompt_tokens: int | None = Field(
        None, alias="promptTokens", ge=0, le=2_000_000_000,
        description="Tokens of the run's prompt (with contextBudgetTokens: budget pressure "
        "lets flush and compaction run sooner).")
    context_budget_tokens: int | None = Field(
        None, alias="contextBudgetTokens", ge=1, le=2_000_000_000,
        description="The model context the runtime budgets against.")
    context: CallerContext | None = None


class RunCompletionResponse(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    run_id: str = Field(serialization_alias="runId")
    run_index: int = Field(serialization_alias="runIndex")
    status: Literal["completed"]
    completed_at: str = Field(serialization_alias="completedAt")
    already_completed: bool = Field(serialization_alias="alreadyCompleted")


class GrepParams(CallerContext):
    """Query string of memory_grep (numbers and booleans parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    pattern: str = Field(min_length=1, max_length=PATTERN_MAX_CHARS,
                         description="Exact text, case-insensitive (at least 3 characters).")
    all_sessions: bool = Field(
        False, alias="allSessions",
        description="Every session the caller takes part in (else: sessionKey's).")
    roles: str | None = Field(None, min_length=1, max_length=100,
                              description="Comma-separated roles: only messages of these "
                              "(summaries have no role).")
    limit: int = Field(GREP_DEFAULT_LIMIT, ge=1, le=GREP_MAX_LIMIT)
    before: str | None = Field(None, min_length=1, max_length=CURSOR_MAX_CHARS,
                               description="nextBefore of the previous page.")


class NodeParams(CallerContext):
    """Query string of memory_describe: the conversation context (runtime keys: userId)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class ExpandParams(NodeParams):
    limit: int = Field(EXPAND_DEFAULT_LIMIT, ge=1, le=EXPAND_MAX_LIMIT)
    after_seq: int | None = Field(None, alias="afterSeq", ge=-1, le=2_147_483_647,
                                  description="nextAfterSeq of the previous page.")


class GrepHitOut(BaseModel):
    id: str
    kind: Literal["message", "summary"]
    trust: Literal["untrusted-data"] = UNTRUSTED
    session_key: str = Field(serialization_alias="sessionKey")
    seq: int | None = Field(None, description="A message's position in its session.")
    first_seq: int | None = Field(None, serialization_alias="firstSeq")
    last_seq: int | None = Field(None, serialization_alias="lastSeq")
    role: str | None = None
    user_id: str | None = Field(None, serialization_alias="userId")
    snippet: str = Field(description="About 160 characters around the first match.")
    occurred_at: str | None = Field(None, serialization_alias="occurredAt")
    created_at: str = Field(serialization_alias="createdAt")


class GrepResponse(BaseModel):
    results: list[GrepHitOut]
    next_before: str | None = Field(serialization_alias="nextBefore",
                                    description="Cursor of the next (older) page; null: last.")


class SummaryRefOut(BaseModel):
    id: str
    kind: Literal["leaf", "condensed"]
    depth: int
    first_seq: int | None = Field(serialization_alias="firstSeq")
    last_seq: int | None = Field(serialization_alias="lastSeq")


class SessionNodeOut(BaseModel):
    """One node of the context graph: a message or a summary (fields of the other kind are
    null)."""

    id: str
    kind: Literal["message", "summary"]
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str | None = Field(serialization_alias="userId")
    created_at: str = Field(serialization_alias="createdAt")
    seq: int | None = None
    role: str | None = None
    run_id: str | None = Field(None, serialization_alias="runId")
    occurred_at: str | None = Field(None, serialization_alias="occurredAt")
    client_item_id: str | None = Field(None, serialization_alias="clientItemId")
    metadata: dict[str, Any] | None = None
    summaries: list[SummaryRefOut] | None = Field(
        None, description="A message: the summaries covering it, leaf first.")
    summary_kind: Literal["leaf", "condensed"] | None = Field(
        None, serialization_alias="summaryKind")
    depth: int | None = None
    first_seq: int | None = Field(None, serialization_alias="firstSeq")
    last_seq: int | None = Field(None, serialization_alias="lastSeq")
    token_count: int | None = Field(None, serialization_alias="tokenCount")
    produced_by: str | None = Field(None, serialization_alias="producedBy")
    model: str | None = None
    memory_id: str | None = Field(None, serialization_alias="memoryId")
    child_count: int | None = Field(None, serialization_alias="childCount")
    children: list[str] | None = Field(None, description="A summary: child summaries, then "
                                       "raw items directly under it (at most 100).")
    parents: list[str] | None = None


class ExpandedMessageOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    seq: int
    role: str
    user_id: str | None = Field(serialization_alias="userId")
    content: str
    run_id: str | None = Field(serialization_alias="runId")
    occurred_at: str | None = Field(serialization_alias="occurredAt")
    created_at: str = Field(serialization_alias="createdAt")


class ExpandResponse(BaseModel):
    summary_id: str = Field(serialization_alias="summaryId")
    messages: list[ExpandedMessageOut]
    child_summaries: list[SummaryRefOut] = Field(serialization_alias="childSummaries")
    next_after_seq: int | None = Field(serialization_alias="nextAfterSeq",
                                       description="afterSeq of the next page; null: last.")


class ReplayParams(CallerContext):
    """Query string of a session replay (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    budget_tokens: int | None = Field(
        None, alias="budgetTokens", ge=REPLAY_BUDGET_MIN, le=REPLAY_BUDGET_MAX,
        description="Most tokens (about four characters each) the replay holds (default: "
        "MEMORY_SESSION_CONTEXT_BUDGET_TOKENS).")


class ReplayItemOut(BaseModel):
    id: str = Field(description="message:<uuid> or summary:<uuid> (memory_describe takes it).")
    trust: Literal["untrusted-data"] = UNTRUSTED
    kind: Literal["summary", "message"]
    content: str
    tokens: int
    role: str | None = None
    user_id: str | None = Field(None, serialization_alias="userId")
    seq: int | None = None
    depth: int | None = None
    first_seq: int | None = Field(None, serialization_alias="firstSeq")
    last_seq: int | None = Field(None, serialization_alias="lastSeq")
    created_at: str = Field(serialization_alias="createdAt")


class ReplayResponse(BaseModel):
    """What a runtime sends the model for the session: the summaries standing for its
    compacted past, then the newest verbatim turns that fit the budget, in order."""

    session_key: str = Field(serialization_alias="sessionKey")
    budget_tokens: int = Field(serialization_alias="budgetTokens")
    tokens: int
    summaries: list[ReplayItemOut]
    turns: list[ReplayItemOut]
    omitted_turns: int = Field(serialization_alias="omittedTurns", description="Older turns "
                               "left out for the budget (their summaries or memory_expand "
                               "reach them).")
    omitted_summaries: int = Field(serialization_alias="omittedSummaries")


class ItemsParams(CallerContext):
    """Query string of a session's items (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    limit: int = Field(ITEMS_DEFAULT_LIMIT, ge=1, le=ITEMS_MAX_LIMIT)
    after_seq: int | None = Field(
        None, alias="afterSeq", ge=-1, le=SEQ_MAX,
        description="Forward: the items after this seq, oldest first (-1: from the start; "
        "nextAfterSeq of the previous page).")
    before_seq: int | None = Field(
        None, alias="beforeSeq", ge=0, le=SEQ_MAX,
        description="Backward: the newest items before this seq (nextBeforeSeq of the "
        "previous page). Neither cursor: the newest items.")


class ItemRemovalParams(CallerContext):
    """Query string of removing session items: the conversation context (runtime keys:
    userId, the author the runtime acts for)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class SessionItemOut(BaseModel):
    """One turn item as it was written."""

    id: str = Field(description="message:<uuid> (memory_describe takes it).")
    trust: Literal["untrusted-data"] = UNTRUSTED
    seq: int = Field(description="Its position in the session.")
    role: str
    content: str
    user_id: str | None = Field(serialization_alias="userId")
    run_id: str | None = Field(serialization_alias="runId")
    client_item_id: str | None = Field(serialization_alias="clientItemId")
    occurred_at: str | None = Field(serialization_alias="occurredAt")
    created_at: str = Field(serialization_alias="createdAt")
    metadata: dict[str, Any]
    raw: dict[str, Any] | None = Field(description="The item's raw form exactly as written "
                                       "(null: it was written without one).")
    compacted: bool = Field(description="A summary covers it (it can no longer be popped).")


class SessionItemsResponse(BaseModel):
    """A page of the session's items the caller may read, in seq order."""

    session_key: str = Field(serialization_alias="sessionKey")
    items: list[SessionItemOut]
    next_before_seq: int | None = Field(serialization_alias="nextBeforeSeq",
                                        description="Older items remain: beforeSeq of the "
                                        "next page; null: none.")
    next_after_seq: int | None = Field(serialization_alias="nextAfterSeq",
                                       description="Newer items remain: afterSeq of the next "
                                       "page; null: none (paging forward).")


class SessionItemPopped(BaseModel):
    """The newest item of yours that went, and what went with it."""

    session_key: str = Field(serialization_alias="sessionKey")
    item: SessionItemOut
    session_removed: bool = Field(serialization_alias="sessionRemoved",
                                  description="No item of anyone was left: the session "
                                  "went too (state, runs, participation).")
    erasure_id: str = Field(serialization_alias="erasureId")
    removed: dict[str, int] = Field(description="Rows removed per table (derived summaries, "
                                    "memories, ... included).")
    total_removed: int = Field(serialization_alias="totalRemoved")


class SessionItemsCleared(BaseModel):
    """Every item of yours in the session went, and what was derived from them."""

    session_key: str = Field(serialization_alias="sessionKey")
    items_removed: int = Field(serialization_alias="itemsRemoved")
    session_removed: bool = Field(serialization_alias="sessionRemoved",
                                  description="No item of anyone was left: the session "
                                  "went too (state, runs, participation).")
    erasure_id: str | None = Field(serialization_alias="erasureId",
                                   description="The erasure report; null: nothing of yours "
                                   "was there.")
    removed: dict[str, int]
    total_removed: int = Field(serialization_alias="totalRemoved")
