"""Consolidation on Dagster: the ``consolidation`` step of the daily chain per audience
partition, downstream of ``knowledge_graph`` (same run as the Dream), its blocking audit
check, and ``consolidation_sweep`` (not partitioned: the most recently updated quiet
partitions) with its own job. The steps are in
:mod:`memory_platform.orchestration.consolidation_step`; the asset, its check and the Dream
batch's part (each partition consolidated, then one sweep, the step's :class:`Finish`) are
built from :data:`STEP`. (No ``from __future__ import annotations``: Dagster reads the Config
annotations.)
"""

from dagster import Config, MaterializeResult, asset, define_asset_job
from pydantic import Field

from memory_platform.orchestration.chain import (
    KINDS,
    Check,
    Finish,
    Step,
    StepContext,
    StepReport,
    asset_defs,
)
from memory_platform.orchestration.consolidation_step import (
    CONSOLIDATION_CHECK,
    CONSOLIDATION_CHECK_DESCRIPTION,
    consolidation_check,
    consolidation_step,
    sweep_metadata,
    sweep_step,
)
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import (
    CONSOLIDATION,
    CONSOLIDATION_SWEEP,
    KNOWLEDGE_GRAPH,
)
from memory_platform.orchestration.metadata import partition_label
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["CONSOLIDATION_GROUP", "STEP", "STEPS", "consolidation", "consolidation_check_def",
           "consolidation_sweep", "consolidation_sweep_job", "DEFINITIONS"]

CONSOLIDATION_GROUP = "consolidation"


class ConsolidationConfig(Config):
    """Run config of ``consolidation`` / ``consolidation_sweep``."""

    dry_run: bool = Field(default=False, description="Candidate queries, model judgments, "
                          "rules and caps; the proposals go to the dream row, nothing else "
                          "is written.")


def _consolidation(ctx: StepContext) -> StepReport:
    # One partition per run sweeps there; a batch sweeps once at its end (_sweep).
    step = consolidation_step(ctx.conn, ctx.settings, ctx.partition,
                              dry_run=ctx.option("dry_run"), with_sweep=not ctx.in_batch,
                              dream_id=ctx.dream_id)
    return StepReport(step.metadata, [step.summary()])


def _sweep(conn, settings, consolidated) -> StepReport:
    """After a batch's partitions: the quiet partitions it did not process, recorded on its
    last dream row."""
    swept = sweep_step(conn, settings, processed=[key for key, _ in consolidated],
                       record_dream=consolidated[-1][1])
    return StepReport(sweep_metadata(swept), [
        f"sweep {partition_label(result.partition.partition_key)}: {result.summary()}"
        for result in swept])


STEP = Step(
    CONSOLIDATION, after=(KNOWLEDGE_GRAPH,), run=_consolidation, group=CONSOLIDATION_GROUP,
    config=ConsolidationConfig,
    description="Same-slot assertion resolution, entity merging and stale pruning of the "
    "partition (then a sweep of quiet partitions), every mutation audited "
    "(memory_platform.features.consolidation).",
    checks=(Check(CONSOLIDATION_CHECK, CONSOLIDATION_CHECK_DESCRIPTION,
                  lambda ctx: consolidation_check(ctx.conn, ctx.partition)),),
    finish=Finish(CONSOLIDATION_SWEEP, "sweep", _sweep))
STEPS = (STEP,)

consolidation, (consolidation_check_def,) = asset_defs(STEP)


@asset(name=CONSOLIDATION_SWEEP, deps=[CONSOLIDATION], group_name=CONSOLIDATION_GROUP,
       pool=WRITER_POOL, kinds=KINDS,
       description="Consolidation of the most recently updated quiet partitions (at least two "
       "current approved assertions embedded in the active generation), up to "
       "consolidation_sweep_partitions.")
def consolidation_sweep(context, config: ConsolidationConfig, postgres: PostgresResource,
                        embeddings: EmbeddingsResource) -> MaterializeResult:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        swept = sweep_step(conn, settings, processed=set(), dry_run=config.dry_run)
    for result in swept:
        context.log.info(f"{partition_label(result.partition.partition_key)}: "
                         f"{result.summary()}")
    return MaterializeResult(metadata=sweep_metadata(swept))


consolidation_sweep_job = define_asset_job(
    "consolidation_sweep_job", selection=[CONSOLIDATION_SWEEP],
    description="Consolidate the most recently updated quiet partitions now.")


DEFINITIONS = FeatureDefinitions(assets=[consolidation_sweep], jobs=[consolidation_sweep_job])
