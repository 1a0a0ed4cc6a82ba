"""The code location loads, draws the Dream lineage to the ledger, and its dagster.yaml caps
PostgreSQL writers and Dreaming runs."""

from __future__ import annotations

import yaml
from dagster import AssetKey, DagsterInstance, Definitions

from memory_platform.definitions import defs
from memory_platform.orchestration.home import DREAMING_RUN_TAG, WRITER_POOL, prepare_dagster_home

DREAM_ASSETS = ["dream_inputs", "dream_proposals", "dream_assertions",
                "assertion_projections", "wiki_proposals"]


def test_definitions_validate():
    Definitions.validate_loadable(defs)
    assert {"dream_audience_job", "dream_batch", "outbox_job"} <= {
        job.name for job in defs.resolve_all_job_defs()}
    assert {s.name for s in defs.sensors} == {"audience_partitions_sensor", "outbox_sensor",
                                              "stale_dream_reconciler"}
    assert [s.name for s in defs.schedules] == ["daily_dreaming_schedule"]


def test_dream_assets_form_the_lineage_from_and_to_the_ledger_tables():
    graph = defs.resolve_asset_graph()

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
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.to_user_string(), k.name): graph.get_check_spec(k)
              for k in graph.asset_check_keys}
    assert set(checks) == {("dream_assertions", "active_assertions_cite_verbatim_evidence"),
                           ("dream_assertions", "evidence_stays_in_audience"),
                           ("assertion_projections", "no_projection_of_inactive_assertion")}
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
