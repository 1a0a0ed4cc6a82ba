"""An explicit memory write and its answer (``/api/v1/memory``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from api.schemas.common import (
    Audience,
    CallerContext,
    MemoryOut,
    Strict,
    TimeRanges,
    parse_event_time,
    search_criteria,
)
from memory_platform.features.memories.validation import parse_occurred_at
from memory_platform.features.memories.write_rules import (
    PLATFORM_METADATA_KEYS,
    SLOT_PART_MAX_CHARS,
)
from memory_platform.features.retrieval.criteria import Criteria
from memory_platform.features.retrieval.memories import LIST_DEFAULT, LIST_IDS_MAX, LIST_MAX
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AudienceKind

AssertionType = Literal["fact", "preference", "decision", "constraint", "procedure"]




def own_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A request's metadata, refused when it names a key the platform sets."""
    taken = sorted(PLATFORM_METADATA_KEYS & set(value or {}))
    if taken:
        raise ValueError(f"metadata key {taken[0]!r} is set by the platform")
    return value


class MemoryCreate(Strict):
    content: str = Field(min_length=1, description="The memory text (size limit applies).")
    visibility: AudienceKind | None = Field(
        None, description="Omitted: private, or the team when the user shares with the team.")
    explicit_private: bool = Field(
        False, alias="explicitPrivate",
        description="True: the memory is private to the acting user, whatever visibility "
        "and the user's team-sharing preference say (needs a user).")
    subject_refs: dict[str, str | int | float] = Field(default_factory=dict, alias="subjectRefs")
    title: str | None = Field(None, max_length=300)
    assertion_type: AssertionType = Field("fact", alias="assertionType")
    subject: str | None = Field(
        None, min_length=1, max_length=SLOT_PART_MAX_CHARS,
        description="What the fact is about (e.g. 'VAT filing of Mandant Nord'): with "
        "predicate, the slot it fills. Consolidation only weighs facts of one slot against "
        "each other. Omitted: the subjectRefs as key=value text; neither: no slot.")
    predicate: str | None = Field(
        None, min_length=1, max_length=SLOT_PART_MAX_CHARS,
        description="Which property of the subject the fact states (e.g. 'due date'). "
        "Omitted: the assertionType. Needs a subject or subjectRefs.")
    occurred_at: datetime | None = Field(
        None, alias="occurredAt",
        description="When what the memory says happened (ISO-8601 with an offset, e.g. "
        "2024-05-01T09:30:00+02:00; at most a day ahead), as opposed to when it is written.")
    valid_until: datetime | None = Field(
        None, alias="validUntil",
        description="When what the memory says stops being true (ISO-8601 with an offset): "
        "from then on it is no longer recalled, and the expiry sweep marks its assertion "
        "expired (its history stays). A past time stores a fact that has already ended.")
    valid_from: datetime | None = Field(
        None, alias="validFrom",
        description="When what the memory says starts being true (ISO-8601 with an offset): "
        "before then it is not recalled (e.g. a rule that applies from next month).")
    metadata: dict[str, Any] | None = Field(
        None, description="Your own JSON object (at most 16 KiB, no secrets), searchable "
        "with filters (metadata.<key>); the keys " + ", ".join(sorted(PLATFORM_METADATA_KEYS))
        + " are the platform's and refused here.")
    context: CallerContext | None = None

    @field_validator("metadata")
    @classmethod
    def _own_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return own_metadata(value)

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _event_time(cls, value: object) -> datetime | None:
        return parse_event_time(value, "occurredAt")

    @field_validator("valid_until", "valid_from", mode="before")
    @classmethod
    def _validity_bound(cls, value: object, info: ValidationInfo) -> datetime | None:
        if value is None:
            return None
        alias = {"valid_until": "validUntil", "valid_from": "validFrom"}[info.field_name]
        try:
            return parse_occurred_at(value, field=alias)
        except InvalidInput as exc:
            raise ValueError(exc.message) from None


class MemoryCorrection(Strict):
    content: str = Field(min_length=1, description="What is true instead: the corrected "
                         "statement, which replaces the memory (size limit applies).")
    metadata: dict[str, Any] | None = Field(
        None, description="The corrected memory's own metadata (the rules of a write's); "
        "omitted: the corrected memory keeps the old one's.")
    context: CallerContext | None = None

    @field_validator("metadata")
    @classmethod
    def _own_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return own_metadata(value)


class CorrectionResponse(BaseModel):
    id: str = Field(description="The new memory.")
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    status: Literal["corrected", "proposed"] = Field(description=(
        "corrected: the old memory is superseded and the new one recalled; proposed: an "
        "agent's correction, waiting for a person's review (the old stays recalled)"))
    corrected_id: str = Field(serialization_alias="correctedId")
    conflict_id: str | None = Field(None, serialization_alias="conflictId")


class ForgetResponse(BaseModel):
    """What forgetting a memory removed: rows per table, nothing of their content."""

    memory_id: str = Field(serialization_alias="memoryId")
    erasure_id: str = Field(serialization_alias="erasureId")
    removed: dict[str, int]
    total_removed: int = Field(serialization_alias="totalRemoved")


class StoreResponse(BaseModel):
    id: str
    audience: Audience
    deduplicated: bool
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    assertion_status: str | None = Field(None, serialization_alias="assertionStatus")


class MemoryListParams(CallerContext, TimeRanges):
    """Query string of a listing: the search's filters without a question (lax numbers, as
    a query string's are text; unknown names refused)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    filter: str | None = Field(
        None, min_length=1, max_length=8192,
        description="A filter over metadata and subject refs, as JSON (docs/search-filters.md),"
        ' e.g. {"metadata.project": {"eq": "apollo"}}.')
    source_types: str | None = Field(
        None, alias="sourceTypes", max_length=200,
        description="Only these source types, comma-separated (e.g. fact,manual).")
    ids: str | None = Field(
        None, min_length=1, max_length=LIST_IDS_MAX * 37,
        description=f"Only these memories, comma-separated ids (at most {LIST_IDS_MAX}): a "
        "batch of exact reads; an unknown or invisible id is left out.")
    limit: int = Field(LIST_DEFAULT, ge=1, le=LIST_MAX, description="Memories per page.")
    cursor: str | None = Field(None, min_length=1, max_length=200,
                               description="nextCursor of the previous page.")

    def criteria(self) -> Criteria | None:
        """The criteria of the filters (InvalidInput naming the field)."""
        return search_criteria(self, self.filter)

    def id_list(self) -> list[str] | None:
        return self.ids.split(",") if self.ids is not None else None


class MemoryListResponse(BaseModel):
    memories: list[MemoryOut] = Field(description="Newest first, with their metadata.")
    next_cursor: str | None = Field(serialization_alias="nextCursor",
                                    description="Pass as cursor for the next page; null: "
                                    "this was the last.")
