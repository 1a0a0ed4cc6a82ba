"""Maintenance sensors: the projection outbox worker and the stale-Dream reconciler.

Their intervals come from the settings, so they are built by :func:`build_outbox_sensor` and
:func:`build_stale_dream_reconciler` when the definitions load.
"""

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from memory_platform.assets.maintenance import outbox_job
from memory_platform.dreaming.runs import reconcile_stale_dreams
from memory_platform.projection.outbox import due_outbox_job
from memory_platform.resources import PostgresResource
from memory_platform.settings import Settings

__all__ = ["build_outbox_sensor", "build_stale_dream_reconciler"]


def request_outbox_run(context: SensorEvaluationContext, postgres: PostgresResource):
    """A run of the outbox worker when projection work is due, else a skip reason."""
    settings = postgres.settings()
    with postgres.connection(settings) as conn:
        due = due_outbox_job(conn, settings)
    if due is None:
        return SkipReason("no projection work due")
    job_id, attempts = due
    # One run per (first due job, attempt): a queued run is not requested twice, a retry is.
    return RunRequest(run_key=f"outbox:{job_id}:{attempts}")


def reconcile_stale(context: SensorEvaluationContext, postgres: PostgresResource):
    """Fail running dream rows without a heartbeat (one idempotent UPDATE); say how many."""
    settings = postgres.settings()
    with postgres.connection(settings) as conn:
        count = reconcile_stale_dreams(conn, settings)
    if count:
        context.log.warning(f"reconciled {count} stale running dream(s)")
    return SkipReason(f"reconciled {count} stale running dream(s)" if count
                      else "no stale running dream")


def build_outbox_sensor(settings: Settings) -> SensorDefinition:
    """The outbox sensor, ticking every ``outbox_poll_seconds``."""

    @sensor(job=outbox_job, minimum_interval_seconds=settings.outbox_poll_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            description="Every outbox_poll_seconds: launch the outbox worker when projection "
            "work is due (idle ticks launch nothing).")
    def outbox_sensor(context: SensorEvaluationContext, postgres: PostgresResource):
        return request_outbox_run(context, postgres)

    return outbox_sensor


def build_stale_dream_reconciler(settings: Settings) -> SensorDefinition:
    """The reconciler, ticking every ``dream_reconcile_interval_seconds``."""

    @sensor(minimum_interval_seconds=settings.dream_reconcile_interval_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            description="Every dream_reconcile_interval_seconds, and on the daemon's first "
            "tick after start-up: running Dream rows without a heartbeat for "
            "dream_stale_minutes become failed with a diagnostic (one idempotent UPDATE, no "
            "run needed).")
    def stale_dream_reconciler(context: SensorEvaluationContext, postgres: PostgresResource):
        return reconcile_stale(context, postgres)

    return stale_dream_reconciler
