"""Users and their share-with-team preference (``/api/v1/users``, admin, a person's key).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Strict


class UserListParams(BaseModel):
    """Query string of the user listing (none today; unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class SharingIn(Strict):
    user_id: str = Field(alias="userId", min_length=1, max_length=200)
    share: bool


class UserOut(BaseModel):
    user_id: str = Field(serialization_alias="userId")
    created_at: str = Field(serialization_alias="createdAt")
    created_by: str = Field(serialization_alias="createdBy")
    shares_with_team: bool = Field(serialization_alias="sharesWithTeam")
    share_is_default: bool = Field(serialization_alias="shareIsDefault")
    share_changed_by: str | None = Field(serialization_alias="shareChangedBy")


class UsersResponse(BaseModel):
    users: list[UserOut]
