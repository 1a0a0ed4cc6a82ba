"""/api/v1/channels/members and /api/v1/sessions/participants: who belongs where.

Admin keys and runtime keys manage the memberships of their key's own instance: channel (or
room) members, and the participants of a session. Channel keys may hold ':' and '/', so they
travel in the body or the query string, never in the path. Nothing here reads memories.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from api.auth import api_key
from api.errors import ApiError
from api.operation import API, MEMBERSHIP, Operation, Section
from api.responses import model_response
from api.schemas.members import (
    ChannelMemberChange,
    ChannelMemberFilter,
    ChannelMemberIn,
    ChannelMemberOut,
    ChannelMemberParams,
    ChannelMembersResponse,
    SessionParticipantAdded,
    SessionParticipantIn,
    SessionParticipantOut,
    SessionParticipantParams,
    SessionParticipantsResponse,
)
from api.threads import with_connection
from memory_platform.features.apikeys import ApiKey
from memory_platform.shared.membership import (
    add_channel_member,
    add_session_participant,
    channel_members,
    remove_channel_member,
    session_participants,
)


def _added_by(key: ApiKey) -> str:
    return f"{key.kind} key {key.token_prefix}"


async def add_member(request: Request, body: ChannelMemberIn) -> Response:
    """201 when the membership is new, 200 when it existed."""
    key = api_key(request)
    added = await with_connection(request, add_channel_member, key.instance_key,
                                  body.channel_key, body.user_id, added_by=_added_by(key))
    change = ChannelMemberChange(channel_key=body.channel_key, user_id=body.user_id,
                                 changed=added)
    return model_response(change, status_code=201 if added else 200)


async def remove_member(request: Request, params: ChannelMemberParams) -> ChannelMemberChange:
    """200 when a membership ended; 404 when there was none."""
    removed = await with_connection(request, remove_channel_member,
                                    api_key(request).instance_key, params.channel_key,
                                    params.user_id)
    if not removed:
        raise ApiError(404, "not_found",
                       f"{params.user_id!r} is not a member of {params.channel_key!r}",
                       {"channelKey": params.channel_key, "userId": params.user_id})
    return ChannelMemberChange(channel_key=params.channel_key, user_id=params.user_id,
                               changed=True)


async def list_members(request: Request, params: ChannelMemberFilter) -> ChannelMembersResponse:
    found = await with_connection(request, channel_members, api_key(request).instance_key,
                                  channel_key=params.channel_key, user_id=params.user_id)
    return ChannelMembersResponse(members=[
        ChannelMemberOut(channel_key=m.channel_key, user_id=m.user_id, added_by=m.added_by,
                         created_at=m.created_at.isoformat()) for m in found])


async def add_participant(request: Request, body: SessionParticipantIn) -> Response:
    """201 when the user now takes part, 200 when they already did."""
    added = await with_connection(request, add_session_participant,
                                  api_key(request).instance_key, body.session_key,
                                  body.user_id)
    answer = SessionParticipantAdded(session_key=body.session_key, user_id=body.user_id,
                                     added=added)
    return model_response(answer, status_code=201 if added else 200)


async def list_participants(request: Request,
                            params: SessionParticipantParams) -> SessionParticipantsResponse:
    found = await with_connection(request, session_participants,
                                  api_key(request).instance_key, params.session_key)
    return SessionParticipantsResponse(participants=[
        SessionParticipantOut(session_key=p.session_key, user_id=p.user_id, role=p.role,
                              created_at=p.created_at.isoformat()) for p in found])


ROUTES = (Section(API, (
    Operation("GET", "/channels/members", list_members,
              "Channel and room members of the key's instance", MEMBERSHIP,
              query=ChannelMemberFilter, response=ChannelMembersResponse),
    Operation("POST", "/channels/members", add_member,
              "Make a user a member of a channel or room (201; 200 when already one)",
              MEMBERSHIP, body=ChannelMemberIn,
              response=ChannelMemberChange, status=201),
    Operation("DELETE", "/channels/members", remove_member,
              "End a user's membership of a channel or room (404 when there was none)",
              MEMBERSHIP, query=ChannelMemberParams,
              response=ChannelMemberChange),
    Operation("GET", "/sessions/participants", list_participants,
              "Who takes part in a session of the key's instance", MEMBERSHIP,
              query=SessionParticipantParams,
              response=SessionParticipantsResponse),
    Operation("POST", "/sessions/participants", add_participant,
              "Record that a user takes part in a session (201; 200 when already)",
              MEMBERSHIP, body=SessionParticipantIn,
              response=SessionParticipantAdded, status=201),
)),)
