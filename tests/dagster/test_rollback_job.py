"""Dream inspection in Dagster: a dry run's proposals readable in the materialisation metadata,
and a rollback launched as a Dagster job (its own run, its own metadata, the partition's Dream
assets marked rolled back)."""

from __future__ import annotations

from dagster import (
    DagsterEventType,
    EventRecordsFilter,
    IntMetadataValue,
    MarkdownMetadataValue,
    TextMetadataValue,
)

from memory_platform.assets.rollback import ROLLED_BACK_ASSETS, rollback_dream_job
from memory_platform.ledger.assertions import record_decision
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
    marked = materialisations(run)
    assert sorted(marked) == sorted(ROLLED_BACK_ASSETS)
    for asset in ROLLED_BACK_ASSETS:
        assert marked[asset]["status"] == TextMetadataValue("rolled_back")
    # The partition's newest materialisation of the assertions asset is the rollback.
    (latest,) = instance.get_event_records(
        EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION,
                           asset_key=_key("dream_assertions"),
                           asset_partitions=[partition.partition_key]),
        limit=1, ascending=False)
    assert latest.event_log_entry.run_id == run.run_id
    assert db.execute("SELECT status FROM agent_memory_dreams WHERE id = %s",
                      (row["id"],)).fetchone()[0] == "rolled_back"

    again = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources,
        run_config={"ops": {"rollback_dream": {"config": {"dream_id": str(row["id"])}}}})
    assert again.success and not materialisations(again)


def test_an_unknown_dream_fails_the_run_without_changes(db, settings, resources, instance):
    run = rollback_dream_job.execute_in_process(
        instance=instance, resources=resources, raise_on_error=False,
        run_config={"ops": {"rollback_dream": {"config": {
            "dream_id": "00000000-0000-0000-0000-000000000000"}}}})
    assert not run.success


def _key(name: str):
    from dagster import AssetKey

    return AssetKey(name)


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
        (latest,) = platform.get_event_records(
            EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION,
                               asset_key=_key("dream_assertions"),
                               asset_partitions=[partition.partition_key]),
            limit=1, ascending=False)
        metadata = latest.event_log_entry.asset_materialization.metadata
        assert metadata["status"] == TextMetadataValue("rolled_back")
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
            records = platform.get_event_records(
                EventRecordsFilter(DagsterEventType.ASSET_MATERIALIZATION,
                                   asset_key=_key(asset),
                                   asset_partitions=[partition.partition_key]),
                ascending=False)
            latest = records[0].event_log_entry.asset_materialization
            assert latest.metadata["status"] == TextMetadataValue("rolled_back")
            assert latest.metadata["dream_id"] == TextMetadataValue(str(row["id"]))
            rolled = [r for r in records if r.event_log_entry.asset_materialization
                      .metadata.get("status") == TextMetadataValue("rolled_back")]
            assert len(rolled) == 1, "the repeated rollback reported nothing"
    finally:
        platform.dispose()
