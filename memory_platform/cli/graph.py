"""`memory-platform graph`: build the knowledge graph now and look into it."""

from __future__ import annotations

import json
import sys

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def graph() -> None:
    """Knowledge graph: work off graph jobs, rebuild a Dream's graph, search it."""


@graph.command("build")
@click.option("--partition", default=None, metavar="KEY",
              help="Only this audience partition instance/kind/key: its latest Dream's "
              "assertions and its other due graph work (`dream partitions` lists them).")
@click.option("--rebuild", is_flag=True, help="With --partition: remove the latest Dream's "
              "refs first and extract its assertions again.")
@click.option("--requeue-failed", is_flag=True, help="First make graph jobs that ran out of "
              "attempts (MEMORY_GRAPH_MAX_ATTEMPTS; e.g. a model unreachable for days) due "
              "again.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as one JSON object.")
def graph_build(partition: str | None, rebuild: bool, requeue_failed: bool,
                as_json: bool) -> None:
    """Extract the graph from approved assertions that are waiting for it (the outbox worker
    does this every outbox_poll_seconds under `make dev`; this does it now, in this process).
    Work that cannot be done now (model unreachable, malformed answer) stays queued."""
    from memory_platform.features.dreaming.targets import known_partitions
    from memory_platform.features.graph.build import GraphBuild, process_graph_jobs
    from memory_platform.orchestration.graph_step import graph_step

    if rebuild and not partition:
        raise click.UsageError("--rebuild needs --partition")
    settings = get_settings()
    with platform_connection(settings) as conn:
        if requeue_failed:
            from memory_platform.features.projection.outbox import (
                GRAPH_PROJECTION,
                requeue_exhausted,
            )

            revived = requeue_exhausted(conn, settings, GRAPH_PROJECTION)
            click.echo(f"requeued {revived} graph job(s) that had run out of attempts",
                       err=True)
        if partition:
            known_partitions(conn, [partition])
            build = graph_step(conn, settings, partition, rebuild=rebuild).build
        else:
            build = GraphBuild()
            while True:
                passed = process_graph_jobs(conn, settings)
                build.merge(passed)
                if not as_json:
                    click.echo(f"pass: {passed.jobs} jobs, {passed.batches} batches, "
                               f"+{passed.changes.claims_added} claims, "
                               f"{len(passed.failures)} failed batches", err=True)
                if passed.jobs < settings.graph_jobs_per_pass or passed.failures:
                    break
    if as_json:
        click.echo(json.dumps(build.as_json(), default=str))
        return
    summary = build.summary()
    click.echo(" ".join(f"{k}={v}" for k, v in summary.items() if v))
    for failure in build.failures:
        click.echo(f"kept for retry: {failure.partition_key} {failure.code}: "
                   f"{failure.message}", err=True)
    if build.failures:
        sys.exit(1)


@graph.command("search")
@click.argument("query")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--user", default=None, help="Search as this user (private rows of others "
              "are never shown; without a user only workspace rows are visible).")
@click.option("--channel", default=None, help="Search from this channel thread.")
@click.option("--limit", type=click.IntRange(1, 100), default=None, help="Items per kind.")
def graph_search(query: str, instance: str | None, user: str | None, channel: str | None,
                 limit: int | None) -> None:
    """Hybrid knowledge-graph search (lexical + vector, fused), printed as JSON."""
    from memory_platform.features.graph.search import knowledge_search
    from memory_platform.shared.access import AccessContext

    settings = get_settings()
    ctx = AccessContext(instance or settings.instance_key, user_id=user,
                        channel_thread_key=channel)
    with platform_connection(settings) as conn:
        result = knowledge_search(conn, settings, ctx, query, limit=limit)
    click.echo(json.dumps(result.as_json(), default=str, indent=2, ensure_ascii=False))


COMMANDS = (graph,)  # collected by memory_platform.cli
