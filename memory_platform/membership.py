"""Who belongs where: channel/room members and session participants of an instance.

Membership lives in PostgreSQL (migration 0013) and is managed by admin and runtime keys
(API routes, CLI). :mod:`memory_platform.trust` reads it when it turns a request's claimed
conversation context into an :class:`~memory_platform.access.AccessContext`.

A *channel key* is a ``channelThreadKey`` or a ``groupRoomId``: membership of a room does not
make a user a member of its threads (the visibility rule is strict the same way).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from memory_platform.errors import InvalidInput

SESSION_ROLES = ("owner", "participant")


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
                            user_id: str, *, role: str = "participant") -> bool:
    """Record that ``user_id`` takes part in ``session_key``; True when new. A session has at
    most one owner (a second owner is refused by the database)."""
    if role not in SESSION_ROLES:
        raise InvalidInput(f"role must be one of {', '.join(SESSION_ROLES)}",
                           details={"field": "role"})
    row = conn.execute(
        "INSERT INTO agent_session_participants (instance_key, session_key, user_id, role)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
        (instance_key, _required(session_key, "sessionKey"), _required(user_id, "userId"),
         role),
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
# its own, so that it sees a concurrent claim committed while this one waited.
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


_TAKING_PART = """
    SELECT 1 FROM agent_session_participants
     WHERE instance_key = %s AND session_key = %s AND user_id = %s
"""


def session_lock_key(instance_key: str, session_key: str) -> str:
    """Advisory-lock name that makes the claims of one session one decision at a time."""
    return f"session:{instance_key}:{session_key}"


def claim_session(conn: psycopg.Connection, instance_key: str, session_key: str,
                  user_id: str, *, trusted: bool = False) -> bool:
    """Whether ``user_id`` may act in ``session_key``, recording it where it may.

    A user already taking part may. A session nobody uses yet (no participant, no history
    of anyone but the user) becomes the user's: they are recorded as its owner. Another
    user's session, or one with history recorded for nobody (system or channel transcripts),
    is refused (False), unless ``trusted`` (a runtime key, which observes the real
    conversation): then the user is recorded as a participant. Of two users claiming one new
    session at the same time exactly one becomes its owner."""
    _required(session_key, "sessionKey")
    _required(user_id, "userId")
    # The common case, a user already taking part, takes no lock: the advisory lock is a
    # transaction lock, held until the caller's request transaction ends, so taking it on
    # every request would serialise a session's concurrent requests.
    if conn.execute(_TAKING_PART, (instance_key, session_key, user_id)).fetchone():
        return True
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (session_lock_key(instance_key, session_key),))
        params = {"i": instance_key, "s": session_key, "u": user_id}
        taking_part, used_by_others = conn.execute(_SESSION_STATE, params).fetchone()
        if taking_part:
            return True
        if not used_by_others and add_session_participant(
                conn, instance_key, session_key, user_id, role="owner"):
            return True
        if trusted:
            add_session_participant(conn, instance_key, session_key, user_id)
            return True
        # The owner insert lost to a claim this transaction's snapshot could not see.
        return conn.execute(_SESSION_STATE, params).fetchone()[0]
