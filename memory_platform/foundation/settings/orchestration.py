"""Dreaming on Dagster (assets/, sensors/, orchestration/): the daily schedule, the partitions
sensor, run batching, the Dreaming lock wait, the writers' pool and the UI's port."""

from __future__ import annotations

from pydantic import BaseModel, Field


class OrchestrationSettings(BaseModel):
    """How Dagster schedules and runs the maintenance work."""

    dream_batch_size: int = Field(
        100, ge=1, le=1000,
        description="Audience partitions one scheduled/sensor-launched Dream run processes "
        "one after another (each still gets its own dream row and materialisations): a run "
        "process costs seconds, so 10,000 due audiences are 10,000 / this runs per day.",
    )
    dream_sensor_max_partitions: int = Field(
        200, ge=1, description="New audience partitions the partitions sensor adds per tick.",
    )
    dream_schedule_cron: str = Field(
        "0 3 * * *", description="When the daily Dreaming schedule ticks (cron, UTC)."
    )
    dream_min_interval_hours: float = Field(
        20.0, ge=0.0,
        description="Run threshold of the daily schedule: a partition whose last Dream "
        "(not a dry run) started less than this long ago is skipped.",
    )
    dream_lock_wait_seconds: float = Field(
        900.0, ge=0.0,
        description="How long a Dagster Dream waits for the runtime-wide Dreaming lock "
        "before it gives up on a partition (a Dream that holds it is bounded by the phase "
        "timeout).",
    )
    dagster_writer_pool_limit: int = Field(
        2, ge=1, le=100,
        description="Concurrent steps in the Dagster pool memory_postgres_writers "
        "(dagster.yaml concurrency.pools.default_limit).",
    )
    dagster_port: int = Field(3000, ge=1, le=65535)
