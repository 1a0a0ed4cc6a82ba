"""`memory-platform export`, and `memory-platform import --format memory-platform|mem0`."""

from __future__ import annotations

import sys

import click

from memory_platform.cli.common import (
    PlatformCommand,
    ProgressLine,
    platform_connection,
    with_provider,
)
from memory_platform.settings import get_settings


@click.command("export", cls=PlatformCommand,
               short_help="Export an instance or one audience as JSON Lines.")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True, writable=True))
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--audience", default=None, metavar="KIND:KEY",
              help="Only this audience (private:USER, team, workspace, channel:THREAD).")
@click.option("--with-embeddings", is_flag=True,
              help="Carry the vectors (kept on import when the target uses the same model).")
def export_command(file: str, instance: str | None, audience: str | None,
                   with_embeddings: bool) -> None:
    """Export the instance (or one audience) to FILE ('-' writes stdout) in the documented
    memory-platform format (docs/export-format.md): sources, memories, chunks, assertions
    with evidence, review decisions, history, conflicts, the knowledge graph, session items
    and summaries, users and preferences. One consistent snapshot; progress on stderr."""
    from memory_platform.errors import InvalidInput
    from memory_platform.portability.export import export_instance, parse_audience

    settings = get_settings()
    instance = instance or settings.instance_key
    try:
        scope = parse_audience(audience) if audience else None
    except InvalidInput as exc:
        raise click.BadParameter(str(exc), param_hint="--audience") from exc
    line = ProgressLine()

    def progress(stats) -> None:
        line.show(f"{sum(stats.counts.values()):,} rows  "
                  f"{line.rate(sum(stats.counts.values())):,.0f} rows/s  "
                  f"({', '.join(f'{k} {v:,}' for k, v in stats.counts.items() if v)})")

    with platform_connection(settings) as conn, \
            click.open_file(file, "w", encoding="utf-8", atomic=file != "-") as out:
        stats = export_instance(conn, out, instance, audience=scope,
                                with_embeddings=with_embeddings, progress=progress)
    line.done()
    click.echo(f"exported {instance}{f' ({audience})' if audience else ''}: "
               f"{stats.lines:,} lines in {stats.seconds:.1f} s; "
               + ", ".join(f"{k} {v:,}" for k, v in stats.counts.items() if v)
               + f"; links {stats.links:,}", err=file == "-")


def import_portable(file: str, instance: str | None, audience_map: tuple[str, ...],
                    provider: str | None, batch_size: int | None, reembed: bool, *,
                    verify: bool, skip_rejected: bool, allow_existing_memberships: bool,
                    trust_file_states: bool) -> None:
    """The `import --format memory-platform` body (cli/imports.py delegates here). The
    target instance is the operator's: ``--instance`` is required (a file naming its own
    target would choose where its rows land)."""
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.errors import InvalidInput
    from memory_platform.portability.importing import ImportRejected, import_export
    from memory_platform.portability.rewrite import parse_map
    from memory_platform.portability.verify import read_header

    if file == "-":
        raise click.BadParameter("a memory-platform import reads a file (it is read twice: "
                                 "verified, then imported), not stdin", param_hint="FILE")
    if not instance:
        exported = read_header(file)["instance_key"]
        raise click.UsageError(f"--instance is required with --format memory-platform: the "
                               f"target instance is yours to choose, never the file's (this "
                               f"file says it was exported from {exported!r})")
    settings = with_provider(get_settings(), provider)
    embedder = get_provider(settings)
    mapping = parse_map(audience_map)
    line = ProgressLine()

    def progress(stats) -> None:
        line.show(f"{stats.lines:,} lines  {line.rate(stats.lines):,.0f} lines/s  "
                  f"added {stats.total_added:,}  already there {sum(stats.present.values()):,}"
                  f"  rejected {len(stats.rejected):,}")

    with platform_connection(settings) as conn:
        try:
            stats = import_export(conn, file, instance=instance, audiences=mapping,
                                  embedder=embedder, batch_size=batch_size or 1000,
                                  verify=verify, skip_rejected=skip_rejected,
                                  allow_existing_memberships=allow_existing_memberships,
                                  trust_file_states=trust_file_states, progress=progress)
        except ImportRejected as exc:
            line.done()
            _rejected(exc.stats.rejected)
            raise
        except InvalidInput:
            line.done()
            raise
        line.done()
        checked = "checksum verified" if stats.verified else "NOT verified (--no-verify)"
        click.echo(f"{stats.instance_key}: {stats.lines:,} lines in {stats.seconds:.1f} s "
                   f"({checked}): added {stats.total_added:,}, already there "
                   f"{sum(stats.present.values()):,}, links {stats.links_set:,}, "
                   f"vectors kept {stats.vectors_kept:,}, dropped {stats.vectors_dropped:,}")
        for kind, count in stats.added.items():
            click.echo(f"  {kind}: {count:,}")
        if not trust_file_states:
            click.echo("  imported assertions wait for review (--trust-file-states keeps "
                       "the file's review states)")
        for reason, count in stats.refused.items():
            click.echo(f"not imported: {count:,} {reason}")
        if reembed:
            from memory_platform.maintenance.reembedding import convert
            result = convert(conn, settings, stats.instance_key, embedder=embedder)
            click.echo(f"re-embedded with {result.generation_key}: "
                       + ", ".join(f"{v:,} {k}" for k, v in result.converted.items()))
            if result.error:
                click.echo(f"re-embedding stopped: {result.error}; run `memory-platform "
                           "embeddings reembed --until-done`", err=True)
    if stats.rejected:   # only with --skip-rejected: the rest was committed
        _rejected(stats.rejected)
        sys.exit(1)


def _rejected(rejected) -> None:
    click.echo("rejected lines:")
    for rejection in rejected[:20]:
        click.echo(f"  line {rejection.line}: {rejection.reason}")
    if len(rejected) > 20:
        click.echo(f"  ... and {len(rejected) - 20:,} more")


COMMANDS = (export_command,)  # collected by memory_platform.cli
