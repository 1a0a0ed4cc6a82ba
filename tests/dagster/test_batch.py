"""dream_batch: many audience partitions in one run, one dream row and one set of
materialisations and checks per partition; a failing partition does not stop the others."""

from __future__ import annotations

from collections import Counter

from dagster import AssetKey, IntMetadataValue, TextMetadataValue, validate_run_config

from memory_platform.assets.dreaming import batch_run_config
from memory_platform.definitions import build_definitions
from memory_platform.features.dreaming.model import set_dreaming_model
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.runs import dreams_of_run
from memory_platform.orchestration.partitions import AUDIENCES
from tests.dagster.conftest import new_instance_key, seed_private, seed_team


def run_batch(instance, resources, keys, **config):
    job = build_definitions(resources).resolve_job_def("dream_batch")
    return job.execute_in_process(run_config=batch_run_config(keys, **config),
                                  instance=instance, raise_on_error=False)


def test_batch_job_writes_one_dream_row_and_one_set_of_materialisations_per_partition(
        db, settings, resources, instance):
    team = seed_team(db, settings, new_instance_key())
    alice = seed_private(db, settings, team.instance_key, "alice")
    other = seed_team(db, settings, new_instance_key())
    keys = [team.partition_key, alice.partition_key, other.partition_key]

    result = run_batch(instance, resources, keys, trigger="scheduled", dream_date="2026-01-02")

    assert result.success
    rows = {row["partition_key"]: row for row in dreams_of_run(db, result.run_id)}
    assert sorted(rows) == sorted(keys)
    assert all(row["trigger_kind"] == "scheduled" for row in rows.values())
    assert set(instance.get_dynamic_partitions(AUDIENCES)) == set(keys)
    events = result.get_asset_materialization_events()
    per_partition = Counter((e.asset_key.to_user_string(), e.partition) for e in events)
    assert set(per_partition.values()) == {1}
    for key, row in rows.items():
        assert per_partition[("dream_inputs", key)] == 1
        assert per_partition[("dream_assertions", key)] == 1
        assert per_partition[("knowledge_graph", key)] == 1
        assert per_partition[("consolidation", key)] == 1
        inputs = next(e for e in events if e.partition == key
                      and e.asset_key == AssetKey("dream_inputs")).materialization.metadata
        assert inputs["dream_id"] == TextMetadataValue(str(row["id"]))
        assert inputs["inputs_total"] == IntMetadataValue(row["stats_json"]["inputsTotal"])
    checks = [e.event_specific_data for e in result.all_events
              if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert Counter(c.partition for c in checks) == {key: 7 for key in keys}
    assert all(c.passed for c in checks)


def test_a_failing_partition_does_not_stop_the_batch(db, settings, resources, instance):
    good = seed_team(db, settings, new_instance_key())
    bad = seed_team(db, settings, new_instance_key())
    set_dreaming_model(db, bad.instance_key, "gpt-unreachable")   # persisted, per instance

    result = run_batch(instance, resources, [bad.partition_key, good.partition_key])

    assert not result.success
    statuses = {row["partition_key"]: row["status"] for row in dreams_of_run(db, result.run_id)}
    assert statuses == {bad.partition_key: "failed", good.partition_key: "completed"}
    materialised = {e.partition for e in result.all_events
                    if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert materialised == {good.partition_key, None}   # None: the batch's sweep
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1 problem(s) in 2 partition(s)" in failure.event_specific_data.error.message


def test_a_batch_refuses_a_partition_unknown_to_the_database_and_dreams_the_others(
        db, settings, resources, instance):
    good = seed_team(db, settings, new_instance_key())
    typo = Partition(good.instance_key, "team", "nope").partition_key

    result = run_batch(instance, resources, [typo, good.partition_key])

    assert not result.success
    rows = dreams_of_run(db, result.run_id)
    assert [(row["partition_key"], row["status"]) for row in rows] == [
        (good.partition_key, "completed")]
    assert typo not in instance.get_dynamic_partitions(AUDIENCES)
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1 problem(s) in 2 partition(s)" in failure.event_specific_data.error.message


def _launchpad_default_config(job) -> dict:
    """The config the Launchpad opens a job with and scaffolds from: the defaults of its
    config schema, as the webserver's ``rootDefaultYaml`` assembles them."""
    import yaml
    from dagster._core.snap.snap_to_yaml import default_values_yaml_from_type_snap

    snapshot = job.get_job_snapshot()
    schema = snapshot.config_schema_snapshot
    root = schema.get_config_snap(snapshot.mode_def_snaps[0].root_config_key)
    return yaml.safe_load(default_values_yaml_from_type_snap(schema, root))


def test_the_launchpad_default_config_of_dream_batch_validates_and_runs(
        db, settings, resources, instance):
    job = build_definitions(resources).resolve_job_def("dream_batch")
    config = _launchpad_default_config(job)
    assert config["ops"]["dream_partitions"]["config"]["partition_keys"] == []
    assert validate_run_config(job, config)

    result = job.execute_in_process(run_config=config, instance=instance)

    assert result.success
    assert dreams_of_run(db, result.run_id) == []
    logged = " ".join(entry.user_message for entry in instance.all_logs(result.run_id))
    assert "nothing to dream" in logged
