"""Review queues and a person's decisions (``/api/v1/review``, ``memory:review``).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic import Strict as PydanticStrict

from api.schemas.common import Strict
from memory_platform.features.review.decisions import BULK_LIMIT as REVIEW_BULK_MAX
from memory_platform.features.review.queues import MAX_LIMIT as REVIEW_PAGE_MAX

ReviewAudience = Literal["private", "team", "workspace", "channel"]


ReasonCode = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]


# Ids arrive as JSON strings: parsed as UUIDs (a malformed one is a 400 naming the field).
IdIn = Annotated[uuid.UUID, PydanticStrict(False)]


class ReviewQueueParams(BaseModel):
    """Query string of a review queue (lax: text by nature; unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    kind: Literal["assertion", "conflict", "wiki_draft"] = "assertion"
    type: str | None = Field(None, description="Assertion queue only: one assertion type.")
    audience: ReviewAudience | None = None
    origin: str | None = Field(None, description="Assertion queue only: one origin.")
    limit: int | None = Field(None, ge=1, le=REVIEW_PAGE_MAX)
    cursor: str | None = Field(None, max_length=200,
                               description="nextCursor of the previous page.")
    channel_thread_key: str | None = Field(None, alias="channelThreadKey", min_length=1,
                                           max_length=200)
    group_room_id: str | None = Field(None, alias="groupRoomId", min_length=1, max_length=200)


class ReviewQueueResponse(BaseModel):
    items: list[dict[str, Any]]
    next_cursor: str | None = Field(None, serialization_alias="nextCursor")


class AssertionDecisionIn(Strict):
    decision: Literal["approve", "reject", "supersede"]
    successor_id: IdIn | None = Field(None, alias="successorId",
                                      description="supersede: the assertion that replaces it.")
    reason_code: ReasonCode | None = Field(None, alias="reasonCode")
    note: str | None = Field(None, max_length=2000)


class BulkDecisionIn(Strict):
    """Approve or reject the pending assertions of a filtered queue (oldest first)."""

    decision: Literal["approve", "reject"]
    type: str | None = None
    audience: ReviewAudience | None = None
    origin: str | None = None
    ids: list[IdIn] | None = Field(None, max_length=REVIEW_BULK_MAX)
    limit: int = Field(REVIEW_BULK_MAX, ge=1, le=REVIEW_BULK_MAX)
    reason_code: ReasonCode | None = Field(None, alias="reasonCode")
    note: str | None = Field(None, max_length=2000)


class ConflictResolutionIn(Strict):
    action: Literal["keep_one", "keep_both", "merge", "reject_challenger"]
    keep_id: IdIn | None = Field(None, alias="keepId",
                                 description="keep_one and merge: the assertion that stays.")


class WikiDecisionIn(Strict):
    decision: Literal["approve", "reject"]
    reason: str | None = Field(None, max_length=2000)


class DecisionResponse(BaseModel):
    decided: list[str] = Field(description="Ids whose state the decision changed.")
    unchanged: list[str] = Field(description="Decisions recorded; the state was already so.")
    refused: list[dict[str, str]]
    projected: int = Field(description="Projection jobs run at once (recall sees them now).")
