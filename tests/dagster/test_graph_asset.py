"""knowledge_graph on Dagster: materialised per audience partition after the Dream assets in
the same run (ephemeral instance, real database, extractive model), with the metadata a data
engineer reads and its blocking check; skipped when the Dream reached no projections;
a rebuild backfill replaces only the Dream's refs."""

from __future__ import annotations

from dagster import AssetKey, IntMetadataValue, MarkdownMetadataValue, materialize

from memory_platform.assets.dreaming import dream_audience, dream_checks
from memory_platform.assets.graph import knowledge_graph, knowledge_graph_check
from memory_platform.assets.ledger import ledger_tables
from memory_platform.definitions import build_definitions
from memory_platform.orchestration.graph_step import GRAPH_CHECK
from tests.dagster.conftest import add_partitions, new_instance_key, seed_private, seed_team

ALL = [*ledger_tables, dream_audience, knowledge_graph, *dream_checks, knowledge_graph_check]


def materialisations(result) -> dict[str, dict]:
    return {e.asset_key.to_user_string(): e.materialization.metadata
            for e in result.get_asset_materialization_events()}


def checks(result) -> dict[str, object]:
    return {e.event_specific_data.check_name: e.event_specific_data
            for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"}


def test_the_dream_job_materialises_the_graph_downstream_with_metadata_and_its_check(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    definitions = build_definitions(resources)
    graph_node = definitions.resolve_asset_graph().get(AssetKey("knowledge_graph"))
    assert AssetKey("assertion_projections") in graph_node.parent_entity_keys
    job = definitions.resolve_job_def("dream_audience_job")

    result = job.execute_in_process(instance=instance, partition_key=partition.partition_key)

    assert result.success
    meta = materialisations(result)["knowledge_graph"]
    assert meta["claims_added"].value > 0 and meta["entities_added"].value > 0
    assert meta["failed_batches"] == IntMetadataValue(0)
    assert isinstance(meta["new_claims"], MarkdownMetadataValue)
    assert meta["new_claims"].value.startswith("| claim id | source assertions |")
    (dream_id,) = db.execute("SELECT id FROM agent_memory_dreams WHERE instance_key = %s",
                             (partition.instance_key,)).fetchone()
    assert meta["dream_id"].value == str(dream_id)
    assert checks(result)[GRAPH_CHECK].passed


def test_the_graph_is_skipped_when_the_dream_reached_no_projections(db, settings, resources,
                                                                   instance):
    partition = seed_private(db, settings, new_instance_key(), "alice", count=1)  # too few
    add_partitions(instance, partition)

    result = materialize(ALL, instance=instance, resources=resources,
                         partition_key=partition.partition_key,
                         selection=[dream_audience, knowledge_graph])

    assert result.success
    assert "knowledge_graph" not in materialisations(result)


def test_a_rebuild_materialisation_replaces_only_the_dreams_refs(db, settings, resources,
                                                                instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    first = materialize(ALL, instance=instance, resources=resources,
                        partition_key=partition.partition_key,
                        selection=[dream_audience, knowledge_graph])
    claims = materialisations(first)["knowledge_graph"]["claims_added"].value

    rebuilt = materialize(ALL, instance=instance, resources=resources,
                          partition_key=partition.partition_key, selection=[knowledge_graph],
                          run_config={"ops": {"knowledge_graph": {"config": {"rebuild": True}}}})

    assert rebuilt.success
    meta = materialisations(rebuilt)["knowledge_graph"]
    assert meta["refs_removed"].value > 0 and meta["claims_added"].value == 0
    active = db.execute("SELECT count(*) FROM agent_knowledge_claims WHERE instance_key = %s"
                        " AND status = 'active'", (partition.instance_key,)).fetchone()[0]
    assert active == claims
    assert checks(rebuilt)[GRAPH_CHECK].passed
