"""`memory-platform import` and `memory-platform export`: moving an instance's data in and
out (JSON Lines of memories, the memory-platform export format, a mem0 export)."""

from __future__ import annotations

import sys

import click

from memory_platform.cli.common import (
    PlatformCommand,
    ProgressLine,
    platform_connection,
    with_provider,
)
from memory_platform.foundation.settings import get_settings


def _count_rows(path: str) -> int | None:
    """Non-blank lines of the file (the import's size, for the index decision); None for
    stdin."""
    if path == "-":
        return None
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


@click.command("import", cls=PlatformCommand,
               short_help="Bulk-import memories from a JSON Lines file.")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--instance", default=None,
              help="Instance of rows without their own instance_key (default "
                   "MEMORY_INSTANCE_KEY); memory-platform format: the target instance "
                   "(required: never taken from the file).")
@click.option("--batch-size", type=click.IntRange(1, 5000), default=None,
              help="Rows per transaction (default MEMORY_IMPORT_BATCH_SIZE; memory-platform "
                   "format: lines per statement group, default 1000; the whole file is one "
                   "transaction).")
@click.option("--provider", type=click.Choice(["hash", "openai", "local"]), default=None,
              help="Embedding provider (default MEMORY_EMBEDDING_PROVIDER).")
@click.option("--rebuild-index/--no-rebuild-index", default=None,
              help="Drop the generation's HNSW chunk index for the load and rebuild it after "
                   "(default: when the import is larger than MEMORY_IMPORT_REBUILD_INDEX_MIN_ROWS "
                   "and than the rows the index holds).")
@click.option("--format", "fmt", type=click.Choice(["memories", "memory-platform", "mem0"]),
              default="memories", show_default=True,
              help="memories: the rows described above; memory-platform: a "
                   "`memory-platform export` file (docs/export-format.md); mem0: mem0's "
                   "memory export "
                   "(docs/migrating-from-mem0.md).")
@click.option("--audience-map", "audience_map", multiple=True, metavar="FROM=TO",
              help="memory-platform format: move an audience, e.g. private:anna=private:bob, "
                   "channel:C1=channel:C2, private:anna=team (repeatable).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="memory-platform format: refuse a file whose footer has no SHA-256 (an "
                   "older release's export); --no-verify imports it unchecked. A checksum "
                   "that is there and wrong is always refused.")
@click.option("--skip-rejected", is_flag=True,
              help="memory-platform format: commit the accepted lines when some are refused "
                   "(default: one refused line rolls the whole import back).")
@click.option("--allow-existing-memberships", is_flag=True,
              help="memory-platform format: also import session rows, participants and "
                   "channel members for sessions and channels the file does not bring or "
                   "the target already uses (default: refused and counted).")
@click.option("--trust-file-states", is_flag=True,
              help="memory-platform format: keep the file's review states, review decisions,"
                   " history and graph (a restore); default: imported assertions wait for "
                   "review.")
@click.option("--reembed/--no-reembed", default=True, show_default=True,
              help="memory-platform format: embed what came without vectors of the "
                   "configured model right after the import.")
@click.option("--mem0-visibility", type=click.Choice(["private", "derived", "team"]),
              default="private", show_default=True,
              help="mem0 format: the audience of a memory with a user_id (derived: the "
                   "user's share-with-team preference decides, as for a write).")
def import_command(file: str, instance: str | None, batch_size: int | None,
                   provider: str | None, rebuild_index: bool | None, fmt: str,
                   audience_map: tuple[str, ...], verify: bool, skip_rejected: bool,
                   allow_existing_memberships: bool, trust_file_states: bool, reembed: bool,
                   mem0_visibility: str) -> None:
    """Import memories from a JSON Lines FILE ('-' reads stdin), one object per line:

    \b
    {"content": "...", "visibility": "private|team|workspace|channel",
     "user_id", "session_key", "group_room_id", "channel_thread_key", "channel_type",
     "instance_key", "subject_refs": {}, "source_type": "fact|manual|flush|summary|prompt_file",
     "assertion_type", "trust_class", "title", "metadata": {}}

    Every row gets the rules of a single write (validation, credential rejection, visibility
    from its access fields, dedup, chunking, source envelope, fact assertions under the
    write-path policy). source_type defaults to "manual" and trust_class to "imported" (so
    imported facts wait for review unless marked "human_direct").

    A bad row is reported with its line number and skipped; the rest continue. When the
    embedding provider fails, rows are stored keyword-only (`memory-platform embeddings
    reembed` gives them vectors later). Progress goes to stderr; the counts, the index
    decision and the rejected rows to stdout. Exit status 1 when any row was rejected.

    --format memory-platform reads an export (verified first, then imported in one
    transaction: all or nothing; idempotent; rewritten into --instance, which is required,
    and --audience-map; docs/export-format.md); --format mem0 maps mem0's memories onto the
    rows above (source_type fact, trust_class imported: they follow the review policy)."""
    if fmt == "memory-platform":
        import_portable(file, instance, audience_map, provider, batch_size, reembed,
                        verify=verify, skip_rejected=skip_rejected,
                        allow_existing_memberships=allow_existing_memberships,
                        trust_file_states=trust_file_states)
        return
    from memory_platform.features.memories.bulk import import_memories
    from memory_platform.features.memories.bulk.reader import context_from_row, read_jsonl
    from memory_platform.shared.embeddings.factory import get_provider

    settings = with_provider(get_settings(), provider)
    embedder = get_provider(settings)
    expected = _count_rows(file)
    line = ProgressLine()

    def progress(stats) -> None:
        line.show(f"{stats.rows:,}{f'/{expected:,}' if expected else ''} rows  "
                  f"{line.rate(stats.rows):,.0f} rows/s  accepted {stats.accepted:,}  "
                  f"deduplicated {stats.deduplicated:,}  rejected {len(stats.rejected):,}")

    with platform_connection(settings) as conn, click.open_file(file, "rb") as handle:
        rows = read_jsonl(handle)
        if fmt == "mem0":
            from memory_platform.features.portability.mem0 import bulk_rows, read_mem0
            if file == "-":
                raise click.BadParameter("a mem0 export is read from a file", param_hint="FILE")
            rows, expected = bulk_rows(read_mem0(file), visibility=mem0_visibility), None
        stats = import_memories(
            conn, settings, context_from_row(instance or settings.instance_key),
            rows, embedder=embedder, batch_size=batch_size, progress=progress,
            rebuild_index=rebuild_index, expected_rows=expected,
        )
    progress(stats)
    line.done()
    click.echo(f"imported {stats.rows:,} rows in {stats.seconds:.1f} s "
               f"({stats.rows_per_second:,.0f} rows/s): {stats.accepted:,} accepted, "
               f"{stats.deduplicated:,} deduplicated, {len(stats.rejected):,} rejected")
    click.echo(f"chunks {stats.chunks:,} ({stats.embedded:,} memories embedded with "
               f"{stats.generation_key}, {stats.keyword_only:,} keyword-only); assertions "
               f"{stats.assertions_created:,} created, {stats.assertions_activated:,} active")
    if stats.index_rebuilt:
        click.echo(f"load {stats.load_seconds:.1f} s, HNSW index rebuilt in "
                   f"{stats.index_seconds:.1f} s")
    elif stats.index_note:
        click.echo(f"index: {stats.index_note}")
    for error in stats.embedding_errors:
        click.echo(f"embedding failed (rows stored keyword-only; run `memory-platform "
                   f"embeddings reembed`): {error}", err=True)
    if stats.rejected:
        click.echo("rejected rows:")
        for rejection in stats.rejected[:20]:
            click.echo(f"  line {rejection.line}: {rejection.reason}")
        if len(stats.rejected) > 20:
            click.echo(f"  ... and {len(stats.rejected) - 20:,} more")
        sys.exit(1)


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
    from memory_platform.features.portability.export import export_instance, parse_audience
    from memory_platform.foundation.errors import InvalidInput

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
    """The `import --format memory-platform` body (import_command delegates here). The
    target instance is the operator's: ``--instance`` is required (a file naming its own
    target would choose where its rows land)."""
    from memory_platform.features.portability.importing import ImportRejected, import_export
    from memory_platform.features.portability.rewrite import parse_map
    from memory_platform.features.portability.verify import read_header
    from memory_platform.foundation.errors import InvalidInput
    from memory_platform.shared.embeddings.factory import get_provider

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
            from memory_platform.features.maintenance.reembedding import convert
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


COMMANDS = (import_command, export_command)  # collected by memory_platform.cli
