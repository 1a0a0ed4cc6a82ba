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
   * an authenticated direct session writes ``team`` when the user shares memories with
     the team (opt-out: on by default for a registered user), owner-private otherwise.

   A ``channelType`` alone (no thread, no room) is no channel: it changes no default.

The preference (:func:`share_preference`), in order:

* an explicit stored choice is always respected: ``false`` keeps the user's default writes
  private (``channel`` in a linked channel session), ``true`` shares;
* a *registered* user (``agent_users``, migration 0023: a user with an API key, or one an
  admin or the runtime registered, see :mod:`memory_platform.shared.users`) without a stored choice
  shares: the specification's "enabled by default for every user (opt-out)";
* a user id nobody registered (named per request by a runtime key, for instance) and an
  unreadable state (a query error) fail closed: a direct session writes private.

Only a person changes the choice (:func:`memory_platform.shared.users.set_sharing`: the CLI, the
admin route), never an agent tool. Existing rows never move when the preference changes: it
is read at write time.
"""

from __future__ import annotations

import psycopg

from memory_platform.shared.access import AccessContext, AccessError, AudienceKind
from memory_platform.shared.users import set_sharing


def share_preference(conn: psycopg.Connection, ctx: AccessContext) -> bool | None:
    """The user's share-with-team preference: the stored choice (True, or False for an
    explicit opt-out), else True for a registered user (the opt-out default), else None: no
    user, a user nobody registered, or a state that cannot be read (fails closed)."""
    if not ctx.user_id:
        return None
    try:
        with conn.transaction():  # a savepoint: a failing read must not doom the write
            row = conn.execute(
                "SELECT (SELECT share_memories_with_team FROM agent_user_preferences"
                "         WHERE instance_key = %(i)s AND user_id = %(u)s),"
                "       EXISTS (SELECT 1 FROM agent_users"
                "                WHERE instance_key = %(i)s AND user_id = %(u)s)",
                {"i": ctx.instance_key, "u": ctx.user_id},
            ).fetchone()
    except psycopg.Error:
        return None
    if row is None:
        return None
    stored, registered = row
    if stored is not None:
        return bool(stored)
    return True if registered else None


def shares_with_team(conn: psycopg.Connection, ctx: AccessContext) -> bool:
    """The user's share-with-team preference; False when it cannot be read."""
    return share_preference(conn, ctx) is True


def set_share_with_team(conn: psycopg.Connection, instance_key: str, user_id: str,
                        share: bool, *, changed_by: str = "profile") -> None:
    """The user's own choice (profile settings, the demo); registers the user. Never called
    on an agent's behalf. Same as :func:`memory_platform.shared.users.set_sharing`."""
    set_sharing(conn, instance_key, user_id, share, changed_by=changed_by)


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
