"""`memory-platform workspace sync` and `memory-platform import-transcripts`: the workspace's
memory files and the legacy transcript migration."""

from __future__ import annotations

import json
import sys

import click

from memory_platform.cli.common import PlatformCommand, PlatformGroup, platform_connection
from memory_platform.features.maintenance.legacy import IMPORT_AUDIENCES, import_transcripts
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def workspace() -> None:
    """The workspace's file-based memory (memory/**/*.md and the bootstrap files)."""


@workspace.command("sync")
@click.option("--dir", "directory", required=True,
              type=click.Path(exists=True, file_okay=False),
              help="Workspace directory (holds memory/ and AGENTS.md, SOUL.md, ...).")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def workspace_sync(directory: str, instance: str | None, as_json: bool) -> None:
    """Synchronise the workspace's memory files into workspace memories now: new files are
    written, changed ones replaced (re-chunked, re-embedded), rows of vanished files deleted.
    Idempotent. Exit status 1 when a file was refused."""
    from memory_platform.features.maintenance.workspace import sync_workspace

    settings = get_settings()
    instance_key = instance or settings.instance_key
    with platform_connection(settings) as conn:
        result = sync_workspace(conn, settings, instance_key, directory)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(f"{instance_key}: {result.files} files: {result.added} added, "
                   f"{result.updated} updated, {result.unchanged} unchanged, "
                   f"{result.deleted} rows deleted ({result.seconds:.1f} s)")
        if result.truncated:
            click.echo("the listing was truncated (too many files): no row was deleted")
        for path, reason in result.refused:
            click.echo(f"  refused {path}: {reason}", err=True)
    if result.refused:
        sys.exit(1)


@click.command("import-transcripts", cls=PlatformCommand)
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--user", "user_id", default=None, metavar="USER",
              help="Whose transcripts these are, where sessions.json names no userId: "
              "their lines are private to USER.")
@click.option("--audience", type=click.Choice(IMPORT_AUDIENCES), default=None,
              help="Another audience for every line: team (written as the transcript's "
              "user, visible to the team) or workspace (every user of the instance).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def import_transcripts_command(directory: str, instance: str | None, user_id: str | None,
                               audience: str | None, as_json: bool) -> None:
    """Import legacy .jsonl session transcripts from DIRECTORY as manual memories, each
    private to its user (the userId of its sessions.json entry, else --user), in session
    scope when sessions.json names its sessionKey. A transcript nobody is named for is not
    imported (counted as unowned). A migration path: safe to repeat (lines already imported
    are skipped; lines an earlier version imported for everyone, now withheld, are given
    their owner). Exit status 1 when any line was malformed, rejected or unowned."""
    settings = get_settings()
    instance_key = instance or settings.instance_key
    with platform_connection(settings) as conn:
        result = import_transcripts(conn, settings, instance_key, directory, user_id=user_id,
                                    audience=audience)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2))
    else:
        click.echo(f"{instance_key}: {result.files} transcripts ({result.sessions_resolved} "
                   f"with a sessionKey), {result.lines} lines: {result.imported} imported, "
                   f"{result.already_imported} already imported, {result.assigned} withheld "
                   f"lines assigned, {result.deduplicated} deduplicated, {result.ignored} "
                   f"ignored, {result.bad_lines} malformed, {result.rejected} rejected, "
                   f"{result.unowned} unowned ({result.seconds:.1f} s)")
        for file, line, reason in result.errors[:20]:
            click.echo(f"  {file}:{line}: {reason}", err=True)
        for file, reason in result.refused_files:
            click.echo(f"  refused {file}: {reason}", err=True)
    if result.bad_lines or result.rejected or result.unowned:
        sys.exit(1)


COMMANDS = (workspace, import_transcripts_command,)  # collected by memory_platform.cli
