"""Which audience a write lands in (specification, "Shared facts" / "Shared user memory").

Precedence, most private first:
1. specialized-agent personal memory stays private;
2. an explicit request to keep it private stays private;
3. an explicit visibility (team, workspace, channel) is honoured when the context allows it;
4. otherwise the context's default:

   * a linked channel session (a user in a channel thread or group room) writes ``team``,
     unless the user explicitly opted out of sharing with the team: then ``channel`` (the
     conversation it was said in, and the user), never the whole team;
   * a user-less group room (internal Team Chat) writes ``team``, an unlinked channel
     thread ``channel``;
   * a session without any identity (system, background) writes ``workspace``;
   * an authenticated direct session writes owner-private, unless the user shares memories
     with the team (opt-out, on by default), which turns the default into ``team``.

   A ``channelType`` alone (no thread, no room) is no channel: it changes no default. An
   unreadable preference (no profile row, query error) fails closed to private for a direct
   session; only an explicit ``false`` counts as an opt-out. Existing rows never move when
   the preference changes: it is read at write time.
"""

from __future__ import annotations

import psycopg

from memory_platform.access import AccessContext, AccessError, AudienceKind


def share_preference(conn: psycopg.Connection, ctx: AccessContext) -> bool | None:
    """The user's share-with-team preference as stored: True, False (an explicit opt-out),
    or None when there is no user, no profile row, or it cannot be read."""
    if not ctx.user_id:
        return None
    try:
        with conn.transaction():  # a savepoint: a failing read must not doom the write
            row = conn.execute(
                "SELECT share_memories_with_team FROM agent_user_preferences"
                " WHERE instance_key = %s AND user_id = %s",
                (ctx.instance_key, ctx.user_id),
            ).fetchone()
    except psycopg.Error:
        return None
    return None if row is None or row[0] is None else bool(row[0])


def shares_with_team(conn: psycopg.Connection, ctx: AccessContext) -> bool:
    """The user's share-with-team preference; False when it cannot be read."""
    return share_preference(conn, ctx) is True


def set_share_with_team(conn: psycopg.Connection, instance_key: str, user_id: str,
                        share: bool) -> None:
    """The user's own choice (profile settings). Never called on an agent's behalf."""
    conn.execute(
        "INSERT INTO agent_user_preferences (instance_key, user_id, share_memories_with_team)"
        " VALUES (%s, %s, %s)"
        " ON CONFLICT (instance_key, user_id)"
        " DO UPDATE SET share_memories_with_team = EXCLUDED.share_memories_with_team",
        (instance_key, user_id, share),
    )


def resolve_visibility(
    conn: psycopg.Connection,
    ctx: AccessContext,
    requested: AudienceKind | None,
    *,
    explicit_private: bool = False,
    agent_personal: bool = False,
) -> AudienceKind:
    if agent_personal or explicit_private or requested == "private":
        if not ctx.user_id:
            raise AccessError("a private memory needs an authenticated user")
        return "private"
    if requested == "team" and not ctx.has_team_access:
        raise AccessError("a team memory needs a user, group room or channel context")
    if requested == "channel" and not ctx.has_channel:
        raise AccessError("a channel memory needs a channel thread or group room")
    if requested is not None:
        return requested
    if ctx.user_id and ctx.has_channel:
        return "channel" if share_preference(conn, ctx) is False else "team"
    if ctx.group_room_id:
        return "team"
    if ctx.channel_thread_key:
        return "channel"
    if not ctx.user_id:
        return "workspace"
    return "team" if shares_with_team(conn, ctx) else "private"
