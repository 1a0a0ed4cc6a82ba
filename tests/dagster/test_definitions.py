"""The code location loads lazily, draws the Dream lineage to the ledger, and its dagster.yaml
caps PostgreSQL writers and Dreaming runs, captures run logs and hides the first-visit popup."""

from __future__ import annotations

import yaml
from dagster import AssetKey, DagsterInstance, Definitions

from memory_platform.definitions import build_definitions, defs
from memory_platform.orchestration.home import (
    DREAMING_RUN_TAG,
    WRITER_POOL,
    dagster_instance,
    prepare_dagster_home,
)
from memory_platform.orchestration.keys import DREAM_ASSETS


def load() -> Definitions:
    return defs()


def test_definitions_validate():
    definitions = load()
    Definitions.validate_loadable(definitions)
    assert {"dream_audience_job", "dream_batch", "outbox_job", "session_maintenance_job",
            "consolidation_sweep_job", "erase_user_job", "reembed_backlog_job",
            "workspace_sync_job"} <= {
        job.name for job in definitions.resolve_all_job_defs()}
    assert {s.name for s in definitions.sensors} == {"audience_partitions_sensor",
                                                     "outbox_sensor", "stale_dream_reconciler",
                                                     "session_maintenance_sensor",
                                                     "reembed_backlog_sensor",
                                                     "workspace_sync_sensor"}
    assert [s.name for s in definitions.schedules] == ["daily_dreaming_schedule"]


def test_definitions_are_built_when_loaded_from_the_settings_of_that_moment(settings):
    assert not isinstance(defs, Definitions)          # nothing built at import
    changed = settings.model_copy(update={"dream_schedule_cron": "15 4 * * *",
                                          "outbox_poll_seconds": 7})
    definitions = build_definitions(settings=changed)
    (schedule,) = definitions.schedules
    assert schedule.cron_schedule == "15 4 * * *"
    outbox = next(s for s in definitions.sensors if s.name == "outbox_sensor")
    assert outbox.minimum_interval_seconds == 7


def test_dream_assets_form_the_lineage_from_and_to_the_ledger_tables():
    graph = load().resolve_asset_graph()

    def parents(key: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(AssetKey(key)).parent_keys}

    assert {"agent_memories", "agent_memory_sources", "agent_memory_assertions",
            "agent_memory_assertion_evidence"} <= parents("dream_inputs")
    for upstream, downstream in zip(DREAM_ASSETS, DREAM_ASSETS[1:], strict=False):
        assert upstream in parents(downstream)
    assert "wiki_proposals" in parents("wiki_change_proposals")
    assert "assertion_projections" in parents("agent_memory_chunks")
    assert "dream_assertions" in parents("agent_memory_assertion_reviews")
    for key in DREAM_ASSETS:
        node = graph.get(AssetKey(key))
        assert node.partitions_def is not None and node.partitions_def.name == "audiences"
        assert node.pools == {WRITER_POOL}


def test_dream_checks_are_blocking_and_partitioned():
    graph = load().resolve_asset_graph()
    checks = {(k.asset_key.to_user_string(), k.name): graph.get_check_spec(k)
              for k in graph.asset_check_keys}
    assert set(checks) == {("dream_assertions", "active_assertions_cite_verbatim_evidence"),
                           ("dream_assertions", "evidence_stays_in_audience"),
                           ("assertion_projections", "no_projection_of_inactive_assertion"),
                           ("knowledge_graph", "graph_items_have_current_support"),
                           ("consolidation", "consolidation_mutations_audited"),
                           ("retention", "retention_kept_live_support"),
                           ("user_profiles", "profiles_rebuilt_after_dream"),
                           ("reembedding", "one_active_generation")}
    assert all(spec.blocking for spec in checks.values())
    assert all(spec.partitions_def.name == "audiences" for spec in checks.values())


def test_dagster_yaml_caps_writers_and_serialises_dreaming_runs(settings):
    home = prepare_dagster_home(settings)
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["run_monitoring"]["enabled"] is True
    assert config["concurrency"]["pools"]["default_limit"] == settings.dagster_writer_pool_limit
    assert config["concurrency"]["runs"]["tag_concurrency_limits"] == [
        {"key": DREAMING_RUN_TAG, "limit": 1}]
    instance = DagsterInstance.from_config(str(home))
    try:  # Dagster accepts the config and applies it
        assert instance.get_concurrency_config().pool_config.default_pool_limit == \
            settings.dagster_writer_pool_limit
    finally:
        instance.dispose()


def test_dagster_yaml_hides_the_first_visit_popup_and_captures_run_logs(settings):
    home = prepare_dagster_home(settings)
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["nux"] == {"enabled": False}
    assert config["compute_logs"]["class"] == "LocalComputeLogManager"
    assert config["compute_logs"]["config"]["base_dir"] == str(home / "logs")
    instance = DagsterInstance.from_config(str(home))
    try:
        assert type(instance.compute_log_manager).__name__ == "LocalComputeLogManager"
    finally:
        instance.dispose()
    # A process that runs Dreams in-process captures nothing (it would redirect its own
    # stdout/stderr): its instance opens with capture off.
    in_process = dagster_instance(settings)
    try:
        assert type(in_process.compute_log_manager).__name__ == "NoOpComputeLogManager"
    finally:
        in_process.dispose()
