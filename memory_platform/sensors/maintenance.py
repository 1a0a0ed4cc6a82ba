"""Maintenance sensors: the projection outbox worker, the stale-Dream reconciler and the
re-embedding backlog.

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
from memory_platform.features.dreaming.runs import reconcile_stale_dreams
from memory_platform.features.maintenance.reembedding import has_backlog
from memory_platform.features.maintenance.workspace import fingerprint
from memory_platform.features.projection.outbox import due_outbox_job
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.feature_definitions import FeatureAutomations
from memory_platform.orchestration.keys import REEMBED_BACKLOG_JOB, WORKSPACE_SYNC_JOB
from memory_platform.resources import PostgresResource
from memory_platform.shared.embeddings.generations import active_generation

__all__ = ["REEMBED_SENSOR_INSTANCES", "build_outbox_sensor", "build_stale_dream_reconciler",
           "reembed_backlog_sensor", "workspace_sync_sensor", "automations"]

REEMBED_SENSOR_INSTANCES = 50     # instances looked at per tick (bounded work)


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


def request_reembed_runs(context: SensorEvaluationContext, postgres: PostgresResource):
    """One run per instance whose active generation has a backlog (after a model switch or
    an embedding outage); the run key repeats while a run for that generation is pending."""
    settings = postgres.settings()
    requests = []
    with postgres.connection(settings) as conn:
        instances = [r[0] for r in conn.execute(
            "SELECT DISTINCT instance_key FROM agent_memory_embedding_generations"
            " WHERE status = 'active' ORDER BY 1 LIMIT %s",
            (REEMBED_SENSOR_INSTANCES,)).fetchall()]
        for instance in instances:
            generation = active_generation(conn, instance)
            if generation is not None and has_backlog(conn, generation):
                requests.append(RunRequest(
                    run_key=f"reembed:{instance}:{generation.generation_key}:"
                            f"{context.cursor or 0}",
                    run_config={"ops": {"convert_backlog": {"config": {
                        "instance_key": instance}}}}))
    if not requests:
        return SkipReason("no re-embedding backlog")
    context.update_cursor(str(int(context.cursor or 0) + 1))
    return requests


@sensor(job_name=REEMBED_BACKLOG_JOB, minimum_interval_seconds=300,
        default_status=DefaultSensorStatus.RUNNING,
        description="Every 5 minutes: a re-embedding run for each instance whose active "
        "generation still has rows without a vector.")
def reembed_backlog_sensor(context: SensorEvaluationContext, postgres: PostgresResource):
    return request_reembed_runs(context, postgres)


@sensor(job_name=WORKSPACE_SYNC_JOB, minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description="Every 30 s: a workspace sync run when a file of MEMORY_WORKSPACE_DIR "
        "(memory/**/*.md, the bootstrap files) was added, changed or removed.")
def workspace_sync_sensor(context: SensorEvaluationContext, postgres: PostgresResource):
    settings = postgres.settings()
    if settings.workspace_dir is None:
        return SkipReason("no workspace configured (MEMORY_WORKSPACE_DIR)")
    try:
        current = fingerprint(settings.workspace_dir)
    except Exception as exc:  # a missing directory is the operator's to fix; say so
        return SkipReason(f"workspace {settings.workspace_dir} unreadable: {exc}")
    if current == context.cursor:
        return SkipReason("no workspace file changed")
    context.update_cursor(current)
    return RunRequest(run_key=f"workspace:{current}")


def automations(settings: Settings) -> FeatureAutomations:
    """The outbox worker's sensor, the re-embedding and workspace sensors and the stale
    Dream reconciler."""
    return FeatureAutomations(sensors=[build_outbox_sensor(settings), reembed_backlog_sensor,
                                       workspace_sync_sensor,
                                       build_stale_dream_reconciler(settings)])
