"""Channel and room membership, session participants (``/api/v1/channels/members``,
``/api/v1/sessions/participants``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import Strict


def _channel_key() -> Any:
    return Field(alias="channelKey", min_length=1, max_length=200,
                 description="A channelThreadKey or a groupRoomId.")


def _user_id() -> Any:
    return Field(alias="userId", min_length=1, max_length=200)


def _session_key() -> Any:
    return Field(alias="sessionKey", min_length=1, max_length=200)


class ChannelMemberIn(Strict):
    channel_key: str = _channel_key()
    user_id: str = _user_id()


class ChannelMemberParams(BaseModel):
    """Query string naming one membership (both parameters required)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    channel_key: str = _channel_key()
    user_id: str = _user_id()


class ChannelMemberFilter(BaseModel):
    """Query string of a membership listing: optionally one channel and/or one user."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    channel_key: str | None = Field(None, alias="channelKey", min_length=1, max_length=200)
    user_id: str | None = Field(None, alias="userId", min_length=1, max_length=200)


class SessionParticipantIn(Strict):
    session_key: str = _session_key()
    user_id: str = _user_id()


class SessionParticipantParams(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    session_key: str = _session_key()


class ChannelMemberOut(BaseModel):
    channel_key: str = Field(serialization_alias="channelKey")
    user_id: str = Field(serialization_alias="userId")
    added_by: str = Field(serialization_alias="addedBy")
    created_at: str = Field(serialization_alias="createdAt")


class ChannelMemberChange(BaseModel):
    channel_key: str = Field(serialization_alias="channelKey")
    user_id: str = Field(serialization_alias="userId")
    changed: bool = Field(description="Added: the membership is new (201; 200 when it "
                          "existed). Removed: always true (404 when there was none).")


class ChannelMembersResponse(BaseModel):
    members: list[ChannelMemberOut]


class SessionParticipantOut(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str = Field(serialization_alias="userId")
    role: Literal["owner", "participant"]
    created_at: str = Field(serialization_alias="createdAt")


class SessionParticipantAdded(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str = Field(serialization_alias="userId")
    added: bool = Field(description="The user was not taking part yet (201; 200 otherwise).")


class SessionParticipantsResponse(BaseModel):
    participants: list[SessionParticipantOut]
