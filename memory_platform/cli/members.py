"""`memory-platform members` and `memory-platform sessions`: who belongs where, and the
sessions' background maintenance.

A user key may name a channel thread or group room only where its user is a member, and a
session only where its user takes part (docs/security.md). These commands manage both for an
instance, as the admin and runtime routes (/api/v1/channels/members,
/api/v1/sessions/participants) do. `sessions maintain` runs the due sessions' maintenance
passes in the foreground (what session_maintenance_job does in Dagster).
"""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings

_INSTANCE = click.option("--instance", default=None,
                         help="Instance (default MEMORY_INSTANCE_KEY).")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _instance(instance: str | None) -> str:
    return instance or get_settings().instance_key


def _domain(call):
    """Run ``call(conn)`` on a current database."""
    with platform_connection() as conn:
        return call(conn)


@click.group(cls=PlatformGroup)
def members() -> None:
    """Channel and room members: a user key reads and writes a channelThreadKey or groupRoomId
    only where its user is a member."""


@members.command("add")
@click.option("--channel", "channel_key", required=True,
              help="The channelThreadKey or groupRoomId (membership of a room does not "
              "include its threads).")
@click.option("--user", "user_id", required=True, help="The user who becomes a member.")
@_INSTANCE
def members_add(channel_key: str, user_id: str, instance: str | None) -> None:
    """Make a user a member of a channel thread or group room."""
    from memory_platform.shared.membership import add_channel_member

    key = _instance(instance)
    added = _domain(lambda conn: add_channel_member(conn, key, channel_key, user_id,
                                                    added_by="cli"))
    state = "is now" if added else "already was"
    click.echo(f"{user_id!r} {state} a member of {channel_key!r} in instance {key!r}")


@members.command("remove")
@click.option("--channel", "channel_key", required=True, help="The channel or room key.")
@click.option("--user", "user_id", required=True, help="The member to remove.")
@_INSTANCE
def members_remove(channel_key: str, user_id: str, instance: str | None) -> None:
    """End a user's membership of a channel thread or group room."""
    from memory_platform.shared.membership import remove_channel_member

    key = _instance(instance)
    if not _domain(lambda conn: remove_channel_member(conn, key, channel_key, user_id)):
        raise click.ClickException(f"{user_id!r} is not a member of {channel_key!r} in "
                                   f"instance {key!r}")
    click.echo(f"{user_id!r} is no longer a member of {channel_key!r} in instance {key!r}")


@members.command("list")
@click.option("--channel", "channel_key", default=None, help="Only this channel or room.")
@click.option("--user", "user_id", default=None, help="Only this user's memberships.")
@_INSTANCE
@_JSON
def members_list(channel_key: str | None, user_id: str | None, instance: str | None,
                 as_json: bool) -> None:
    """List memberships of an instance."""
    from memory_platform.shared.membership import channel_members

    key = _instance(instance)
    found = _domain(lambda conn: channel_members(conn, key, channel_key=channel_key,
                                                 user_id=user_id))
    rows = [{"channel": m.channel_key, "user": m.user_id, "added_by": m.added_by,
             "created_at": m.created_at.isoformat()} for m in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo(f"no memberships in instance {key!r}; add one with "
                   "`memory-platform members add --help`")
    else:
        _table(("CHANNEL", "USER", "ADDED BY", "SINCE"),
               [(r["channel"], r["user"], r["added_by"], r["created_at"]) for r in rows])


@click.group(cls=PlatformGroup)
def sessions() -> None:
    """Session participants (a user key names a session only where its user takes part; an
    unused session becomes the first user's own) and session maintenance."""


@sessions.command("add")
@click.option("--session", "session_key", required=True, help="The sessionKey.")
@click.option("--user", "user_id", required=True, help="The user who takes part.")
@_INSTANCE
def sessions_add(session_key: str, user_id: str, instance: str | None) -> None:
    """Record that a user takes part in a session."""
    from memory_platform.shared.membership import add_session_participant

    key = _instance(instance)
    added = _domain(lambda conn: add_session_participant(conn, key, session_key, user_id))
    state = "now takes part" if added else "already took part"
    click.echo(f"{user_id!r} {state} in session {session_key!r} of instance {key!r}")


@sessions.command("list")
@click.option("--session", "session_key", required=True, help="The sessionKey.")
@_INSTANCE
@_JSON
def sessions_list(session_key: str, instance: str | None, as_json: bool) -> None:
    """List who takes part in a session (its owner and participants)."""
    from memory_platform.shared.membership import session_participants

    key = _instance(instance)
    found = _domain(lambda conn: session_participants(conn, key, session_key))
    rows = [{"session": p.session_key, "user": p.user_id, "role": p.role,
             "created_at": p.created_at.isoformat()} for p in found]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo(f"nobody takes part in session {session_key!r} of instance {key!r} yet")
    else:
        _table(("SESSION", "USER", "ROLE", "SINCE"),
               [(r["session"], r["user"], r["role"], r["created_at"]) for r in rows])


@sessions.command("maintain")
@click.option("--limit", type=click.IntRange(1, 1000), default=None,
              help="Most sessions to handle (default MEMORY_SESSION_MAINTENANCE_MAX_SESSIONS).")
@click.option("--instance", default=None,
              help="Only sessions of this instance (default: every instance).")
def sessions_maintain(limit: int | None, instance: str | None) -> None:
    """Run the maintenance pass of each due session now, in the foreground: shared facts,
    then the flush, then compaction (oldest request first).

    Prints one line per session and a summary. A session another process is maintaining is
    reported busy; one with a failed operation stays due and is retried after a backoff
    (exit status 1). Normally session_maintenance_job does this in Dagster."""
    from memory_platform.features.sessions.maintenance import run_due_sessions

    settings = get_settings()

    def progress(number: int, total: int, session_pass) -> None:
        click.echo(f"[{number}/{total}] {session_pass.summary()}")

    batch = _domain(lambda conn: run_due_sessions(conn, settings, limit=limit,
                                                  instance_key=instance, progress=progress))
    if not batch.passes:
        scope = f" in instance {instance!r}" if instance else ""
        click.echo(f"no session due for maintenance{scope}")
        return
    for line in batch.summary_lines():
        click.echo(line)
    if batch.sessions_failed:
        raise click.ClickException(
            f"{batch.sessions_failed} session(s) had a failed operation; they stay due and "
            "are retried after a backoff")


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                   .rstrip())


COMMANDS = (members, sessions,)  # collected by memory_platform.cli
