"""Maintenance jobs: the projection outbox worker (launched by ``outbox_sensor``).

One run first expires assertions whose validity window ended (their projection and graph
jobs follow in the same run), works off the projection jobs, then the graph jobs they and the
ledger triggers wrote (approved assertions written outside Dreaming, coalesced per audience
into bounded extraction batches), then sweeps graph refs of assertions no longer told."""

from dagster import (
    AssetObservation,
    Backoff,
    MetadataValue,
    OpExecutionContext,
    RetryPolicy,
    job,
    op,
)

from memory_platform.features.consolidation.lifecycle import expire_due
from memory_platform.features.events import webhooks as _webhooks  # noqa: F401  (registers deliveries)
from memory_platform.features.graph.build import process_graph_jobs, sweep_unsupported
from memory_platform.features.projection.outbox import process_outbox_until_idle
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import OUTBOX_TABLE
from memory_platform.orchestration.metadata import partition_label
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["outbox_job", "DEFINITIONS"]

_BATCH = 100
_MAX_BATCHES = 20          # bounded: the sensor launches another run for the rest


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    retry_policy=RetryPolicy(max_retries=3, delay=10, backoff=Backoff.EXPONENTIAL),
    description="Work off due projection and graph jobs (idempotent: a retry repeats "
    "nothing).")
def process_projection_outbox(context: OpExecutionContext, postgres: PostgresResource,
                              embeddings: EmbeddingsResource) -> dict[str, int]:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        expired = expire_due(conn, settings)
        total = process_outbox_until_idle(conn, settings, batch=_BATCH, max_batches=_MAX_BATCHES)
        graph = process_graph_jobs(conn, settings)
        swept = sweep_unsupported(conn)
    summary = {**total.summary(), "expiredAssertions": len(expired),
               "graphJobs": graph.jobs, "graphBatches": graph.batches,
               "graphFailedBatches": len(graph.failures),
               "graphClaimsAdded": graph.changes.claims_added,
               "graphClaimsRetracted": graph.changes.claims_retracted + swept.claims_retracted,
               "graphEntitiesQuarantined": (graph.changes.entities_quarantined
                                            + swept.entities_quarantined)}
    for failure in graph.failures:
        context.log.warning(f"graph batch kept for retry: "
                            f"{partition_label(failure.partition_key)} {failure.code}")
    context.log_event(AssetObservation(
        asset_key=OUTBOX_TABLE,
        metadata={k: MetadataValue.int(v) for k, v in summary.items()}))
    context.log.info(f"outbox: {summary}")
    return summary


@job(description="The projection outbox worker (launched by outbox_sensor when work is due).")
def outbox_job() -> None:
    process_projection_outbox()


DEFINITIONS = FeatureDefinitions(jobs=[outbox_job])
