"""The shapes every feature's models share: strictness, the caller's conversation context,
search time ranges, the memory and audience shapes, the one error shape.

Requests are strict: unknown fields, wrong types and out-of-range values are errors, never
coerced or ignored. Responses wrap every memory so an agent cannot mistake stored text for
instructions: ``trust`` is always ``"untrusted-data"`` and the text sits in ``content``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_platform.features.memories.validation import parse_occurred_at
from memory_platform.features.memories.write_rules import caller_metadata
from memory_platform.features.retrieval.criteria import Criteria, parse_criteria
from memory_platform.features.retrieval.memories import MemoryRecord
from memory_platform.features.retrieval.ranking import MemoryHit
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import SUBJECT_REF_KEYS, AudienceKind

UNTRUSTED = "untrusted-data"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class CallerContext(Strict):
    """Conversation context a request claims. A user key acts as its own user and may name a
    channel or room only where that user is a member, a session only where the user takes
    part (403 otherwise); ``userId`` is for runtime keys only (400 from a user key)."""

    user_id: str | None = Field(
        None, alias="userId", min_length=1, max_length=200,
        description="Runtime keys only: the user the request acts for (omitted: no user, a "
        "system context).")
    session_key: str | None = Field(None, alias="sessionKey", min_length=1, max_length=200)
    group_room_id: str | None = Field(None, alias="groupRoomId", min_length=1, max_length=200)
    channel_thread_key: str | None = Field(None, alias="channelThreadKey", min_length=1,
                                           max_length=200)
    channel_type: str | None = Field(None, alias="channelType", min_length=1, max_length=64)


_OCCURRED_AFTER = ("Only memories whose event time (occurredAt) is at or after this ISO-8601 "
                   "date-time with an offset; memories without an event time never match.")


_OCCURRED_BEFORE = "Only memories whose event time (occurredAt) is before this date-time."


_CREATED_AFTER = "Only memories written at or after this ISO-8601 date-time with an offset."


_CREATED_BEFORE = "Only memories written before this ISO-8601 date-time with an offset."


class TimeRanges(BaseModel):
    """The event-time and write-time bounds of a filtered search (query string and body
    alike; parsed with the filter by ``search_criteria``)."""

    occurred_after: str | None = Field(None, alias="occurredAfter", max_length=64,
                                       description=_OCCURRED_AFTER)
    occurred_before: str | None = Field(None, alias="occurredBefore", max_length=64,
                                        description=_OCCURRED_BEFORE)
    created_after: str | None = Field(None, alias="createdAfter", max_length=64,
                                      description=_CREATED_AFTER)
    created_before: str | None = Field(None, alias="createdBefore", max_length=64,
                                       description=_CREATED_BEFORE)


def parse_event_time(value: object, field: str) -> datetime | None:
    """An ``occurredAt`` of a request: None, or an ISO-8601 string with an offset parsed
    strictly (memories.validation.parse_occurred_at); anything else is a validation error
    naming the field. The future bound is the write path's (it knows the time)."""
    if value is None:
        return None
    try:
        return parse_occurred_at(value, field=field)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None


def search_criteria(fields: Any, where: Any) -> Criteria | None:
    """The criteria of a search request's filter fields, validated by the library (an
    InvalidInput naming the field, answered 400)."""
    return parse_criteria(where, occurred_after=fields.occurred_after,
                          occurred_before=fields.occurred_before,
                          created_after=fields.created_after,
                          created_before=fields.created_before,
                          source_types=fields.source_types)


SUBJECT_REFS_HELP = ("What the conversation is about, to prefer the memories about it: "
                     "any of mandantId, documentId, taskId, moduleSlug, routePath, groupRoomId, "
                     "channelThreadKey, each a string (memories naming the same subject rank "
                     "higher; it filters nothing).")


def subject_refs_of(value: Any, field: str = "subjectRefs") -> dict[str, str] | None:
    """A request's subject refs: an object of the known keys with string values (a JSON
    string from a query string), else InvalidInput naming the field."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidInput(f"{field} is not JSON", details={"field": field}) from None
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be an object", details={"field": field})
    unknown = sorted(set(value) - set(SUBJECT_REF_KEYS))
    if unknown:
        raise InvalidInput(f"{field}: unknown subject {unknown[0]!r} (known: "
                           f"{', '.join(SUBJECT_REF_KEYS)})", details={"field": field})
    if not all(isinstance(v, str) and 0 < len(v) <= 200 for v in value.values()):
        raise InvalidInput(f"{field}: each subject is a string of 1 to 200 characters",
                           details={"field": field})
    return dict(value)


class ExactRead(CallerContext):
    """Query string of an exact read (a memory, a context item): the same conversation
    context a search accepts, checked the same way, so what a search found under a context
    can be read exactly under it (issue 32.1)."""


class Audience(BaseModel):
    kind: AudienceKind
    key: str


class MemoryOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    score: float | None = None
    visibility: AudienceKind
    memory_scope: str = Field(serialization_alias="memoryScope")
    source_type: str = Field(serialization_alias="sourceType")
    subject_refs: dict[str, Any] = Field(serialization_alias="subjectRefs")
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    created_at: str = Field(serialization_alias="createdAt")
    occurred_at: str | None = Field(
        None, serialization_alias="occurredAt",
        description="When what the memory says happened, if the writer said (null: unknown).")
    metadata: dict[str, Any] | None = Field(
        None, description="The writer's own metadata (without the platform's keys), on exact "
        "reads and listings; null in search hits.")


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody


def memory_out(item: MemoryHit | MemoryRecord) -> MemoryOut:
    """A search hit or an exact read as the API answers it."""
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
        metadata=None if is_hit else caller_metadata(item.metadata),
    )


class DreamOut(BaseModel):
    """One Dream as the listings show it (`dreaming.summary.dream_row_view`): the Dream
    list and the status report's recent Dreams."""

    model_config = ConfigDict(populate_by_name=True)
    id: str
    instance_key: str = Field(alias="instanceKey")
    partition_key: str = Field(alias="partitionKey")
    audience: Audience
    status: str
    trigger: str | None = None
    model: str | None = None
    dry_run: bool = Field(alias="dryRun")
    dagster_run_id: str | None = Field(None, alias="dagsterRunId")
    started_at: str | None = Field(None, alias="startedAt")
    finished_at: str | None = Field(None, alias="finishedAt")
    rolled_back_at: str | None = Field(None, alias="rolledBackAt")
    error: str | None = None
    diagnostics: list[str] = Field(default_factory=list,
                                   description="Distinct diagnostic codes of the row.")
    stats: dict[str, Any] = Field(
        default_factory=dict, description="inputs, inputsByPool, excludedAutomation, "
        "proposed, accepted, created, reused, activated, rejected, rejectedByReason, "
        "deferredEmbeddings, wikiProposals, durationSeconds (and rollback when rolled back).")
