"""Request and response shapes of the HTTP API (pydantic; they also make /openapi.json).

Requests are strict: unknown fields, wrong types and out-of-range values are errors, never
coerced or ignored. Responses wrap every memory so an agent cannot mistake stored text for
instructions: ``trust`` is always ``"untrusted-data"`` and the text sits in ``content``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

UNTRUSTED = "untrusted-data"
Visibility = Literal["private", "team", "workspace", "channel"]
AssertionType = Literal["fact", "preference", "decision", "constraint", "procedure"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class CallerContext(Strict):
    """Conversation context a request may add. The user always comes from the API key."""

    session_key: str | None = Field(None, alias="sessionKey", min_length=1, max_length=200)
    group_room_id: str | None = Field(None, alias="groupRoomId", min_length=1, max_length=200)
    channel_thread_key: str | None = Field(None, alias="channelThreadKey", min_length=1,
                                           max_length=200)
    channel_type: str | None = Field(None, alias="channelType", min_length=1, max_length=64)


class SearchParams(CallerContext):
    """Query-string parameters: text by nature, so numbers are parsed (lax), unknown names
    still rejected."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    query: str = Field(min_length=1, max_length=2000)
    limit: int = Field(6, ge=1, le=50)
    scope: Visibility | None = Field(None, description="Only this visibility scope.")


class MemoryCreate(Strict):
    content: str = Field(min_length=1, description="The memory text (size limit applies).")
    visibility: Visibility | None = Field(
        None, description="Omitted: private, or the team when the user shares with the team.")
    explicit_private: bool = Field(False, alias="explicitPrivate")
    subject_refs: dict[str, str | int | float] = Field(default_factory=dict, alias="subjectRefs")
    title: str | None = Field(None, max_length=300)
    assertion_type: AssertionType = Field("fact", alias="assertionType")
    context: CallerContext | None = None


class ContextSearch(Strict):
    query: str = Field(min_length=1, max_length=2000)
    depth: Literal["normal", "deep"] = "normal"
    intent: Literal["answer", "wiki_synthesis"] | None = None
    limit: int | None = Field(None, ge=1, le=50)
    context: CallerContext | None = None


class InjectedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    assertion_ids: list[str] = Field(alias="assertionIds", min_length=1, max_length=100)
    context: CallerContext | None = None


class CitedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    response_text: str = Field(alias="responseText", min_length=1, max_length=100_000)


class ReembedRequest(Strict):
    limit: int = Field(200, ge=1, le=5000)


# --- responses ---------------------------------------------------------------------------
class Audience(BaseModel):
    kind: Visibility
    key: str


class MemoryOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    score: float | None = None
    visibility: Visibility
    memory_scope: str = Field(serialization_alias="memoryScope")
    source_type: str = Field(serialization_alias="sourceType")
    subject_refs: dict[str, Any] = Field(serialization_alias="subjectRefs")
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    created_at: str = Field(serialization_alias="createdAt")


class SearchResponse(BaseModel):
    results: list[MemoryOut]


class StoreResponse(BaseModel):
    id: str
    audience: Audience
    deduplicated: bool
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    assertion_status: str | None = Field(None, serialization_alias="assertionStatus")


class ContextItemOut(BaseModel):
    id: str
    kind: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    score: float | None = None
    found_by: list[str] = Field(default_factory=list, serialization_alias="foundBy")
    details: dict[str, Any] = Field(default_factory=dict)


class ContextSearchResponse(BaseModel):
    results: list[ContextItemOut]


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody
