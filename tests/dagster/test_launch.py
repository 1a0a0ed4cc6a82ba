"""`memory-platform dream run`, `dream partitions` and launch_dream_run: Dreams through Dagster
against the platform's own instance (DAGSTER_HOME from the settings, run storage in
PostgreSQL), so the runs are in the UI's run list; unknown partitions are refused, and the
CLI says why a Dream was skipped or failed."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from dagster import AssetKey, DagsterRunStatus

from memory_platform.cli import main
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.errors import NotFound
from memory_platform.launch import launch_dream_run
from memory_platform.orchestration.home import dagster_instance
from memory_platform.orchestration.partitions import AUDIENCES
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


# --- what an operator is told ----------------------------------------------------------------


def audience_partitions(settings) -> list[str]:
    instance = dagster_instance(settings)
    try:
        return instance.get_dynamic_partitions(AUDIENCES)
    finally:
        instance.dispose()


def test_dream_run_refuses_an_unknown_partition_and_adds_no_dagster_partition(db, settings):
    team = seed_team(db, settings, new_instance_key())
    typo = Partition(team.instance_key, "team", "nope").partition_key

    result = CliRunner().invoke(main, ["dream", "run", "--partition", typo])

    assert result.exit_code == 1, result.output
    assert f"no memories or dreams in partition {typo!r}" in result.output
    assert "memory-platform dream partitions" in result.output
    assert typo not in audience_partitions(settings)
    assert db.execute("SELECT count(*) FROM agent_memory_dreams WHERE instance_key = %s",
                      (team.instance_key,)).fetchone()[0] == 0


def test_dream_run_refuses_a_malformed_partition_key(settings):
    result = CliRunner().invoke(main, ["dream", "run", "--partition", "only-two/parts"])

    assert result.exit_code == 2
    assert "malformed partition key" in result.output


def test_the_launcher_refuses_an_unknown_partition_before_dagster_sees_it(db, settings):
    unknown = Partition(new_instance_key(), "team", "nobody").partition_key

    with pytest.raises(NotFound):
        launch_dream_run(settings, [unknown], mode="in_process")

    assert unknown not in audience_partitions(settings)


def test_dream_run_says_why_a_dream_was_skipped(db, settings):
    thin = seed_private(db, settings, new_instance_key(), "alice", count=2)

    result = CliRunner().invoke(main, ["dream", "run", "--partition", thin.partition_key])

    assert result.exit_code == 0, result.output
    assert f"{thin.partition_key}: skipped dream " in result.output
    assert "why: below_min_inputs: 2 eligible inputs; the partition needs 3" in result.output


def test_dream_run_says_why_a_dream_failed_and_what_to_do_without_stack_traces(db, settings):
    team = seed_team(db, settings, new_instance_key())

    result = CliRunner().invoke(main, ["dream", "run", "--partition", team.partition_key,
                                       "--model", "gpt-unreachable"])

    assert result.exit_code == 1
    assert f"{team.partition_key}: failed dream " in result.output
    assert "why: model_unavailable: " in result.output
    assert "MEMORY_MAINTENANCE_BASE_URL" in result.output
    assert "Traceback" not in result.output and "dagster._core" not in result.output


def test_dream_partitions_marks_unknown_partitions_and_removes_them(db, settings):
    team = seed_team(db, settings, new_instance_key())
    thin = seed_private(db, settings, team.instance_key, "bob", count=2)
    typo = Partition(team.instance_key, "team", "nope").partition_key
    instance = dagster_instance(settings)
    try:
        instance.add_dynamic_partitions(AUDIENCES, [typo, thin.partition_key])
    finally:
        instance.dispose()

    listed = CliRunner().invoke(main, ["dream", "partitions", "--json"])

    assert listed.exit_code == 0, listed.output
    rows = {r["partition"]: r for r in json.loads(listed.stdout)}
    assert rows[typo] == {"partition": typo, "dagster": True, "database": False}
    assert rows[thin.partition_key] == {"partition": thin.partition_key, "dagster": True,
                                        "database": True}
    assert rows[team.partition_key] == {"partition": team.partition_key, "dagster": False,
                                        "database": True}
    table = CliRunner().invoke(main, ["dream", "partitions"]).output
    assert f"--remove {typo}" in table

    removed = CliRunner().invoke(main, ["dream", "partitions", "--remove", typo])

    assert removed.exit_code == 0, removed.output
    assert f"removed {typo}" in removed.output
    remaining = audience_partitions(settings)   # the storage is shared by the session
    assert typo not in remaining and thin.partition_key in remaining
    again = CliRunner().invoke(main, ["dream", "partitions", "--remove", typo])
    assert again.exit_code == 1 and "not a Dagster audience partition" in again.output
