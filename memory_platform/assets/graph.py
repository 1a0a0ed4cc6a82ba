"""The knowledge graph on Dagster: the ``knowledge_graph`` asset per audience partition,
downstream of the Dream's ``assertion_projections``, and its blocking invariant check.

It has its own op (unlike the five Dream assets, which one engine call produces): a graph
build can be retried or backfilled alone, and a failed extraction never re-runs a Dream.
When a Dream reached no projections (below the input minimum, a malformed answer, a dry run)
the asset is skipped with it. Backfilling it with ``rebuild: true`` removes the latest
Dream's refs and extracts its assertions again (stable refs of earlier Dreams stay). The
step is :func:`memory_platform.orchestration.graph_step.graph_step`, shared with the Dream
batch. (No ``from __future__ import annotations``: Dagster reads the Config annotations.)
"""

import warnings

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    PreviewWarning,
    asset,
    asset_check,
)
from pydantic import Field

from memory_platform.orchestration.dream_step import check_fields
from memory_platform.orchestration.graph_step import (
    GRAPH_CHECK,
    GRAPH_CHECK_DESCRIPTION,
    graph_check,
    graph_step,
)
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import ASSERTION_PROJECTIONS, KNOWLEDGE_GRAPH
from memory_platform.orchestration.metadata import partition_label
from memory_platform.orchestration.partitions import audiences
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["GRAPH_GROUP", "knowledge_graph", "knowledge_graph_check"]

GRAPH_GROUP = "knowledge_graph"


class GraphConfig(Config):
    """Run config of ``knowledge_graph`` (``ops: {knowledge_graph: {config: ...}}``)."""

    rebuild: bool = Field(default=False, description="Remove the latest Dream's refs and "
                          "evidence first, then extract its assertions again.")


@asset(name=KNOWLEDGE_GRAPH, deps=[ASSERTION_PROJECTIONS], partitions_def=audiences,
       group_name=GRAPH_GROUP, pool=WRITER_POOL, kinds={"python", "postgres"},
       description="Entities, claims and edges extracted from the partition's approved "
       "assertion projections (the latest Dream's and any written outside Dreaming), with "
       "cumulative source refs, evidence and embeddings (memory_platform.graph).")
def knowledge_graph(context: AssetExecutionContext, config: GraphConfig,
                    postgres: PostgresResource,
                    embeddings: EmbeddingsResource) -> MaterializeResult:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        step = graph_step(conn, settings, context.partition_key, rebuild=config.rebuild)
    context.log.info(step.summary())
    for failure in step.build.failures:
        context.log.warning(f"kept for retry: {partition_label(failure.partition_key)} "
                            f"{failure.code} (the message is in the process log)")
    return MaterializeResult(metadata=step.metadata)


with warnings.catch_warnings():  # partitioned asset checks are a preview in 1.13
    warnings.simplefilter("ignore", PreviewWarning)

    @asset_check(asset=KNOWLEDGE_GRAPH, name=GRAPH_CHECK, blocking=True,
                 partitions_def=audiences, description=GRAPH_CHECK_DESCRIPTION)
    def knowledge_graph_check(context, postgres: PostgresResource) -> AssetCheckResult:
        with postgres.connection() as conn:
            outcome = graph_check(conn, context.partition_key)
        return AssetCheckResult(**check_fields(outcome))
