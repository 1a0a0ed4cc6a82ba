"""`memory-platform import` and `memory-platform embeddings`: bulk import, re-embedding."""

from __future__ import annotations

import sys

import click

from memory_platform.cli.common import (
    PlatformCommand,
    PlatformGroup,
    ProgressLine,
    platform_connection,
    with_provider,
)
from memory_platform.settings import get_settings


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
        from memory_platform.cli.portability import import_portable
        import_portable(file, instance, audience_map, provider, batch_size, reembed,
                        verify=verify, skip_rejected=skip_rejected,
                        allow_existing_memberships=allow_existing_memberships,
                        trust_file_states=trust_file_states)
        return
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.memories.bulk import import_memories
    from memory_platform.memories.bulk.reader import context_from_row, read_jsonl

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
            from memory_platform.portability.mem0 import bulk_rows, read_mem0
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


@click.group(cls=PlatformGroup)
def embeddings() -> None:
    """Embedding generations and the re-embedding backlog."""


@embeddings.command("reembed")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Rows (assertions, then chunks) converted per run "
                   "(default MEMORY_REEMBED_RUN_LIMIT).")
@click.option("--until-done", "--all", "until_done", is_flag=True,
              help="Repeat runs of --limit rows until the backlog is empty (or only rows "
                   "other workers hold are left).")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--provider", type=click.Choice(["hash", "openai", "local"]), default=None,
              help="Target provider (default MEMORY_EMBEDDING_PROVIDER); it becomes the "
                   "instance's active generation.")
def embeddings_reembed(limit: int | None, until_done: bool, instance: str | None,
                       provider: str | None) -> None:
    """Convert the re-embedding backlog to the configured provider's generation.

    Chunks without a vector (or with another generation's), active assertions and
    knowledge-graph entities and claims without one get a vector of the configured
    provider's generation, in transactions of MEMORY_REEMBED_BATCH_SIZE rows. Progress goes
    to stderr; the totals and the remaining backlog to stdout. Safe to run in several
    processes at once (rows are locked with SKIP LOCKED). Exit status 1 on a provider error
    (the failed batch is left untouched)."""
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.projection.reembed import reembed_backfill, reembed_until_done

    settings = with_provider(get_settings(), provider)
    embedder = get_provider(settings)
    line = ProgressLine()

    def progress(totals) -> None:
        line.show(f"converted {totals.converted:,} ({totals.chunks_converted:,} chunks, "
                  f"{totals.assertions_embedded:,} assertions)  "
                  f"{line.rate(totals.converted):,.1f} rows/s")

    run = reembed_until_done if until_done else reembed_backfill
    with platform_connection(settings) as conn:
        result = run(conn, settings, limit=limit, embedder=embedder, instance_key=instance,
                     progress=progress)
        graph = {"embedded": 0, "deferred": 0}
        if not result.error:   # graph entities and claims, in bounded rounds
            from memory_platform.graph.embed import reembed_graph
            while True:
                done = reembed_graph(conn, settings, result.instance_key, embedder=embedder)
                graph = {k: graph[k] + done[k] for k in graph}
                if done["deferred"] or done["embedded"] == 0 or not until_done:
                    break
    line.done()
    click.echo(f"{result.instance_key}: graph: {graph['embedded']:,} entities and claims "
               f"embedded, {graph['deferred']:,} deferred", err=bool(graph["deferred"]))
    click.echo(f"{result.instance_key}: {result.chunks_converted:,} chunks and "
               f"{result.assertions_embedded:,} assertions embedded with "
               f"{result.generation_key}; backlog ~{result.remaining_chunks:,} chunks, "
               f"~{result.remaining_assertions:,} assertions")
    if result.error:
        click.echo(f"stopped: {result.error}; the rows of the failed batch are untouched, "
                   "run the command again once the provider answers", err=True)
        sys.exit(1)


@embeddings.command("switch")
@click.option("--provider", type=click.Choice(["hash", "openai", "local"]), required=True,
              help="The new embedding provider (its model and dimensions come from the "
                   "settings: MEMORY_OPENAI_EMBEDDING_MODEL, MEMORY_HASH_EMBEDDING_DIMENSIONS, "
                   "MEMORY_LOCAL_EMBEDDING_MODEL, ...).")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--until-done", "until_done", is_flag=True,
              help="Convert the whole backlog now (default: one run of "
                   "MEMORY_REEMBED_RUN_LIMIT rows; the rest is converted after each Dream or "
                   "by `embeddings switch`/`reembed` again).")
def embeddings_switch(provider: str, instance: str | None, until_done: bool) -> None:
    """Switch the instance's embedding model on a live system, then convert.

    Registers the provider's generation, builds its vector indexes without blocking writes
    (CREATE INDEX CONCURRENTLY) and makes it the active generation; old vectors stay in
    their generation and are never compared with new ones. Then chunks, assertions and
    knowledge-graph entities and claims are converted batch by batch (one transaction each);
    unconverted rows stay findable by keyword meanwhile. Progress goes to stderr; the
    counts per kind and the backlog left to stdout. Set MEMORY_EMBEDDING_PROVIDER (and the
    model settings) of the API and Dagster processes to the new provider as well: a writer
    still configured with the old one makes the old generation active again. Exit status 1
    on a provider error (the failed batch is untouched; run the command again)."""
    from memory_platform.embeddings.factory import get_provider
    from memory_platform.maintenance.reembedding import KINDS, convert
    from memory_platform.projection.switch import switch_generation

    settings = with_provider(get_settings(), provider)
    embedder = get_provider(settings)
    instance = instance or settings.instance_key
    line = ProgressLine()

    def progress(totals) -> None:
        parts = ", ".join(f"{totals.converted[k]:,} {k}" for k in KINDS)
        line.show(f"converted {totals.total_converted:,} ({parts})  "
                  f"{line.rate(totals.total_converted):,.1f} rows/s  batches {totals.batches:,}")

    with platform_connection(settings) as conn:
        generation = switch_generation(conn, settings, embedder, instance_key=instance)
        click.echo(f"{instance}: active generation {generation.generation_key}", err=True)
        batches = None
        if not until_done:
            batches = max(1, settings.reembed_run_limit // settings.reembed_batch_size)
        result = convert(conn, settings, instance, embedder=embedder, batches=batches,
                         progress=progress)
    if result.batches:
        progress(result)
    line.done()
    done = ", ".join(f"{result.converted[k]:,} {k}" for k in KINDS)
    left = ", ".join(f"~{result.remaining[k]:,} {k}" for k in KINDS)
    click.echo(f"{instance}: switched to {result.generation_key}; converted {done}; "
               f"backlog {left}")
    if result.error:
        click.echo(f"stopped: {result.error}; the rows of the failed batch are untouched, "
                   "run the command again once the provider answers", err=True)
        sys.exit(1)


COMMANDS = (import_command, embeddings,)  # collected by memory_platform.cli
