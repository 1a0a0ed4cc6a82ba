"""Every field of a request is a claim: this module decides which claims a key may make.

:func:`resolve_context` turns the caller's key and the conversation context a request claims
into the :class:`~memory_platform.shared.access.AccessContext` that THE visibility rule
(``access.py``) is then applied with. The model (docs/security.md):

* a **user key** acts as its one user. It may name a channel thread or group room only where
  that user is a member (``membership``), and a session only where the user takes part or
  that nobody uses yet. Anything else is refused (AccessDenied, 403), before any data is
  read;
* a **runtime key** (scope ``runtime``, no user) is the instance's trusted agent runtime. It
  names the acting user per request (or none: a system context) and the real conversation
  context, which is taken as given. What it reads for that user goes through the same
  visibility rule.

Resolving a context records nothing: naming a session never creates, claims or joins it
(a read by a squatter must not make the key theirs). Only an append records who takes part
(``membership.join_session``, called by ``sessions.items.append_items``).

Membership and session participation are checked in SQL on the request's connection.

The trust class of a write is decided here too (:func:`write_trust_class`,
:func:`written_by_agent`): what an agent's key writes, or what a request marks as the agent's
(the API's ``X-Memory-Writer: agent``, which the MCP server sends with every write), is the
agent's inference; a request can only lower a write's trust, never raise it.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from memory_platform.foundation.errors import AccessDenied, InvalidInput
from memory_platform.foundation.secrets import refuse_secret_fields
from memory_platform.shared.access import AccessContext
from memory_platform.shared.membership import may_name_session, non_member_channels


@dataclass(frozen=True)
class Caller:
    """Who holds the key: its instance, its user (None for a runtime key), whether it is
    the trusted runtime, and whether it is an agent's key (its writes are inference)."""

    instance_key: str
    user_id: str | None
    runtime: bool = False
    agent: bool = False


@dataclass(frozen=True)
class ContextClaims:
    """The conversation context a request claims (all optional)."""

    user_id: str | None = None                  # runtime keys only: the acting user
    session_key: str | None = None
    group_room_id: str | None = None
    channel_thread_key: str | None = None
    channel_type: str | None = None


def acting_user(caller: Caller, claims: ContextClaims) -> str | None:
    """The user a request acts for: the key's own, or the one a runtime key names."""
    if caller.runtime:
        if claims.user_id is not None and not claims.user_id.strip():
            raise InvalidInput("userId must be a non-empty string or absent",
                               details={"field": "context.userId"})
        return claims.user_id
    if claims.user_id is not None and claims.user_id != caller.user_id:
        raise InvalidInput("a user key acts as its own user: userId cannot be set",
                           code="validation_error", details={"field": "context.userId"})
    return caller.user_id


def resolve_context(conn: psycopg.Connection, caller: Caller,
                    claims: ContextClaims | None = None) -> AccessContext:
    """The access context of a request, after checking every claim it may not make alone."""
    claims = claims or ContextClaims()
    refuse_secret_fields({"context.userId": claims.user_id,
                          "context.sessionKey": claims.session_key,
                          "context.groupRoomId": claims.group_room_id,
                          "context.channelThreadKey": claims.channel_thread_key,
                          "context.channelType": claims.channel_type})
    user = acting_user(caller, claims)
    if not caller.runtime:
        channels = [k for k in (claims.channel_thread_key, claims.group_room_id) if k]
        foreign = non_member_channels(conn, caller.instance_key, user, channels) \
            if user else channels
        if foreign:
            raise AccessDenied("this user is not a member of "
                               + ", ".join(repr(k) for k in foreign)
                               + ": a channel or room is readable and writable only by its "
                               "members (an admin or the runtime adds members)",
                               code="not_a_member", details={"channels": foreign})
    if claims.session_key and not caller.runtime:
        if not user:
            raise AccessDenied("a session needs a user", code="foreign_session",
                               details={"field": "sessionKey"})
        if not may_name_session(conn, caller.instance_key, claims.session_key, user):
            raise AccessDenied(f"session {claims.session_key!r} belongs to another user",
                               code="foreign_session", details={"field": "sessionKey"})
    return AccessContext(
        instance_key=caller.instance_key,
        user_id=user,
        session_key=claims.session_key,
        group_room_id=claims.group_room_id,
        channel_thread_key=claims.channel_thread_key,
        channel_type=claims.channel_type,
    )


# --- the trust class of a write --------------------------------------------------------------

AGENT_INFERENCE = "assistant_inference"
PERSON_STATEMENT = "human_direct"
AUTOMATION = "automation"


def written_by_agent(caller: Caller, *, declared: bool = False) -> bool:
    """Whether what ``caller`` writes is the agent's: its key is an agent's, or the request
    declares the agent as the writer (``declared``). A declaration only lowers trust: nothing
    a request says makes an agent's write a person's."""
    return caller.agent or declared


def write_trust_class(caller: Caller, ctx: AccessContext, *, declared_agent: bool = False) -> str:
    """The trust class of a write: the agent's inference when :func:`written_by_agent`; a
    person's own statement when a user acts (their key, or the runtime naming them);
    automation when the runtime writes for no user."""
    if written_by_agent(caller, declared=declared_agent):
        return AGENT_INFERENCE
    if ctx.user_id is None:
        return AUTOMATION
    return PERSON_STATEMENT
