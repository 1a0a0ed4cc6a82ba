"""Maintenance sensors: the projection outbox worker and the stale-Dream reconciler."""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from memory_platform.dreaming.runs import reconcile_stale_dreams
from memory_platform.dreaming.schedule import due_outbox_job
from memory_platform.orchestration.jobs import outbox_job
from memory_platform.resources import PostgresResource
from memory_platform.settings import get_settings

__all__ = ["outbox_sensor", "stale_dream_reconciler"]


@sensor(job=outbox_job, minimum_interval_seconds=get_settings().outbox_poll_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Every outbox_poll_seconds: launch the outbox worker when projection "
        "work is due (idle ticks launch nothing).")
def outbox_sensor(context: SensorEvaluationContext, postgres: PostgresResource):
    settings = postgres.settings()
    with postgres.connection(settings) as conn:
        due = due_outbox_job(conn, settings)
    if due is None:
        return SkipReason("no projection work due")
    job_id, attempts = due
    # One run per (first due job, attempt): a queued run is not requested twice, a retry is.
    return RunRequest(run_key=f"outbox:{job_id}:{attempts}")


@sensor(minimum_interval_seconds=get_settings().dream_reconcile_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Every 30 s, and on the daemon's first tick after start-up: running "
        "Dream rows without a heartbeat for dream_stale_minutes become failed with a "
        "diagnostic (one idempotent UPDATE, no run needed).")
def stale_dream_reconciler(context: SensorEvaluationContext, postgres: PostgresResource):
    settings = postgres.settings()
    with postgres.connection(settings) as conn:
        count = reconcile_stale_dreams(conn, settings)
    if count:
        context.log.warning(f"reconciled {count} stale running dream(s)")
    return SkipReason(f"reconciled {count} stale running dream(s)" if count
                      else "no stale running dream")
