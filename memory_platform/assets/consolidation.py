"""Consolidation on Dagster: ``consolidation`` per audience partition, downstream of
``knowledge_graph`` (same run as the Dream), its blocking audit check, and
``consolidation_sweep`` (not partitioned: the most recently updated quiet partitions) with
its own job. The steps are in :mod:`memory_platform.orchestration.consolidation_step`, shared
with the Dream batch (which consolidates each partition, then sweeps once). (No ``from
__future__ import annotations``: Dagster reads the Config annotations.)
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
    define_asset_job,
)
from pydantic import Field

from memory_platform.orchestration.consolidation_step import (
    CONSOLIDATION_CHECK,
    CONSOLIDATION_CHECK_DESCRIPTION,
    consolidation_check,
    consolidation_step,
    sweep_metadata,
    sweep_step,
)
from memory_platform.orchestration.dream_step import check_fields
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import (
    CONSOLIDATION,
    CONSOLIDATION_SWEEP,
    KNOWLEDGE_GRAPH,
)
from memory_platform.orchestration.metadata import partition_label
from memory_platform.orchestration.partitions import audiences
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["CONSOLIDATION_GROUP", "consolidation", "consolidation_check_def",
           "consolidation_sweep", "consolidation_sweep_job"]

CONSOLIDATION_GROUP = "consolidation"


class ConsolidationConfig(Config):
    """Run config of ``consolidation`` / ``consolidation_sweep``."""

    dry_run: bool = Field(default=False, description="Candidate queries, model judgments, "
                          "rules and caps; the proposals go to the dream row, nothing else "
                          "is written.")


@asset(name=CONSOLIDATION, deps=[KNOWLEDGE_GRAPH], partitions_def=audiences,
       group_name=CONSOLIDATION_GROUP, pool=WRITER_POOL, kinds={"python", "postgres"},
       description="Same-slot assertion resolution, entity merging and stale pruning of the "
       "partition (then a sweep of quiet partitions), every mutation audited "
       "(memory_platform.consolidation).")
def consolidation(context: AssetExecutionContext, config: ConsolidationConfig,
                  postgres: PostgresResource,
                  embeddings: EmbeddingsResource) -> MaterializeResult:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        step = consolidation_step(conn, settings, context.partition_key,
                                  dry_run=config.dry_run)
    context.log.info(step.summary())
    return MaterializeResult(metadata=step.metadata)


@asset(name=CONSOLIDATION_SWEEP, deps=[CONSOLIDATION], group_name=CONSOLIDATION_GROUP,
       pool=WRITER_POOL, kinds={"python", "postgres"},
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


with warnings.catch_warnings():  # partitioned asset checks are a preview in 1.13
    warnings.simplefilter("ignore", PreviewWarning)

    @asset_check(asset=CONSOLIDATION, name=CONSOLIDATION_CHECK, blocking=True,
                 partitions_def=audiences, description=CONSOLIDATION_CHECK_DESCRIPTION)
    def consolidation_check_def(context, postgres: PostgresResource) -> AssetCheckResult:
        with postgres.connection() as conn:
            outcome = consolidation_check(conn, context.partition_key)
        return AssetCheckResult(**check_fields(outcome))


consolidation_sweep_job = define_asset_job(
    "consolidation_sweep_job", selection=[CONSOLIDATION_SWEEP],
    description="Consolidate the most recently updated quiet partitions now.")
