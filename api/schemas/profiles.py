"""One user's precomputed profile (``/internal/memory/profile``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from memory_platform.features.maintenance.profiles import USER_ID_MAX_CHARS


class ProfileParams(BaseModel):
    """Query string of GET /internal/memory/profile (unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    user_id: str = Field(..., alias="userId", min_length=1, max_length=USER_ID_MAX_CHARS,
                         description="The user whose profile is answered.")
    refresh: bool = Field(False, description="Rebuild the profile now (1/true).")


class OwnProfileParams(BaseModel):
    """Query string of GET /api/v1/profile: a user key reads its own user's profile (no
    parameter); a runtime key names the user it acts for."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    user_id: str | None = Field(None, alias="userId", min_length=1,
                                max_length=USER_ID_MAX_CHARS,
                                description="Runtime keys only: the user it acts for.")


class ProfileItemModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: str = Field(description="claim (knowledge graph) or memory.")
    id: str
    text: str
    source: str = Field(description="The claim's predicate or the memory's sourceType.")
    at: datetime | None = None


class ProfileResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    user_id: str = Field(serialization_alias="userId")
    static_facts: list[ProfileItemModel] = Field(serialization_alias="staticFacts")
    recent_context: list[ProfileItemModel] = Field(serialization_alias="recentContext")
    built_at: datetime = Field(serialization_alias="builtAt")
    persisted: bool = Field(description="Stored in agent_user_profiles.")
    cached: bool = Field(description="Answered from the cache, not rebuilt.")
    text: str = Field(description="The [User profile] prompt block (untrusted data).")
    trust: str = "untrusted-data"
