"""One audience partition materialised in-process through Dagster (ephemeral instance, real
database, extractive model): metadata a data engineer reads without SQL, and the checks."""

from __future__ import annotations

from dagster import (
    AssetKey,
    BoolMetadataValue,
    FloatMetadataValue,
    IntMetadataValue,
    MarkdownMetadataValue,
    TextMetadataValue,
    materialize,
)
from psycopg.rows import dict_row

from memory_platform.assets.dreaming import dream_audience, dream_checks
from memory_platform.assets.ledger import ledger_tables
from memory_platform.features.dreaming.model import set_dreaming_model
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.orchestration.keys import DREAM_ASSETS
from memory_platform.resources import MaintenanceModelResource
from tests.dagster.conftest import (
    add_partitions,
    new_instance_key,
    seed_private,
    seed_team,
)
from tests.dreaming.support import HUMAN_FACT

ALL = [*ledger_tables, dream_audience, *dream_checks]


def materialise(instance, resources, partition, **config):
    return materialize(ALL, instance=instance, resources=resources,
                       partition_key=partition.partition_key, selection=[dream_audience],
                       run_config={"ops": {"dream_audience": {"config": config}}}
                       if config else None)


def materialisations(result) -> dict[str, dict]:
    return {e.asset_key.to_user_string(): e.materialization.metadata
            for e in result.get_asset_materialization_events()}


def check_results(result) -> dict[str, object]:
    return {e.event_specific_data.check_name: e.event_specific_data
            for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}


def dream_rows(db, instance_key):
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute("SELECT * FROM agent_memory_dreams WHERE instance_key = %s"
                           " ORDER BY started_at", (instance_key,)).fetchall()


def test_one_partition_materialises_every_dream_asset_with_metadata_and_passing_checks(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)

    result = materialise(instance, resources, partition)

    assert result.success
    (row,) = dream_rows(db, partition.instance_key)
    assert row["status"] == "completed" and row["dagster_run_id"] == result.run_id
    meta = materialisations(result)
    assert list(meta) == list(DREAM_ASSETS)
    for asset in DREAM_ASSETS:
        assert meta[asset]["dream_id"] == TextMetadataValue(str(row["id"]))
        assert meta[asset]["model"] == TextMetadataValue("extractive")
        assert meta[asset]["model_source"] == TextMetadataValue("default")
        assert meta[asset]["partition"] == TextMetadataValue(partition.partition_key)
        assert isinstance(meta[asset]["seconds_total"], FloatMetadataValue)
    inputs = meta["dream_inputs"]
    assert inputs["inputs_total"] == IntMetadataValue(5)
    assert inputs["inputs_activity"] == IntMetadataValue(4)
    assert inputs["inputs_direct_facts"] == IntMetadataValue(1)
    assert isinstance(inputs["seconds_select"], FloatMetadataValue)
    assertions = meta["dream_assertions"]
    stats = row["stats_json"]
    assert assertions["accepted"] == IntMetadataValue(stats["accepted"]) and stats["accepted"] > 0
    assert assertions["activated"] == IntMetadataValue(stats["activated"])
    assert assertions["rejected"] == IntMetadataValue(0)
    table = assertions["promoted_assertions"]
    assert isinstance(table, MarkdownMetadataValue)
    # ids and states, never the words (orchestration.metadata: content-free)
    assert "| assertion id |" in table.md_str and "PostgreSQL 18" not in table.md_str
    created = [str(r[0]) for r in db.execute(
        "SELECT id FROM agent_memory_assertions WHERE dream_id = %s", (row["id"],))]
    assert created and all(a in table.md_str for a in created)
    source_ids = [str(r[0]) for r in db.execute(
        "SELECT e.source_id FROM agent_memory_assertion_evidence e"
        " WHERE e.dream_id = %s", (row["id"],))]
    assert source_ids and all(s in table.md_str for s in source_ids)
    assert isinstance(meta["dream_proposals"]["rejected_items"], MarkdownMetadataValue)
    assert meta["dream_proposals"]["proposed_assertions"].value >= stats["accepted"]
    assert meta["assertion_projections"]["outbox_failed"] == IntMetadataValue(0)
    assert meta["assertion_projections"]["deferred_embeddings"] == IntMetadataValue(0)
    assert meta["assertion_projections"]["projected"] == IntMetadataValue(stats["activated"])
    checks = check_results(result)
    assert set(checks) == {"active_assertions_cite_verbatim_evidence",
                           "evidence_stays_in_audience", "no_projection_of_inactive_assertion"}
    for check in checks.values():
        assert check.passed and check.partition == partition.partition_key
        assert check.metadata["violations"] == IntMetadataValue(0)
    assert checks["active_assertions_cite_verbatim_evidence"].metadata["checked"].value >= \
        stats["activated"]


def test_the_materialisation_appears_under_its_partition(db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    materialise(instance, resources, partition)

    event = instance.get_latest_materialization_event(AssetKey("dream_assertions"))
    assert event.asset_materialization.partition == partition.partition_key
    metadata = event.asset_materialization.metadata
    assert "| assertion id |" in metadata["promoted_assertions"].md_str
    assert all(HUMAN_FACT[:20] not in str(value) for value in metadata.values())


def test_a_dry_run_materialises_inputs_and_proposals_only(db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)

    result = materialise(instance, resources, partition, dry_run=True, model="extractive")

    assert result.success
    meta = materialisations(result)
    assert list(meta) == ["dream_inputs", "dream_proposals"]
    assert meta["dream_proposals"]["dry_run"] == BoolMetadataValue(True)
    assert meta["dream_proposals"]["model_source"] == TextMetadataValue("explicit")
    assert meta["dream_proposals"]["would_activate"].value > 0
    assert db.execute("SELECT count(*) FROM agent_memory_assertions WHERE instance_key = %s"
                      " AND origin = 'dream'", (partition.instance_key,)).fetchone()[0] == 0
    assert check_results(result) == {}  # their assets were not produced


def test_a_partition_below_the_input_minimum_materialises_only_its_inputs(
        db, settings, resources, instance):
    partition = seed_private(db, settings, new_instance_key(), "alice", count=2)
    add_partitions(instance, partition)

    result = materialise(instance, resources, partition)

    assert result.success
    meta = materialisations(result)
    assert list(meta) == ["dream_inputs"]
    assert meta["dream_inputs"]["dream_status"] == TextMetadataValue("skipped")
    assert meta["dream_inputs"]["inputs_total"] == IntMetadataValue(2)
    assert "below_min_inputs" in meta["dream_inputs"]["diagnostics"].md_str


def test_the_persisted_model_setting_wins_over_the_resource_model(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    set_dreaming_model(db, partition.instance_key, "extractive")
    # The resource names a model no test can reach; the persisted choice comes first.
    resources = {**resources, "maintenance_model": MaintenanceModelResource(
        model="gpt-unreachable")}

    result = materialise(instance, resources, partition)

    meta = materialisations(result)
    assert meta["dream_proposals"]["model"] == TextMetadataValue("extractive")
    assert meta["dream_proposals"]["model_source"] == TextMetadataValue("app_settings")


def test_a_failed_dream_fails_the_step_and_names_the_dream(db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    resources = {**resources, "maintenance_model": MaintenanceModelResource(
        model="gpt-unreachable")}

    result = materialize(ALL, instance=instance, resources=resources,
                         partition_key=partition.partition_key, selection=[dream_audience],
                         raise_on_error=False)

    assert not result.success
    (row,) = dream_rows(db, partition.instance_key)
    assert row["status"] == "failed" and row["model"] == "gpt-unreachable"
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert str(row["id"]) in failure.event_specific_data.error.message


def test_a_partition_unknown_to_the_database_fails_with_a_clear_message(
        db, settings, resources, instance):
    # As if typed into the launch dialog's "Add a partition": Dagster knows it, the
    # database has nothing for it.
    typo = Partition(new_instance_key(), "team", "nope")
    add_partitions(instance, typo)

    result = materialize(ALL, instance=instance, resources=resources,
                         partition_key=typo.partition_key, selection=[dream_audience],
                         raise_on_error=False)

    assert not result.success
    assert materialisations(result) == {}
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert f"no memories or dreams in partition {typo.partition_key!r}" in \
        failure.event_specific_data.error.message
    assert dream_rows(db, typo.instance_key) == []
