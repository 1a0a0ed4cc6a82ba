"""Dream inspection in Dagster: a dry run's proposals readable in the materialisation metadata,
and a rollback launched as a Dagster job (its own run, its own metadata, an observation of the
partition's Dream assets that says rolled back: never a materialisation, issue 31 item 3)."""

from __future__ import annotations

from dagster import (
    AssetRecordsFilter,
    DagsterEventType,
    IntMetadataValue,
    MarkdownMetadataValue,
    TextMetadataValue,
)

from memory_platform.assets.rollback import ROLLED_BACK_ASSETS, rollback_dream_job
from memory_platform.shared.ledger.assertions import record_decision
from tests.dagster.conftest import add_partitions, new_instance_key, seed_team
from tests.dagster.test_dream_assets import dream_rows, materialisations, materialise


def test_a_dry_runs_proposals_are_readable_in_the_dagster_metadata(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)

    result = materialise(instance, resources, partition, dry_run=True, model="extractive")

    assert result.success
    (row,) = dream_rows(db, partition.instance_key)
    meta = materialisations(result)["dream_proposals"]
    table = meta["dry_run_proposals"]
    assert isinstance(table, MarkdownMetadataValue)
    text = table.md_str
    assert text.startswith("| # | type | evidence excerpts | would | reason code |")
    proposed = row["proposals_json"]["assertions"]
    assert proposed, "the extractive model proposes something for the seeded team"
    for item in proposed:
        assert f"| {item['index']} |" in text
    decisions = {p["decision"] for p in row["proposals_json"]["policyPreview"]}
    assert any(f"| {d} |" in text for d in decisions)


def test_a_rollback_launched_as_a_dagster_job_has_its_own_run_and_metadata(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    assert materialise(instance, resources, partition).success
    (row,) = dream_rows(db, partition.instance_key)
    created = [r[0] for r in db.execute(
        "SELECT id FROM agent_memory_assertions WHERE dream_id = %s ORDER BY created_at",
        (row["id"],))]
    assert len(created) >= 2
    record_decision(db, instance_key=partition.instance_key, assertion_id=created[0],
                    decision="approve", reviewer_kind="human", reviewer_id="ada",
                    reason_code="confirmed")

    run = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources,
        run_config={"ops": {"rollback_dream": {"config": {"dream_id": str(row["id"])}}}})

    assert run.success and run.run_id != row["dagster_run_id"]
    (output,) = [e for e in run.all_events if e.event_type == DagsterEventType.STEP_OUTPUT]
    meta = output.event_specific_data.metadata
    assert meta["rows_kept_person_decided"] == IntMetadataValue(1)
    assert meta["rows_reverted"].value >= len(created) - 1
    assert meta["dream_id"] == TextMetadataValue(str(row["id"]))
    assert not materialisations(run), "a rollback materialises nothing"
    marked = observations(run)
    assert sorted(marked) == sorted(ROLLED_BACK_ASSETS)
    for asset in ROLLED_BACK_ASSETS:
        assert marked[asset]["status"] == TextMetadataValue("rolled_back")
    # The partition's newest observation of the assertions asset is the rollback.
    (latest,) = partition_events(instance, DagsterEventType.ASSET_OBSERVATION,
                                 "dream_assertions", partition.partition_key, limit=1)
    assert latest.event_log_entry.run_id == run.run_id
    assert db.execute("SELECT status FROM agent_memory_dreams WHERE id = %s",
                      (row["id"],)).fetchone()[0] == "rolled_back"

    again = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources,
        run_config={"ops": {"rollback_dream": {"config": {"dream_id": str(row["id"])}}}})
    assert again.success and not materialisations(again) and not observations(again)


def test_rolling_back_an_older_dream_leaves_the_newer_one_the_partitions_latest(
        db, settings, resources, instance):
    """The review's case: Dream, Dream again, roll the first back. The partition's latest
    materialisation is still the standing Dream's; the rollback is an observation."""
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    assert materialise(instance, resources, partition).success
    newer = materialise(instance, resources, partition)
    assert newer.success
    older, standing = dream_rows(db, partition.instance_key)
    assert standing["status"] in ("completed", "partial")

    run = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources,
        run_config={"ops": {"rollback_dream": {"config": {"dream_id": str(older["id"])}}}})

    assert run.success
    for asset in ROLLED_BACK_ASSETS:
        (latest,) = partition_events(instance, DagsterEventType.ASSET_MATERIALIZATION, asset,
                                     partition.partition_key, limit=1)
        assert latest.event_log_entry.run_id == newer.run_id, asset
        metadata = latest.event_log_entry.asset_materialization.metadata
        assert metadata["dream_id"] == TextMetadataValue(str(standing["id"]))
        (observed,) = partition_events(instance, DagsterEventType.ASSET_OBSERVATION, asset,
                                       partition.partition_key, limit=1)
        assert observed.event_log_entry.run_id == run.run_id
        assert observed.event_log_entry.asset_observation.metadata["dream_id"] == \
            TextMetadataValue(str(older["id"]))


def test_an_unknown_dream_fails_the_run_without_changes(db, settings, resources, instance):
    run = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources, raise_on_error=False,
        run_config={"ops": {"rollback_dream": {"config": {
            "dream_id": "00000000-0000-0000-0000-000000000000"}}}})
    assert not run.success


def _key(name: str):
    from dagster import AssetKey

    return AssetKey(name)


def observations(result) -> dict[str, dict]:
    return {e.asset_key.to_user_string(): e.event_specific_data.asset_observation.metadata
            for e in result.all_events if e.event_type == DagsterEventType.ASSET_OBSERVATION}


def partition_events(instance, event_type, asset: str, partition_key: str, limit=100):
    """The partition's materialisations or observations of ``asset``, newest first."""
    fetch = (instance.fetch_materializations
             if event_type == DagsterEventType.ASSET_MATERIALIZATION
             else instance.fetch_observations)
    return fetch(AssetRecordsFilter(asset_key=_key(asset), asset_partitions=[partition_key]),
                 limit=limit, ascending=False).records


def test_a_rollback_from_the_cli_shows_on_the_partition_too(db, settings, resources):
    from click.testing import CliRunner

    from memory_platform.cli import main
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.orchestration.partitions import AUDIENCES

    partition = seed_team(db, settings, new_instance_key())
    platform = dagster_instance(settings)
    try:
        platform.add_dynamic_partitions(AUDIENCES, [partition.partition_key])
        run = materialise(platform, resources, partition)
        assert run.success
        (row,) = dream_rows(db, partition.instance_key)

        result = CliRunner().invoke(main, ["dream", "rollback", str(row["id"])])

        assert result.exit_code == 0, result.output
        (latest,) = partition_events(platform, DagsterEventType.ASSET_OBSERVATION,
                                     "dream_assertions", partition.partition_key, limit=1)
        metadata = latest.event_log_entry.asset_observation.metadata
        assert metadata["status"] == TextMetadataValue("rolled_back")
        (materialised,) = partition_events(platform, DagsterEventType.ASSET_MATERIALIZATION,
                                           "dream_assertions", partition.partition_key)
        assert materialised.event_log_entry.run_id == run.run_id, "only the Dream's"
    finally:
        platform.dispose()


def test_a_rollback_through_the_api_shows_on_the_partition_too(db, settings, resources,
                                                               database_url):
    """The API's default rollback recorder (``api_rollback_recorder``) reports to the
    platform's Dagster instance, as the CLI and ``rollback_dream_job`` do; a repeated
    rollback shows nothing new."""
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.orchestration.partitions import AUDIENCES
    from tests.api.conftest import ADMIN, key_maker, open_client

    partition = seed_team(db, settings, new_instance_key())
    platform = dagster_instance(settings)
    try:
        platform.add_dynamic_partitions(AUDIENCES, [partition.partition_key])
        assert materialise(platform, resources, partition).success
        (row,) = dream_rows(db, partition.instance_key)
        token = key_maker(database_url)("ops", scopes=(ADMIN,),
                                                 instance=partition.instance_key)
        url = f"/internal/memory/dreams/{row['id']}/rollback"
        api_settings = settings.model_copy(update={"api_dream_launcher": ""})

        with open_client(api_settings) as client:
            first = client.post(url, headers={"Authorization": f"Bearer {token}"})
            again = client.post(url, headers={"Authorization": f"Bearer {token}"})

        assert first.status_code == 200, first.text
        assert first.json()["shownInDagster"] is True
        assert again.json()["status"] == "already_rolled_back"
        assert again.json()["shownInDagster"] is False
        for asset in ROLLED_BACK_ASSETS:
            records = partition_events(platform, DagsterEventType.ASSET_OBSERVATION, asset,
                                       partition.partition_key)
            assert len(records) == 1, "the repeated rollback reported nothing"
            latest = records[0].event_log_entry.asset_observation
            assert latest.metadata["status"] == TextMetadataValue("rolled_back")
            assert latest.metadata["dream_id"] == TextMetadataValue(str(row["id"]))
            assert not any(
                r.event_log_entry.asset_materialization.metadata.get("status")
                == TextMetadataValue("rolled_back")
                for r in partition_events(platform, DagsterEventType.ASSET_MATERIALIZATION,
                                          asset, partition.partition_key))
    finally:
        platform.dispose()
