"""The partitions sensor, the daily schedule, the outbox worker and the stale-Dream
reconciler, evaluated as the daemon evaluates them (ephemeral instance, real database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dagster import SensorResult, SkipReason, build_schedule_context, build_sensor_context

from memory_platform.assets.dreaming import BATCH_OP
from memory_platform.definitions import build_definitions
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.runs import start_dream
from memory_platform.features.projection.outbox import enqueue_assertion_projection
from memory_platform.foundation.settings import get_settings
from memory_platform.orchestration.partitions import AUDIENCES
from memory_platform.sensors.dreaming import (
    audience_partitions_sensor,
    build_daily_dreaming_schedule,
)
from memory_platform.sensors.maintenance import build_outbox_sensor, build_stale_dream_reconciler
from memory_platform.shared.access import AccessContext
from tests.dagster.conftest import add_partitions, new_instance_key, seed_private, seed_team
from tests.dreaming.support import remember


def tick(instance, resources, cursor=None) -> SensorResult:
    with build_sensor_context(instance=instance, cursor=cursor,
                              resources=resources) as context:
        result = audience_partitions_sensor(context)
    assert isinstance(result, SensorResult)
    for request in result.dynamic_partitions_requests or []:   # what the daemon applies
        instance.add_dynamic_partitions(AUDIENCES, list(request.partition_keys))
    return result


def sense(sensor_def, instance, resources):
    with build_sensor_context(instance=instance, resources=resources) as context:
        return sensor_def(context)


def batch_keys(request) -> list[str]:
    return request.run_config["ops"][BATCH_OP]["config"]["partition_keys"]


# --- the partitions sensor -----------------------------------------------------------------


def test_sensor_adds_partitions_and_requests_their_dreams_in_the_same_tick(
        db, settings, resources, instance):
    team = seed_team(db, settings, new_instance_key())
    alice = seed_private(db, settings, team.instance_key, "alice")

    first = tick(instance, resources)

    (added,) = first.dynamic_partitions_requests
    assert set(added.partition_keys) == {team.partition_key, alice.partition_key}
    (request,) = first.run_requests
    assert set(batch_keys(request)) == {team.partition_key, alice.partition_key}
    assert request.run_key and first.cursor
    assert set(instance.get_dynamic_partitions(AUDIENCES)) == {team.partition_key,
                                                              alice.partition_key}

    idle = tick(instance, resources, first.cursor)
    assert not idle.run_requests and not idle.dynamic_partitions_requests
    assert idle.skip_reason is not None

    # New input in a known partition and a brand-new partition: only the new one is added.
    remember(db, settings, AccessContext(team.instance_key, user_id="ada",
                                         session_key="chat:ada-2"),
             "We agreed that every release gets a changelog entry.", visibility="team")
    other = seed_team(db, settings, new_instance_key())
    third = tick(instance, resources, idle.cursor)

    (added,) = third.dynamic_partitions_requests
    assert list(added.partition_keys) == [other.partition_key]
    (request,) = third.run_requests
    assert batch_keys(request) == [other.partition_key]
    assert request.run_key != first.run_requests[0].run_key


def test_a_dream_the_sensor_starts_says_trigger_sensor(db, settings, resources, instance):
    team = seed_team(db, settings, new_instance_key())

    (request,) = tick(instance, resources).run_requests

    assert request.run_config["ops"][BATCH_OP]["config"]["trigger"] == "sensor"
    job = build_definitions(resources).resolve_job_def("dream_batch")
    result = job.execute_in_process(run_config=request.run_config, instance=instance,
                                    raise_on_error=False)
    assert result.success
    (trigger,) = db.execute("SELECT trigger_kind FROM agent_memory_dreams "
                            "WHERE partition_key = %s", (team.partition_key,)).fetchone()
    assert trigger == "sensor"


def test_sensor_bounds_each_tick_and_resumes_from_its_cursor(
        db, settings, resources, instance, monkeypatch):
    monkeypatch.setenv("MEMORY_DREAM_SENSOR_MAX_PARTITIONS", "1")
    get_settings.cache_clear()
    older = seed_team(db, settings, new_instance_key())
    newer = seed_team(db, settings, new_instance_key())

    first = tick(instance, resources)
    second = tick(instance, resources, first.cursor)
    third = tick(instance, resources, second.cursor)

    assert [batch_keys(r) for r in first.run_requests] == [[older.partition_key]]
    assert [batch_keys(r) for r in second.run_requests] == [[newer.partition_key]]
    assert not third.run_requests
    keys = [r.run_key for r in first.run_requests + second.run_requests]
    assert len(set(keys)) == len(keys)


# --- the daily schedule --------------------------------------------------------------------


def evaluate_schedule(instance, resources, when: datetime):
    # `with`: the context resets Dagster's current-instance context variable on exit.
    schedule = build_daily_dreaming_schedule(get_settings())
    with build_schedule_context(instance=instance, scheduled_execution_time=when,
                                resources=resources) as context:
        return schedule.evaluate_tick(context)


def test_schedule_requests_due_partitions_and_reports_the_ones_under_threshold(
        db, settings, resources, referenced_instance):
    instance = referenced_instance
    due = seed_team(db, settings, new_instance_key())
    dreamed = seed_private(db, settings, due.instance_key, "alice")
    thin = seed_private(db, settings, due.instance_key, "bob", count=2)
    add_partitions(instance, due, dreamed, thin)
    assert run_dream_partition(db, settings, dreamed).status == "completed"

    data = evaluate_schedule(instance, resources, datetime.now(UTC) + timedelta(minutes=1))

    (request,) = data.run_requests
    assert batch_keys(request) == [due.partition_key]
    config = request.run_config["ops"][BATCH_OP]["config"]
    assert config["trigger"] == "scheduled" and config["dream_date"]
    skipped = request.tags["memory-platform/skipped"]
    assert "1 below_min_inputs" in skipped and thin.partition_key in skipped
    assert "1 dreamed_recently" in skipped and dreamed.partition_key in skipped


def test_schedule_skips_when_nothing_meets_its_thresholds_and_says_why(
        db, settings, resources, referenced_instance):
    instance = referenced_instance
    dreamed = seed_private(db, settings, new_instance_key(), "alice")
    thin = seed_private(db, settings, dreamed.instance_key, "bob", count=2)
    add_partitions(instance, dreamed, thin)
    assert run_dream_partition(db, settings, dreamed).status == "completed"

    # Two days later: no longer "dreamed recently", but nothing new since that Dream.
    data = evaluate_schedule(instance, resources, datetime.now(UTC) + timedelta(days=2))

    assert not data.run_requests
    assert "no audience partition due" in data.skip_message
    assert "1 no_new_input_since_last_dream" in data.skip_message
    assert "1 below_min_inputs" in data.skip_message and thin.partition_key in data.skip_message


# --- the outbox worker and the reconciler --------------------------------------------------


def test_outbox_sensor_launches_the_worker_only_when_work_is_due(
        db, settings, resources, instance):
    key = new_instance_key()
    outbox_sensor = build_outbox_sensor(settings)
    assert isinstance(sense(outbox_sensor, instance, resources), SkipReason)
    fact = remember(db, settings, AccessContext(key, user_id="ada"),
                    "The staging database is restored every Sunday night.",
                    source_type="fact", visibility="team")
    job_id = enqueue_assertion_projection(db, key, fact.assertion_id, {})
    # The ledger trigger queued the fact's graph job first (migration 0020).
    (first,) = db.execute("SELECT min(id) FROM agent_memory_ingestion_outbox"
                          " WHERE instance_key = %s", (key,)).fetchone()
    assert first < job_id

    request = sense(outbox_sensor, instance, resources)

    assert request.run_key == f"outbox:{first}:0"
    job = build_definitions(resources).resolve_job_def("outbox_job")
    assert job.execute_in_process(instance=instance).success
    statuses = db.execute("SELECT job_type, status FROM agent_memory_ingestion_outbox"
                          " WHERE instance_key = %s ORDER BY id", (key,)).fetchall()
    assert statuses == [("graph_projection", "done"), ("assertion_projection", "done")]
    claims = db.execute("SELECT count(*) FROM agent_knowledge_claims WHERE instance_key = %s",
                        (key,)).fetchone()[0]
    assert claims == 1
    again = sense(outbox_sensor, instance, resources)
    assert isinstance(again, SkipReason)


def test_reconciler_fails_stale_running_dreams_on_its_tick(db, settings, resources, instance):
    key = new_instance_key()
    dream_id = start_dream(db, Partition(key, "team", key), model="extractive",
                           trigger="scheduled", dry_run=False, orchestrator_run_id=None,
                           stats={})
    db.execute("UPDATE agent_memory_dreams SET heartbeat_at = now() - interval '2 hours'"
               " WHERE id = %s", (dream_id,))

    reconciler = build_stale_dream_reconciler(settings)
    first = sense(reconciler, instance, resources)
    second = sense(reconciler, instance, resources)

    assert "reconciled 1 stale" in first.skip_message
    assert second.skip_message == "no stale running dream"
    status = db.execute("SELECT status FROM agent_memory_dreams WHERE id = %s",
                        (dream_id,)).fetchone()[0]
    assert status == "failed"
