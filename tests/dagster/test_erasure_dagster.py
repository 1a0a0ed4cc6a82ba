"""Finding 3, Dagster's part: after `users erase`, Dagster's storage (the platform instance,
in PostgreSQL) holds neither the person's words nor their user id, while another user's
partition and runs stay.

Erin's marked words enter Dagster's runs through her private partition's Dream and chain and
through the team Dream that promotes them; her user id through her private partition (its
dynamic partition, run tags, event partitions, a batch's config) and the erasure run's own
config. Every text and jsonb column of Dagster's database is scanned
(tests/support/scan.py)."""

from __future__ import annotations

import json
import uuid

import psycopg
from click.testing import CliRunner
from dagster import AssetMaterialization, MetadataValue, job, op

from memory_platform.cli import main
from memory_platform.foundation.db.connection import ensure_database
from memory_platform.launch import execute_dreams
from memory_platform.orchestration.erasure import LEGACY_HEADERS, erase_from_dagster
from memory_platform.orchestration.home import dagster_instance
from memory_platform.orchestration.partitions import AUDIENCES
from memory_platform.shared.access import AccessContext
from tests.dagster.conftest import new_instance_key, seed_private, seed_team
from tests.dreaming.support import remember
from tests.support.scan import find_text

OLD_PROMOTED = ("| assertion | type | status | decision | evidence excerpt | source id "
                "| memory id |")


def scan(settings, needle: str) -> list[tuple[str, str, int]]:
    url = ensure_database(settings, settings.dagster_database_name)
    with psycopg.connect(url, autocommit=True) as conn:
        return find_text(conn, needle)


def seed_erin(db, settings, instance_key: str, erin: str, marker: str):
    """Her team statements (the team Dream promotes them) and her private notes, marked."""
    team_ctx = AccessContext(instance_key, user_id=erin, session_key=f"chat:{erin}-team")
    for text in (f"We decided that the {marker} release ships on the first Monday.",
                 f"Release notes for {marker} must never skip the migration check."):
        remember(db, settings, team_ctx, text, visibility="team")
    private = seed_private(db, settings, instance_key, erin)
    remember(db, settings, AccessContext(instance_key, user_id=erin,
                                         session_key=f"chat:{erin}-1"),
             f"I decided to keep my {marker} notes in Markdown files.", visibility="private")
    return private


def old_format_run(instance, partition_key: str, text: str) -> str:
    """A run as Dagster recorded it before it was content-free: the promoted-assertions
    table quoting an assertion and its excerpt."""

    @op
    def old_dream(context):
        context.log_event(AssetMaterialization(
            asset_key="dream_assertions", partition=partition_key,
            metadata={"promoted_assertions": MetadataValue.md(
                f"{OLD_PROMOTED}\n|---|---|---|---|---|---|---|\n"
                f"| {text} | fact | active | approved | {text} | s | m |")}))

    @job
    def old_dream_job():
        old_dream()

    return old_dream_job.execute_in_process(instance=instance).run_id


def test_erasure_leaves_neither_her_words_nor_her_id_in_dagsters_storage(db, settings):
    instance_key, tag = new_instance_key(), uuid.uuid4().hex[:10]
    erin, bob, marker = f"erin{tag}", f"bob{tag}", f"Zorblat{tag}"
    team = seed_team(db, settings, instance_key)
    private = seed_erin(db, settings, instance_key, erin, marker)
    bobs = seed_private(db, settings, instance_key, bob)
    other = seed_team(db, settings, new_instance_key())
    instance = dagster_instance(settings)
    try:
        runs = {}
        for name, partitions in (("private", [private]), ("team", [team]), ("bob", [bobs]),
                                 ("batch", [private, bobs]), ("other", [other])):
            reports = execute_dreams(settings, instance, [p.partition_key for p in partitions],
                                     batch_size=10)
            assert all(r.success for r in reports), reports
            runs[name] = [r.run_id for r in reports]
        # The team Dream promoted her words; Dagster's metadata of it names ids only.
        (promoted,) = db.execute(
            "SELECT count(*) FROM agent_memory_assertions WHERE instance_key = %s"
            " AND audience_kind = 'team' AND assertion_text LIKE %s",
            (instance_key, f"%{marker}%")).fetchone()
        assert promoted > 0
        assert scan(settings, marker) == []          # content-free by construction
        assert scan(settings, erin)                  # her partition is named (the scan works)
        legacy = old_format_run(instance, team.partition_key, f"{marker} quoted")
        kept_legacy = old_format_run(instance, other.partition_key, f"other{tag} quoted")
        assert scan(settings, marker)
    finally:
        instance.dispose()

    result = CliRunner().invoke(main, ["users", "erase", erin, "--instance", instance_key,
                                       "--yes", "--json"])

    assert result.exit_code == 0, result.output
    dagster = json.loads(result.stdout)["dagster"]
    assert dagster["status"] == "erased"
    # her private run, the batch naming her, the erasure run itself; the old team run
    assert dagster["runsDeleted"] == 3 and dagster["legacyRunsDeleted"] == 1
    assert dagster["partitionsDeleted"] == 1 and dagster["checkExecutionsDeleted"] > 0
    assert scan(settings, marker) == []
    assert scan(settings, erin) == []
    assert scan(settings, bob)                          # bob's partition and runs stay
    instance = dagster_instance(settings)
    try:
        for name in ("team", "bob", "other"):
            for run_id in runs[name]:
                assert instance.get_run_by_id(run_id) is not None, name
        assert instance.get_run_by_id(runs["private"][0]) is None
        assert instance.get_run_by_id(runs["batch"][0]) is None
        assert instance.get_run_by_id(legacy) is None
        assert instance.get_run_by_id(kept_legacy) is not None   # another instance's
        assert instance.has_dynamic_partition(AUDIENCES, bobs.partition_key)
        assert not instance.has_dynamic_partition(AUDIENCES, private.partition_key)
        assert erase_from_dagster(instance, instance_key, erin).as_dict() == {
            "status": "erased", "runsDeleted": 0, "legacyRunsDeleted": 0,
            "runlessEventsDeleted": 0, "checkExecutionsDeleted": 0,
            "partitionsDeleted": 0}                      # idempotent
    finally:
        instance.dispose()


def test_the_old_format_headers_are_the_ones_the_old_code_wrote():
    assert OLD_PROMOTED in LEGACY_HEADERS


def test_the_erase_route_erases_her_from_dagster_too(db, settings, database_url):
    """POST /internal/memory/users/erase (the API's default ``api_dagster_eraser``): her
    private partition's run and the partition are gone from Dagster's storage, and the
    report says so; with no reachable storage the report says that instead."""
    from tests.api.conftest import ADMIN, key_maker, open_client

    instance_key, tag = new_instance_key(), uuid.uuid4().hex[:10]
    erin = f"erin{tag}"
    private = seed_erin(db, settings, instance_key, erin, f"Zorblat{tag}")
    instance = dagster_instance(settings)
    try:
        (report,) = execute_dreams(settings, instance, [private.partition_key], batch_size=1)
        assert report.success and scan(settings, erin)
    finally:
        instance.dispose()
    token = key_maker(database_url)("ops", scopes=(ADMIN,), instance=instance_key)
    api_settings = settings.model_copy(update={"api_dream_launcher": ""})

    with open_client(api_settings) as client:
        response = client.post("/internal/memory/users/erase", json={"userId": erin},
                               headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200, response.text
    dagster = response.json()["dagster"]
    assert dagster["status"] == "erased" and dagster["runsDeleted"] == 1
    assert dagster["partitionsDeleted"] == 1
    assert scan(settings, erin) == []

    broken = settings.model_copy(update={"api_dream_launcher": "",
                                         "api_dagster_eraser": "no.such.module:erase"})
    with open_client(broken) as client:
        again = client.post("/internal/memory/users/erase", json={"userId": erin},
                            headers={"Authorization": f"Bearer {token}"})
    assert again.status_code == 200, again.text
    assert again.json()["dagster"]["status"] == "unreachable"
    assert "again" in again.json()["dagster"]["message"]
