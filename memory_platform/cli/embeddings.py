"""`memory-platform embeddings`: the embedding generations and the re-embedding backlog."""

from __future__ import annotations

import sys

import click

from memory_platform.cli.common import (
    PlatformGroup,
    ProgressLine,
    platform_connection,
    with_provider,
)
from memory_platform.foundation.settings import get_settings


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
    from memory_platform.features.projection.reembed import reembed_backfill, reembed_until_done
    from memory_platform.shared.embeddings.factory import get_provider

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
            from memory_platform.features.graph.embed import reembed_graph
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
    from memory_platform.features.maintenance.reembedding import KINDS, convert
    from memory_platform.features.projection.switch import switch_generation
    from memory_platform.shared.embeddings.factory import get_provider

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


COMMANDS = (embeddings,)  # collected by memory_platform.cli
