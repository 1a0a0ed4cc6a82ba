"""The event feed (``/api/v1/events``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import CallerContext
from memory_platform.features.events.store import DEFAULT_LIMIT, MAX_LIMIT


class EventListParams(CallerContext):
    """Query string of GET /api/v1/events (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    after: str | None = Field(None, min_length=1, max_length=200,
                              description="nextCursor of the previous page (omitted: from "
                              "the first event).")
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT,
                              description=f"Most events (default {DEFAULT_LIMIT}).")
    kinds: str | None = Field(None, min_length=1, max_length=1000,
                              description="Comma-separated event kinds (omitted: all).")


class EventOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    kind: str
    audience: dict[str, str]
    data: dict[str, Any]
    created_at: str = Field(alias="createdAt")


class EventListResponse(BaseModel):
    events: list[EventOut]
    next_cursor: str = Field(serialization_alias="nextCursor",
                             description="Continue from here (also when the page is empty).")
