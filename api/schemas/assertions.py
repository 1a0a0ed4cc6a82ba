"""The ledger as it was: assertions believed true at a past time (``/api/v1/assertions``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.schemas.common import UNTRUSTED, CallerContext, parse_event_time
from memory_platform.features.consolidation.history import MAX_LIMIT
from memory_platform.shared.access import AudienceKind


class AssertionAsOfParams(CallerContext):
    """Query string of the asOf read (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    at: datetime = Field(description="The moment asked about: ISO-8601 with an offset, e.g. "
                         "2024-05-01T09:30:00+02:00 or 2024-05-01T07:30:00Z.")
    query: str | None = Field(None, min_length=1, max_length=2000,
                              description="Only assertions matching these words (full text).")
    limit: int = Field(20, ge=1, le=MAX_LIMIT)

    @field_validator("at", mode="before")
    @classmethod
    def _moment(cls, value: object) -> datetime | None:
        if value is None:
            raise ValueError("at is required")
        return parse_event_time(value, "at")


class AssertionAsOfOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    text: str = Field(description="The assertion's text as recorded at that time.")
    assertion_type: str = Field(serialization_alias="assertionType")
    visibility: AudienceKind
    then: dict[str, Any] = Field(description="The state believed at that time: status, "
                                 "reviewState, validFrom, validTo, recordedAt, backfilled.")
    now: dict[str, Any] = Field(description="Its state now: status, reviewState, text, "
                                "validFrom, validTo.")
    earlier: list[dict[str, Any]] = Field(description="Earlier revisions, nearest first.")
    later: list[dict[str, Any]] = Field(description="Later revisions (what replaced it), "
                                        "nearest first.")


class AssertionAsOfResponse(BaseModel):
    trust: Literal["untrusted-data"] = UNTRUSTED
    at: str = Field(description="The moment asked about (UTC).")
    results: list[AssertionAsOfOut]
