"""Automation of Dreaming: the partitions sensor and the daily schedule.

Both launch ``dream_batch`` runs of at most ``dream_batch_size`` partitions (see
``memory_platform.assets.dreaming`` for why runs are batched) and tag them with the Dreaming
run tag, which dagster.yaml limits to one run at a time (the engine's advisory lock allows
one Dream anyway). What is due, and why the rest is skipped, is decided in
:mod:`memory_platform.features.dreaming.schedule`; the schedule's cron comes from the settings, so
it
is built by :func:`build_daily_dreaming_schedule` when the definitions load.
"""

from datetime import UTC, datetime

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    schedule,
    sensor,
)

from memory_platform.assets.dreaming import batch_run_config, dream_batch
from memory_platform.features.dreaming.schedule import (
    batches,
    keys_digest,
    plan_daily,
    plan_new_partitions,
    read_cursor,
    write_cursor,
)
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.feature_definitions import FeatureAutomations
from memory_platform.orchestration.home import DREAMING_RUN_TAG
from memory_platform.orchestration.partitions import AUDIENCES, audiences
from memory_platform.resources import PostgresResource

__all__ = ["audience_partitions_sensor", "build_daily_dreaming_schedule", "request_due_dreams",
           "automations"]

SENSOR_INTERVAL_SECONDS = 60


@sensor(job=dream_batch, minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        default_status=DefaultSensorStatus.RUNNING,
        description="Adds an audience partition when eligible Dream input appears for it "
        "(bounded per tick, behind a newest-input cursor) and requests its first Dream in "
        "the same tick; later Dreams come from the daily schedule.")
def audience_partitions_sensor(context: SensorEvaluationContext, postgres: PostgresResource):
    settings = postgres.settings()
    since = read_cursor(context.cursor)
    with postgres.connection(settings) as conn:
        plan = plan_new_partitions(
            conn, settings, since,
            lambda key: context.instance.has_dynamic_partition(AUDIENCES, key),
            settings.dream_sensor_max_partitions)
    cursor = write_cursor(plan.watermark)
    if not plan.new_keys:
        return SensorResult(cursor=cursor, skip_reason=SkipReason(
            f"{len(plan.considered)} partition(s) with new input, none new to Dagster"
            if plan.considered else "no new eligible input"))
    watermark = plan.watermark.isoformat() if plan.watermark else "start"
    run_requests = [
        RunRequest(
            # Unique across ticks: the watermark only moves forward.
            run_key=f"first-dream:{watermark}:{number}:{keys_digest(keys)}",
            run_config=batch_run_config(keys, trigger="sensor"),
            tags={DREAMING_RUN_TAG: "true", "memory-platform/source": "partitions-sensor",
                  "memory-platform/partitions": str(len(keys))})
        for number, keys in enumerate(batches(plan.new_keys, settings.dream_batch_size))]
    context.log.info(f"adding {len(plan.new_keys)} audience partition(s); "
                     f"{len(run_requests)} run(s); more waiting: {plan.more}")
    return SensorResult(run_requests=run_requests, cursor=cursor,
                        dynamic_partitions_requests=[audiences.build_add_request(plan.new_keys)])


def request_due_dreams(context: ScheduleEvaluationContext, postgres: PostgresResource):
    """One tick of the daily schedule: a batch run per ``dream_batch_size`` due partitions,
    or a skip reason that lists the partitions per reason."""
    settings = postgres.settings()
    now = context.scheduled_execution_time or datetime.now(UTC)
    known = context.instance.get_dynamic_partitions(AUDIENCES)
    with postgres.connection(settings) as conn:
        plan = plan_daily(conn, settings, now=now, known_keys=known)
    summary = plan.describe()
    context.log.info(f"{len(plan.due)} audience partition(s) due; {summary}")
    if not plan.due:
        return SkipReason(f"no audience partition due; {summary}")
    date = now.date().isoformat()
    chunks = list(batches(plan.due, settings.dream_batch_size))
    return [
        RunRequest(
            run_key=f"daily:{date}:{number}:{keys_digest(keys)}",
            run_config=batch_run_config(keys, trigger="scheduled", dream_date=date),
            tags={DREAMING_RUN_TAG: "true", "memory-platform/dream-date": date,
                  "memory-platform/batch": f"{number + 1}/{len(chunks)}",
                  "memory-platform/skipped": summary[:200]})
        for number, keys in enumerate(chunks)]


def build_daily_dreaming_schedule(settings: Settings) -> ScheduleDefinition:
    """The daily schedule on ``dream_schedule_cron`` (UTC)."""

    @schedule(name="daily_dreaming_schedule", cron_schedule=settings.dream_schedule_cron,
              job=dream_batch, execution_timezone="UTC",
              default_status=DefaultScheduleStatus.RUNNING,
              description="Daily Dreaming of every audience partition over its thresholds "
              "(input minimum, new input since the last Dream, not dreamed recently); skipped "
              "partitions are listed in the tick log or skip reason.")
    def daily_dreaming_schedule(context: ScheduleEvaluationContext, postgres: PostgresResource):
        return request_due_dreams(context, postgres)

    return daily_dreaming_schedule


def automations(settings: Settings) -> FeatureAutomations:
    """The audience-partition sensor and the daily Dream schedule."""
    return FeatureAutomations(sensors=[audience_partitions_sensor],
                              schedules=[build_daily_dreaming_schedule(settings)])
