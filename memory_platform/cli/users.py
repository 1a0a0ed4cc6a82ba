"""`memory-platform users`: people of an instance. `users erase USER` removes every row of the
user's private audience and what they authored elsewhere, in one transaction, and prints the
erasure report (rows removed per table, never content); the report is also kept in
``agent_memory_erasures`` (memory_platform/maintenance/erasure.py).
"""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import platform_connection
from memory_platform.settings import get_settings


@click.group()
def users() -> None:
    """People of an instance: erasure."""


@users.command("erase")
@click.argument("user_id")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def users_erase(user_id: str, instance: str | None, as_json: bool, yes: bool) -> None:
    """Erase USER_ID: their sessions, sources, memories, assertions only they support, their
    private knowledge graph, profile, feedback, memberships and API keys. Cannot be undone."""
    from memory_platform.errors import MemoryPlatformError
    from memory_platform.maintenance.erasure import erase_user

    settings = get_settings()
    key = instance or settings.instance_key
    if not yes:
        click.confirm(f"Erase every row of user {user_id!r} in instance {key!r}? "
                      "This cannot be undone", abort=True)
    try:
        with platform_connection(settings) as conn:
            report = erase_user(conn, settings, key, user_id, requested_by="cli")
    except MemoryPlatformError as exc:
        raise click.ClickException(exc.message) from exc
    if as_json:
        click.echo(json.dumps(report.as_dict(), sort_keys=True))
        return
    click.echo(f"erased user in instance {key!r}: {report.total_removed} rows removed "
               f"(report {report.id})")
    for table, count in sorted(report.removed.items()):
        if count:
            click.echo(f"  {table}: {count}")
    for column, count in sorted(report.updated.items()):
        if count:
            click.echo(f"  {column}: {count} updated")
