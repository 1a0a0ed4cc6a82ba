"""`memory-platform dream run` and launch_dream_run: Dreams through Dagster against the
platform's own instance (DAGSTER_HOME from the settings, run storage in PostgreSQL), so the
runs are in the UI's run list."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner
from dagster import AssetKey, DagsterRunStatus

from memory_platform.cli import main
from memory_platform.orchestration.launch import dagster_instance, launch_dream_run
from tests.dagster.conftest import new_instance_key, seed_private, seed_team


def dream_row(db, dream_id):
    return db.execute("SELECT partition_key, status, dagster_run_id FROM agent_memory_dreams"
                      " WHERE id = %s", (dream_id,)).fetchone()


def test_dream_run_materialises_one_partition_through_the_platform_instance(db, settings):
    team = seed_team(db, settings, new_instance_key())

    result = CliRunner().invoke(main, ["dream", "run", "--partition", team.partition_key,
                                       "--model", "extractive", "--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (run,) = report["runs"]
    (dream,) = report["dreams"]
    assert run["success"] and run["jobName"] == "dream_audience_job"
    assert dream["status"] == "completed" and dream["model"] == "extractive"
    assert dream["accepted"] > 0
    assert dream_row(db, dream["dreamId"]) == (team.partition_key, "completed", run["runId"])
    instance = dagster_instance(settings)
    try:
        stored = instance.get_run_by_id(run["runId"])
        assert stored.status == DagsterRunStatus.SUCCESS
        assert stored.tags["dagster/partition"] == team.partition_key
        event = instance.get_latest_materialization_event(AssetKey("dream_assertions"))
        assert event.run_id == run["runId"]
    finally:
        instance.dispose()


def test_dream_run_all_eligible_batches_partitions_and_prints_progress(db, settings):
    team = seed_team(db, settings, new_instance_key())
    alice = seed_private(db, settings, team.instance_key, "alice")

    result = CliRunner().invoke(main, ["dream", "run", "--all-eligible", "--dry-run"])

    assert result.exit_code == 0, result.output
    assert "dreaming 2 partition(s) through Dagster" in result.output
    assert "run 1/1: dream_batch for 2 partition(s)" in result.output
    for key in (team.partition_key, alice.partition_key):
        assert f"{key}: completed dream " in result.output
    assert "2 dream(s) in 1 run(s); 0 run(s) failed" in result.output


def test_dream_run_needs_a_partition_or_all_eligible(settings):
    result = CliRunner().invoke(main, ["dream", "run"])
    assert result.exit_code == 2 and "--all-eligible" in result.output


def wait_for(instance, run_id: str, seconds: float = 60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.status in (DagsterRunStatus.SUCCESS,
                                              DagsterRunStatus.FAILURE):
            return run.status
        time.sleep(0.1)
    return None


def test_launch_dream_run_answers_a_run_id_and_runs_in_the_background(db, settings):
    team = seed_team(db, settings, new_instance_key())

    launched = launch_dream_run(settings, [team.partition_key], mode="in_process")

    assert launched.mode == "in_process" and launched.job_name == "dream_audience_job"
    instance = dagster_instance(settings)
    try:
        assert wait_for(instance, launched.run_id) == DagsterRunStatus.SUCCESS
    finally:
        instance.dispose()
    (status,) = db.execute("SELECT status FROM agent_memory_dreams WHERE dagster_run_id = %s",
                           (launched.run_id,)).fetchone()
    assert status == "completed"


def test_background_runs_of_one_process_do_not_deadlock(db, settings):
    # Concurrent in-process Dagster runs deadlock in logging; launches queue instead.
    keys = [seed_team(db, settings, new_instance_key()).partition_key for _ in range(3)]

    launched = [launch_dream_run(settings, [key], mode="in_process") for key in keys]

    instance = dagster_instance(settings)
    try:
        assert [wait_for(instance, run.run_id) for run in launched] == \
            [DagsterRunStatus.SUCCESS] * 3
    finally:
        instance.dispose()
