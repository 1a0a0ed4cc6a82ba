"""An explicit memory write and its answer (``/api/v1/memory``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from api.schemas.common import Audience, CallerContext, Strict, parse_event_time
from memory_platform.access import AudienceKind
from memory_platform.errors import InvalidInput
from memory_platform.memories.validation import parse_occurred_at
from memory_platform.memories.write_rules import SLOT_PART_MAX_CHARS

AssertionType = Literal["fact", "preference", "decision", "constraint", "procedure"]


# Metadata keys the API writes itself (who wrote a memory, how): a client cannot set them.
PLATFORM_METADATA_KEYS = frozenset({"writtenVia", "apiKeyId", "keyKind", "writer",
                                    "memoryClass"})


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
        taken = sorted(PLATFORM_METADATA_KEYS & set(value or {}))
        if taken:
            raise ValueError(f"metadata key {taken[0]!r} is set by the platform")
        return value

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
    context: CallerContext | None = None


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
