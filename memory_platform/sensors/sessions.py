"""The session maintenance sensor: a run of ``session_maintenance_job`` when sessions are due.

Its interval comes from the settings (``session_maintenance_sensor_interval_seconds``), so it
is built by :func:`build_session_maintenance_sensor` when the definitions load. A tick
requests at most one run, and none while a run of the job is queued or in progress (that
run takes the due sessions; a pass holds each session's lock anyway). The run key is made
of the oldest due request, the number due and the job's latest run: a tick never repeats
a request, and a session left due by a run (busy, or requested again meanwhile) gets a new
one once that run is over.
"""

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from memory_platform.assets.sessions import SESSION_MAINTENANCE_JOB, session_maintenance_job
from memory_platform.features.sessions.state import due_sessions
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.feature_definitions import FeatureAutomations
from memory_platform.resources import PostgresResource

__all__ = ["build_session_maintenance_sensor", "request_session_maintenance", "automations"]

# A run in one of these states takes (or will take) the due sessions.
UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED,
              DagsterRunStatus.STARTING, DagsterRunStatus.STARTED,
              DagsterRunStatus.CANCELING]


def request_session_maintenance(context: SensorEvaluationContext, postgres: PostgresResource):
    """One run request when sessions are due and no run of the job is unfinished; a skip
    reason otherwise."""
    instance = context.instance
    unfinished = instance.get_runs(
        filters=RunsFilter(job_name=SESSION_MAINTENANCE_JOB, statuses=UNFINISHED), limit=1)
    if unfinished:
        return SkipReason(f"run {unfinished[0].run_id} of {SESSION_MAINTENANCE_JOB} is "
                          f"{unfinished[0].status.value.lower()}")
    settings = postgres.settings()
    limit = settings.session_maintenance_max_sessions
    with postgres.connection(settings) as conn:
        due = due_sessions(conn, limit)
    if not due:
        return SkipReason("no session due for maintenance")
    latest = instance.get_runs(filters=RunsFilter(job_name=SESSION_MAINTENANCE_JOB), limit=1)
    after = latest[0].run_id if latest else "none"
    count = f"{len(due)}+" if len(due) >= limit else str(len(due))
    oldest = due[0].requested_at.isoformat()
    return RunRequest(
        run_key=f"sessions:{oldest}:{len(due)}:{after}",
        tags={"memory-platform/source": "session-maintenance-sensor",
              "memory-platform/sessions-due": count})


def build_session_maintenance_sensor(settings: Settings) -> SensorDefinition:
    """The sensor, ticking every ``session_maintenance_sensor_interval_seconds``."""

    @sensor(job=session_maintenance_job,
            minimum_interval_seconds=settings.session_maintenance_sensor_interval_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            description="Every session_maintenance_sensor_interval_seconds: launch "
            "session_maintenance_job when sessions are due (their runs completed, or a "
            "failed operation's backoff is over) and no run of it is queued or in progress.")
    def session_maintenance_sensor(context: SensorEvaluationContext,
                                   postgres: PostgresResource):
        return request_session_maintenance(context, postgres)

    return session_maintenance_sensor


def automations(settings: Settings) -> FeatureAutomations:
    """The sensor that launches session maintenance."""
    return FeatureAutomations(sensors=[build_session_maintenance_sensor(settings)])
