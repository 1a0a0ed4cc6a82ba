"""The knowledge graph on Dagster: the ``knowledge_graph`` step of the daily chain, per
audience partition, downstream of the Dream's ``assertion_projections``, and its blocking
invariant check.

It has its own op (unlike the five Dream assets, which one engine call produces): a graph
build can be retried or backfilled alone, and a failed extraction never re-runs a Dream.
When a Dream reached no projections (below the input minimum, a malformed answer, a dry run)
the asset is skipped with it. Backfilling it with ``rebuild: true`` removes the latest
Dream's refs and extracts its assertions again (stable refs of earlier Dreams stay). The
step is :func:`memory_platform.orchestration.graph_step.graph_step`; the asset, its check and
the Dream batch's part are built from :data:`STEP` (:mod:`memory_platform.orchestration.chain`).
(No ``from __future__ import annotations``: Dagster reads the Config annotations.)
"""

from dagster import Config
from pydantic import Field

from memory_platform.orchestration.chain import Check, Step, StepContext, StepReport, asset_defs
from memory_platform.orchestration.graph_step import (
    GRAPH_CHECK,
    GRAPH_CHECK_DESCRIPTION,
    graph_check,
    graph_step,
)
from memory_platform.orchestration.keys import ASSERTION_PROJECTIONS, KNOWLEDGE_GRAPH
from memory_platform.orchestration.metadata import partition_label

__all__ = ["GRAPH_GROUP", "STEP", "STEPS", "knowledge_graph", "knowledge_graph_check"]

GRAPH_GROUP = "knowledge_graph"


class GraphConfig(Config):
    """Run config of ``knowledge_graph`` (``ops: {knowledge_graph: {config: ...}}``)."""

    rebuild: bool = Field(default=False, description="Remove the latest Dream's refs and "
                          "evidence first, then extract its assertions again.")


def _graph(ctx: StepContext) -> StepReport:
    step = graph_step(ctx.conn, ctx.settings, ctx.partition, rebuild=ctx.option("rebuild"),
                      dream_id=ctx.dream_id)
    return StepReport(step.metadata, [step.summary()], [
        f"kept for retry: {partition_label(failure.partition_key)} {failure.code} (the "
        "message is in the process log)" for failure in step.build.failures])


STEP = Step(
    KNOWLEDGE_GRAPH, after=(ASSERTION_PROJECTIONS,), run=_graph, group=GRAPH_GROUP,
    config=GraphConfig,
    description="Entities, claims and edges extracted from the partition's approved "
    "assertion projections (the latest Dream's and any written outside Dreaming), with "
    "cumulative source refs, evidence and embeddings (memory_platform.features.graph).",
    checks=(Check(GRAPH_CHECK, GRAPH_CHECK_DESCRIPTION,
                  lambda ctx: graph_check(ctx.conn, ctx.partition)),))
STEPS = (STEP,)

knowledge_graph, (knowledge_graph_check,) = asset_defs(STEP)
