"""Who belongs where: channel/room members and session participants of an instance.

Membership lives in PostgreSQL (migration 0013) and is managed by admin and runtime keys
(API routes, CLI). :mod:`memory_platform.shared.trust` reads it when it turns a request's claimed
conversation context into an :class:`~memory_platform.shared.access.AccessContext`.

A *channel key* is a ``channelThreadKey`` or a ``groupRoomId``: membership of a room does not
make a user a member of its threads (the visibility rule is strict the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg

from memory_platform.foundation.errors import AccessDenied, Conflict, InvalidInput

SESSION_ROLES = ("owner", "participant")
SESSION_VIAS = ("user_key", "runtime", "admin")


@dataclass(frozen=True)
class ChannelMember:
    instance_key: str
    channel_key: str
    user_id: str
    added_by: str
    created_at: datetime


@dataclass(frozen=True)
class SessionParticipant:
    instance_key: str
    session_key: str
    user_id: str
    role: str
    created_at: datetime


def _required(value: str | None, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} is required", details={"field": field})
    return value


def add_channel_member(conn: psycopg.Connection, instance_key: str, channel_key: str,
                       user_id: str, *, added_by: str = "") -> bool:
    """Make ``user_id`` a member of ``channel_key``; True when the membership is new."""
    row = conn.execute(
        "INSERT INTO agent_channel_members (instance_key, channel_key, user_id, added_by)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
        (instance_key, _required(channel_key, "channelKey"), _required(user_id, "userId"),
         added_by),
    ).fetchone()
    return row is not None


def remove_channel_member(conn: psycopg.Connection, instance_key: str, channel_key: str,
                          user_id: str) -> bool:
    """End a membership; True when there was one."""
    row = conn.execute(
        "DELETE FROM agent_channel_members"
        " WHERE instance_key = %s AND channel_key = %s AND user_id = %s RETURNING 1",
        (instance_key, channel_key, user_id),
    ).fetchone()
    return row is not None


def channel_members(conn: psycopg.Connection, instance_key: str, *,
                    channel_key: str | None = None,
                    user_id: str | None = None) -> list[ChannelMember]:
    """Memberships of the instance, optionally of one channel and/or one user."""
    rows = conn.execute(
        "SELECT instance_key, channel_key, user_id, added_by, created_at"
        "  FROM agent_channel_members"
        " WHERE instance_key = %s"
        "   AND (%s::text IS NULL OR channel_key = %s::text)"
        "   AND (%s::text IS NULL OR user_id = %s::text)"
        " ORDER BY channel_key, user_id",
        (instance_key, channel_key, channel_key, user_id, user_id),
    ).fetchall()
    return [ChannelMember(*row) for row in rows]


def non_member_channels(conn: psycopg.Connection, instance_key: str, user_id: str,
                        channel_keys: list[str]) -> list[str]:
    """The keys of ``channel_keys`` that ``user_id`` is not a member of (in SQL)."""
    if not channel_keys:
        return []
    rows = conn.execute(
        "SELECT k FROM unnest(%s::text[]) AS k"
        " WHERE NOT EXISTS (SELECT 1 FROM agent_channel_members m"
        "                    WHERE m.instance_key = %s AND m.channel_key = k"
        "                      AND m.user_id = %s)",
        (channel_keys, instance_key, user_id),
    ).fetchall()
    return [row[0] for row in rows]


def add_session_participant(conn: psycopg.Connection, instance_key: str, session_key: str,
                            user_id: str, *, role: str = "participant",
                            via: str = "admin") -> bool:
    """Record that ``user_id`` takes part in ``session_key``; True when new. A session has at
    most one owner (a second owner is refused by the database). ``via`` records how: the
    first append of a user key (``user_key``), the runtime recording the user's turns
    (``runtime``), or an admin or the runtime adding the participant on purpose (``admin``);
    only a ``user_key`` owner makes the runtime refuse to record others there
    (:func:`join_session`)."""
    if role not in SESSION_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(SESSION_ROLES)}",
                           details={"field": "role"})
    if via not in SESSION_VIAS:
        raise InvalidInput(f"via must be one of {', '.join(SESSION_VIAS)}",
                           details={"field": "via"})
    row = conn.execute(
        "INSERT INTO agent_session_participants (instance_key, session_key, user_id, role, via)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
        (instance_key, _required(session_key, "sessionKey"), _required(user_id, "userId"),
         role, via),
    ).fetchone()
    return row is not None


def session_participants(conn: psycopg.Connection, instance_key: str,
                         session_key: str) -> list[SessionParticipant]:
    rows = conn.execute(
        "SELECT instance_key, session_key, user_id, role, created_at"
        "  FROM agent_session_participants"
        " WHERE instance_key = %s AND session_key = %s ORDER BY role, user_id",
        (instance_key, session_key),
    ).fetchall()
    return [SessionParticipant(*row) for row in rows]


# Whether the session is somebody else's: participants without the user, or history
# (messages, summaries, state) recorded for anyone but the user: another user, or nobody (a
# system or channel transcript). Read after the session's advisory lock, in a statement of
# its own, so that it sees a concurrent join committed while this one waited.
_SESSION_STATE = """
    SELECT EXISTS (SELECT 1 FROM agent_session_participants
                    WHERE instance_key = %(i)s AND session_key = %(s)s AND user_id = %(u)s)
               AS taking_part,
           EXISTS (SELECT 1 FROM agent_session_participants
                    WHERE instance_key = %(i)s AND session_key = %(s)s)
        OR EXISTS (SELECT 1 FROM agent_context_messages
                    WHERE instance_key = %(i)s AND session_key = %(s)s
                      AND user_id IS DISTINCT FROM %(u)s)
        OR EXISTS (SELECT 1 FROM agent_context_summaries
                    WHERE instance_key = %(i)s AND session_key = %(s)s
                      AND user_id IS DISTINCT FROM %(u)s)
        OR EXISTS (SELECT 1 FROM agent_session_state
                    WHERE instance_key = %(i)s AND session_key = %(s)s
                      AND user_id IS DISTINCT FROM %(u)s) AS used_by_others
"""

_PARTICIPANTS = """
    SELECT user_id, role, via FROM agent_session_participants
     WHERE instance_key = %s AND session_key = %s
"""


def session_lock_key(instance_key: str, session_key: str) -> str:
    """Advisory-lock name that makes the joins of one session one decision at a time."""
    return f"session:{instance_key}:{session_key}"


def _state(conn: psycopg.Connection, instance_key: str, session_key: str,
           user_id: str | None) -> tuple[bool, bool]:
    return conn.execute(_SESSION_STATE,
                        {"i": instance_key, "s": session_key, "u": user_id}).fetchone()


def may_name_session(conn: psycopg.Connection, instance_key: str, session_key: str,
                     user_id: str) -> bool:
    """Whether a user key of ``user_id`` may name ``session_key`` in a request: where the
    user takes part, or where nobody has recorded anything yet. Records nothing: naming a
    session (a read, or any request but an append) never creates, claims or joins it, so
    the first reader of an unused key owns nothing (docs/sessions.md, "Who owns a
    session")."""
    _required(session_key, "sessionKey")
    taking_part, used_by_others = _state(conn, instance_key, session_key,
                                         _required(user_id, "userId"))
    return taking_part or not used_by_others


def join_session(conn: psycopg.Connection, instance_key: str, session_key: str,
                 acting_user: str | None, authors: Sequence[str | None] = (), *,
                 runtime: bool) -> None:
    """Record the people whose turns an append is about to store in ``session_key``, or
    refuse the append. Called by the append itself (``sessions.items``), inside its
    transaction, before anything is written; the only place a session gains an owner or a
    participant on the request path.

    * A **user key** (``runtime=False``) appends as itself: where its user takes part it
      may; a session nobody uses yet becomes its user's (owner, ``via='user_key'``);
      anything else is ``AccessDenied`` (403 ``foreign_session``).
    * The **runtime** records the acting user and every author it names. Where each of them
      takes part already, nothing changes. A session another user started through a user
      key (its owner joined ``via='user_key'``) is refused for anyone new: ``Conflict``
      (409 ``session_owned_by_other_user``), so a key squatted by a user key never receives
      another person's turns and what the squatter planted never becomes part of that
      person's session; the runtime starts a fresh key (or an admin adds the participant on
      purpose). Otherwise the acting user becomes the owner of an unused session
      (``via='runtime'``) and everyone else a participant.

    Of two users starting one new session at the same time exactly one becomes its owner
    (the session's advisory lock, then the state read again)."""
    _required(session_key, "sessionKey")
    # A user key's items are all its user's (sessions.items.check_batch); a request without a
    # user (the runtime's system context) records nobody.
    people = list(dict.fromkeys(u for u in (acting_user, *(authors if runtime else ())) if u))
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (session_lock_key(instance_key, session_key),))
        rows = conn.execute(_PARTICIPANTS, (instance_key, session_key)).fetchall()
        taking_part = {user for user, _, _ in rows}
        newcomers = [u for u in people if u not in taking_part]
        if not newcomers:
            return
        owner = next(((user, via) for user, role, via in rows if role == "owner"), None)
        if not runtime:
            if _state(conn, instance_key, session_key, newcomers[0])[1]:
                raise AccessDenied(f"session {session_key!r} belongs to another user",
                                   code="foreign_session", details={"field": "sessionKey"})
            add_session_participant(conn, instance_key, session_key, newcomers[0],
                                    role="owner", via="user_key")
            return
        if owner is not None and owner[1] == "user_key":
            raise Conflict(
                f"session {session_key!r} was started by another user's own key: the runtime "
                "does not record anyone else's turns there (start a fresh session key, or "
                "have an admin add the participant)", code="session_owned_by_other_user",
                details={"field": "sessionKey", "users": newcomers})
        for user in newcomers:
            becomes_owner = (owner is None and user == acting_user
                             and not _state(conn, instance_key, session_key, user)[1])
            add_session_participant(conn, instance_key, session_key, user,
                                    role="owner" if becomes_owner else "participant",
                                    via="runtime")
