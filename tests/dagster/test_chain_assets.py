"""The end of the daily chain on Dagster (ephemeral instance, real database): user profiles,
retention (with its check) and re-embedding after consolidation in the Dream's run; the
re-embedding backlog sensor after a model switch; the workspace sensor on a file change."""

from __future__ import annotations

from dagster import AssetKey, SkipReason, build_sensor_context

from memory_platform.assets.dreaming import asset_run_config
from memory_platform.definitions import build_definitions
from memory_platform.features.projection.switch import switch_generation
from memory_platform.foundation.settings import get_settings
from memory_platform.sensors.maintenance import reembed_backlog_sensor, workspace_sync_sensor
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.dagster.conftest import add_partitions, new_instance_key, seed_team


def materialised(result) -> dict[str, dict]:
    return {e.asset_key.to_user_string(): e.materialization.metadata
            for e in result.get_asset_materialization_events()}


def test_the_dream_job_runs_the_chain_to_its_end(db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    definitions = build_definitions(resources)
    graph = definitions.resolve_asset_graph()
    assert AssetKey("consolidation") in graph.get(AssetKey("user_profiles")).parent_entity_keys
    assert AssetKey("user_profiles") in graph.get(AssetKey("retention")).parent_entity_keys
    assert AssetKey("retention") in graph.get(AssetKey("reembedding")).parent_entity_keys

    job = definitions.resolve_job_def("dream_audience_job")
    result = job.execute_in_process(instance=instance, partition_key=partition.partition_key)

    assert result.success
    meta = materialised(result)
    assert meta["user_profiles"]["profiles_refreshed"].value >= 1   # ada and bob wrote it
    assert meta["retention"]["agent_memories"].value == 0
    assert "nothing_to_do" in meta["retention"]
    assert "reembedding" not in meta                # no backlog: skipped
    checks = {e.event_specific_data.check_name: e.event_specific_data.passed
              for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}
    assert checks["retention_kept_live_support"] is True
    assert checks["profiles_rebuilt_after_dream"] is True
    (profiles,) = db.execute("SELECT count(*) FROM agent_user_profiles WHERE instance_key = %s",
                             (partition.instance_key,)).fetchone()
    assert profiles >= 1


def test_a_backfill_run_of_the_dream_job_runs_the_chain_and_says_backfill(
        db, settings, resources, instance):
    # What a backfill launched from dream_audience_job's Partitions tab runs per partition:
    # the job with the partition and Dagster's backfill tag (README, 'Backfills').
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    job = build_definitions(resources).resolve_job_def("dream_audience_job")

    result = job.execute_in_process(instance=instance, partition_key=partition.partition_key,
                                    tags={"dagster/backfill": "bk-test"})

    assert result.success
    assert {"dream_assertions", "knowledge_graph", "consolidation", "user_profiles",
            "retention"} <= set(materialised(result))
    (trigger,) = db.execute("SELECT trigger_kind FROM agent_memory_dreams "
                            "WHERE partition_key = %s", (partition.partition_key,)).fetchone()
    assert trigger == "backfill"


def test_a_model_switch_makes_the_sensor_convert_the_backlog(db, settings, resources,
                                                             instance, monkeypatch):
    partition = seed_team(db, settings, new_instance_key())
    switch_generation(db, settings, HashEmbeddingProvider(32),
                      instance_key=partition.instance_key)
    with build_sensor_context(instance=instance, resources=resources) as context:
        requests = reembed_backlog_sensor(context)
    (request,) = [r for r in requests
                  if r.run_config["ops"]["convert_backlog"]["config"]["instance_key"]
                  == partition.instance_key]
    definitions = build_definitions(resources)
    job = definitions.resolve_job_def("reembed_backlog_job")
    # The run converts into the generation of the configured provider: the switched one.
    job_settings = {"ops": {"convert_backlog": {"config": {
        "instance_key": partition.instance_key, "batches": 50}}}}
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "32")
    get_settings.cache_clear()
    run = job.execute_in_process(run_config=job_settings, instance=instance)
    assert run.success and request.run_key.startswith(f"reembed:{partition.instance_key}:")
    remaining = run.output_for_node("convert_backlog")["remaining"]
    assert remaining == 0


def test_the_workspace_sensor_syncs_when_a_file_changes(db, settings, resources, instance,
                                                        tmp_path, monkeypatch):
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    note = workspace / "memory" / "oncall.md"
    note.write_text("The on-call phone is handed over on Mondays at nine.\n")
    monkeypatch.setenv("MEMORY_WORKSPACE_DIR", str(workspace))
    monkeypatch.setenv("MEMORY_INSTANCE_KEY", key := new_instance_key())
    get_settings.cache_clear()

    with build_sensor_context(instance=instance, resources=resources) as context:
        first = workspace_sync_sensor(context)
        cursor = context.cursor
    with build_sensor_context(instance=instance, resources=resources,
                              cursor=cursor) as context:
        idle = workspace_sync_sensor(context)
    note.write_text("The on-call phone is handed over on Tuesdays at nine.\n")
    with build_sensor_context(instance=instance, resources=resources,
                              cursor=cursor) as context:
        changed = workspace_sync_sensor(context)

    assert first.run_key.startswith("workspace:") and isinstance(idle, SkipReason)
    assert changed.run_key != first.run_key
    job = build_definitions(resources).resolve_job_def("workspace_sync_job")
    assert job.execute_in_process(instance=instance).success
    rows = db.execute("SELECT content FROM agent_memories WHERE instance_key = %s"
                      " AND source_type = 'prompt_file'", (key,)).fetchall()
    assert len(rows) == 1 and "Tuesdays" in rows[0][0]


def test_users_erase_runs_as_a_dagster_run_of_the_platform_instance(db, settings):
    import json

    from click.testing import CliRunner

    from memory_platform.cli import main
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.shared.access import AccessContext
    from tests.dreaming.support import remember

    key = new_instance_key()
    remember(db, settings, AccessContext(key, user_id="zoe"),
             "Zoe keeps her quokkaberry recipes in the left drawer.", source_type="fact")

    result = CliRunner().invoke(main, ["users", "erase", "zoe", "--instance", key, "--yes",
                                       "--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["removed"]["agent_memories"] == 1 and "quokkaberry" not in result.output
    # The run erased her, then left with her: its config named her (erase_from_dagster).
    assert report["runId"] and report["dagster"]["status"] == "erased"
    assert report["dagster"]["runsDeleted"] == 1
    instance = dagster_instance(settings)
    try:
        assert instance.get_run_by_id(report["runId"]) is None
    finally:
        instance.dispose()


def test_the_chain_after_a_dream_uses_that_dreams_model(db, settings, resources, instance,
                                                         monkeypatch):
    # A maintenance model is configured (and cannot be reached: no endpoint); the Dream runs
    # with the offline model: its graph extraction and consolidation use the Dream's.
    monkeypatch.setenv("MEMORY_MAINTENANCE_MODEL", "gpt-4o-mini")
    get_settings.cache_clear()
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    job = build_definitions(resources).resolve_job_def("dream_audience_job")

    result = job.execute_in_process(instance=instance, partition_key=partition.partition_key,
                                    run_config=asset_run_config(model="extractive"))

    assert result.success
    meta = materialised(result)
    assert meta["knowledge_graph"]["models"].value == {partition.instance_key: "extractive"}
    assert meta["knowledge_graph"]["failed_batches"].value == 0
    assert meta["knowledge_graph"]["claims_added"].value > 0
    assert meta["consolidation"]["model"].value == "extractive"
