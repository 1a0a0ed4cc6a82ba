"""Maintenance jobs: the projection outbox worker (launched by ``outbox_sensor``)."""

from dagster import (
    AssetObservation,
    Backoff,
    MetadataValue,
    OpExecutionContext,
    RetryPolicy,
    job,
    op,
)

from memory_platform.assets.ledger import OUTBOX_TABLE
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.projection.outbox import process_outbox_until_idle
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["outbox_job"]

_BATCH = 100
_MAX_BATCHES = 20          # bounded: the sensor launches another run for the rest


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    retry_policy=RetryPolicy(max_retries=3, delay=10, backoff=Backoff.EXPONENTIAL),
    description="Work off due projection jobs (idempotent: a retry repeats nothing).")
def process_projection_outbox(context: OpExecutionContext, postgres: PostgresResource,
                              embeddings: EmbeddingsResource) -> dict[str, int]:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        total = process_outbox_until_idle(conn, settings, batch=_BATCH, max_batches=_MAX_BATCHES)
    summary = total.summary()
    context.log_event(AssetObservation(
        asset_key=OUTBOX_TABLE,
        metadata={k: MetadataValue.int(v) for k, v in summary.items()}))
    context.log.info(f"outbox: {summary}")
    return summary


@job(description="The projection outbox worker (launched by outbox_sensor when work is due).")
def outbox_job() -> None:
    process_projection_outbox()
