"""``memory-platform demo seed``, ``dream list`` and ``dream rollback`` through click's
CliRunner against the real database (settings from MEMORY_* in the runner's environment)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from click.testing import CliRunner

from memory_platform.cli import main
from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.shared.ledger import assertions as ledger

ROWS = sum(len(s.rows) for s in demo.SESSIONS)


def invoke(env: dict[str, str], *args: str, ok: bool = True):
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    finally:
        get_settings.cache_clear()
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_demo_seed_prints_what_it_wrote_the_eligible_partitions_and_the_next_step(
        cli_env, instance):
    out = invoke(cli_env, "demo", "seed", "--instance", instance).output
    assert f"{ROWS} rows written, 0 deduplicated" in out
    assert "7 rows come from automation sessions" in out
    assert "heartbeat:platform-team" in out and "cron:nightly-digest" in out
    assert "dora (opts out)" in out
    for key in (f"{instance}/team/{instance}", f"{instance}/private/dora",
                f"{instance}/private/ben", f"{instance}/channel/{demo.SLACK_THREAD}"):
        assert f"  {key}: " in out, key
    assert "5 automation rows excluded" in out
    assert ("memory-platform dream run --all-eligible --model extractive "
            f"--instance '{instance}'") in out
    assert f"--partition '{instance}/team/{instance}'" in out

    again = json.loads(invoke(cli_env, "demo", "seed", "--instance", instance,
                              "--json").output)
    assert again["written"] == 0 and again["deduplicated"] == ROWS
    assert again["byAudience"][f"workspace/{instance}"]["automation"] == 2
    assert len(again["eligiblePartitions"]) == 4


def test_demo_seed_reset_says_when_it_seeds_a_fresh_instance(cli_env, instance):
    invoke(cli_env, "demo", "seed", "--instance", instance)
    out = invoke(cli_env, "demo", "seed", "--instance", instance, "--reset").output
    assert "blocked by the append-only ledger" in out
    assert f"instance '{instance}-2'" in out
    assert f"{ROWS} rows written" in out


def test_dream_list_and_rollback(cli_env, db, settings, instance):
    report = json.loads(invoke(cli_env, "demo", "seed", "--instance", instance,
                               "--json").output)
    assert report["instance"] == instance
    results = [run_dream_partition(db, settings,
                                   Partition.from_partition_key(p["partitionKey"]),
                                   model="extractive")
               for p in report["eligiblePartitions"]]
    listed = json.loads(invoke(cli_env, "dream", "list", "--json", "--instance",
                               instance).output)
    assert {r["id"] for r in listed} == {str(r.dream_id) for r in results}
    for row in listed:
        assert row["status"] == "completed" and row["model"] == "extractive"
        assert row["instanceKey"] == instance and row["finishedAt"] >= row["startedAt"]
        assert row["stats"]["accepted"] >= 3 and row["stats"]["rejected"] == 0
        assert row["stats"]["inputs"] >= 3
    team = next(r for r in listed if r["audience"]["kind"] == "team")
    assert team["stats"]["excludedAutomation"] == 5

    assert len(json.loads(invoke(cli_env, "dream", "list", "--json", "--instance", instance,
                                 "--limit", "2").output)) == 2
    table = invoke(cli_env, "dream", "list", "--instance", instance).output
    assert "accepted" in table and f"{instance}/private/dora" in table

    # A person confirmed one of the team Dream's assertions: the rollback leaves it alone.
    team_result = next(r for r in results if r.partition.kind == "team")
    kept = team_result.activated_ids[0]
    with db.transaction():
        ledger.record_decision(db, instance_key=instance, assertion_id=kept,
                               decision="approve", reviewer_kind="human", reviewer_id="anna",
                               reason_code="confirmed")
    # Every assertion the Dream created is tombstoned, including one that waits for review
    # (a procedure, docs/policy.md C4), not only the activated ones.
    created = db.execute("SELECT count(*) FROM agent_memory_assertions WHERE dream_id = %s",
                         (team_result.dream_id,)).fetchone()[0]
    out = invoke(cli_env, "dream", "rollback", str(team_result.dream_id)).output
    assert f"dream {team_result.dream_id} rolled back" in out
    assert f"tombstoned assertions:     {created - 1}" in out
    assert f"assertion {kept}: human_review" in out
    status = db.execute("SELECT status, review_state FROM agent_memory_assertions"
                        " WHERE id = %s", (kept,)).fetchone()
    assert status == ("active", "human_approved")

    again = invoke(cli_env, "dream", "rollback", str(team_result.dream_id)).output
    assert "already rolled back" in again
    listed = json.loads(invoke(cli_env, "dream", "list", "--json", "--instance",
                               instance).output)
    rolled = next(r for r in listed if r["id"] == str(team_result.dream_id))
    assert rolled["status"] == "rolled_back" and rolled["rolledBackAt"]
    assert rolled["stats"]["rollback"]["protected"] == 1

    as_json = json.loads(invoke(cli_env, "dream", "rollback", "--json",
                                str(results[0].dream_id)).output)
    assert as_json["status"] == "rolled_back" and as_json["tombstoned"]


def test_dream_rollback_of_unknown_or_malformed_ids_fails_clearly(cli_env):
    missing = uuid.uuid4()
    result = invoke(cli_env, "dream", "rollback", str(missing), ok=False)
    assert result.exit_code == 1 and f"no dream {missing}" in result.output
    result = invoke(cli_env, "dream", "rollback", "not-a-uuid", ok=False)
    assert result.exit_code == 1 and "not a dream id" in result.output


def test_dream_list_without_dreams(cli_env, instance):
    assert "no dreams yet" in invoke(cli_env, "dream", "list", "--instance", instance).output
    assert json.loads(invoke(cli_env, "dream", "list", "--json", "--instance",
                             instance).output) == []


def test_demo_seed_registers_its_partitions_so_the_first_dream_is_the_users(cli_env,
                                                                           instance):
    # The audience-partitions sensor Dreams only partitions new to Dagster: registered by
    # the seed, the demo's first Dream is the one README step 3 starts.
    from memory_platform.orchestration.home import dagster_instance
    from memory_platform.orchestration.partitions import AUDIENCES

    report = json.loads(invoke(cli_env, "demo", "seed", "--instance", instance,
                               "--json").output)
    assert report["registeredWithDagster"] is True
    keys = [p["partitionKey"] for p in report["eligiblePartitions"]]
    settings = Settings(database_url=cli_env["MEMORY_DATABASE_URL"],
                        data_dir=Path(cli_env["MEMORY_DATA_DIR"]))
    with dagster_instance(settings) as dagster:
        known = set(dagster.get_dynamic_partitions(AUDIENCES))
    assert set(keys) <= known
    out = invoke(cli_env, "demo", "seed", "--instance", instance).output
    assert "leaves their first Dream to you" in out
