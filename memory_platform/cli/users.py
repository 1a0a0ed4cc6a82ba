"""`memory-platform users`: people of an instance. `users list` shows the registered users
and their share-with-team choice; `users share USER --on/--off` sets a user's choice (a
person's act: the MCP server has no such tool; existing memories keep their audience, see
memory_platform/shared/users.py and memories/sharing.py). `users erase USER` removes every row of
the
user's private audience and what they authored elsewhere, in one transaction, and prints the
erasure report (rows removed per table, never content); the report is also kept in
``agent_memory_erasures`` (memory_platform/features/maintenance/erasure.py).
"""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def users() -> None:
    """People of an instance: the registry, sharing preference, erasure."""


@users.command("list")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print the users as JSON.")
def users_list(instance: str | None, as_json: bool) -> None:
    """The registered users of the instance and whether each shares with the team."""
    from memory_platform.shared.users import list_users

    settings = get_settings()
    key = instance or settings.instance_key
    with platform_connection(settings) as conn:
        found = list_users(conn, key)
    if as_json:
        click.echo(json.dumps([
            {"userId": u.user_id, "createdAt": u.created_at.isoformat(),
             "createdBy": u.created_by, "sharesWithTeam": u.shares_with_team,
             "shareIsDefault": u.share_stored is None, "shareChangedBy": u.share_changed_by}
            for u in found], indent=2))
        return
    if not found:
        click.echo(f"no registered users in instance {key!r}")
        return
    for u in found:
        share = "shares with team" if u.shares_with_team else "private"
        origin = "default" if u.share_stored is None else f"set by {u.share_changed_by}"
        click.echo(f"{u.user_id}\t{share} ({origin})\tregistered {u.created_at:%Y-%m-%d} "
                   f"by {u.created_by}")


@users.command("share")
@click.argument("user_id")
@click.option("--on/--off", "share", required=True,
              help="Share the user's memories with the team (--on) or keep them private.")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
def users_share(user_id: str, share: bool, instance: str | None) -> None:
    """Set USER_ID's share-with-team choice (registers the user if needed). Only future
    default-scope writes change; existing memories keep their audience."""
    from memory_platform.shared.users import set_sharing

    settings = get_settings()
    key = instance or settings.instance_key
    with platform_connection(settings) as conn, conn.transaction():
        set_sharing(conn, key, user_id, share, changed_by="cli")
    state = "now shares memories with the team" if share else "now keeps memories private"
    click.echo(f"{user_id!r} {state} in instance {key!r} (existing memories unchanged)")


@users.command("erase")
@click.argument("user_id")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--direct", is_flag=True, help="Erase in this process without a Dagster run "
              "(default: a run of erase_user_job on the platform's Dagster instance, shown "
              "in the UI).")
def users_erase(user_id: str, instance: str | None, as_json: bool, yes: bool,
                direct: bool) -> None:
    """Erase USER_ID: their sessions, sources, memories, assertions only they support, their
    private knowledge graph, profile, feedback, memberships and API keys. Cannot be undone.
    Runs as a Dagster run of erase_user_job (visible in the UI) unless --direct."""
    from memory_platform.features.maintenance.erasure import checked_id, erase_user

    settings = get_settings()
    key = instance or settings.instance_key
    if not yes:
        click.confirm(f"Erase every row of user {user_id!r} in instance {key!r}? "
                      "This cannot be undone", abort=True)
    run_id = None
    if direct:
        with platform_connection(settings) as conn:
            report = erase_user(conn, settings, key, user_id, requested_by="cli").as_dict()
    else:
        from memory_platform.launch import execute_erasure

        checked_id(key, "instance")
        checked_id(user_id, "user")
        platform_connection(settings).close()   # refuses an out-of-date schema first
        run_id, report = execute_erasure(settings, key, user_id, requested_by="cli")
    from memory_platform.orchestration.erasure import describe, erase_person_from_dagster

    # After the platform erasure committed: Dagster's runs and partition that name the person
    # (the erasure run above included: its config names them), best effort.
    report["dagster"] = erase_person_from_dagster(settings, key, user_id)
    if as_json:
        click.echo(json.dumps({**report, **({"runId": run_id} if run_id else {})},
                              sort_keys=True))
        return
    click.echo(f"erased user in instance {key!r}: {report['totalRemoved']} rows removed "
               f"(report {report['id']}{', run ' + run_id if run_id else ''})")
    for table, count in sorted(report["removed"].items()):
        if count:
            click.echo(f"  {table}: {count}")
    for column, count in sorted(report["updated"].items()):
        if count:
            click.echo(f"  {column}: {count} updated")
    if report.get("dreamIds"):
        click.echo(f"  Dreams removed or redacted: {', '.join(report['dreamIds'])}")
    if report.get("dagsterRunIds"):
        click.echo(f"  their Dagster runs: {', '.join(report['dagsterRunIds'])}")
    click.echo(describe(report["dagster"]))


COMMANDS = (users,)  # collected by memory_platform.cli
