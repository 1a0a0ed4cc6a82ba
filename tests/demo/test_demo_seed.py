"""The demo workspace end to end on the real database: seed through the write path, dream
every eligible partition with the extractive model, and check what must hold (automation
rows never reach a partition, seeding and dreaming twice add nothing, --reset)."""

from __future__ import annotations

import psycopg

from memory_platform.features import demo
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.inputs import is_automation_session, select_inputs
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.shared.access import AccessContext

EXPECTED_ROWS = sum(len(s.rows) for s in demo.SESSIONS)


def _count(db: psycopg.Connection, table: str, instance: str) -> int:
    return db.execute(f"SELECT count(*) FROM {table} WHERE instance_key = %s",  # noqa: S608
                      (instance,)).fetchone()[0]


def _expected_partitions(instance: str) -> set[str]:
    return {f"{instance}/team/{instance}", f"{instance}/private/ben",
            f"{instance}/private/dora", f"{instance}/channel/{demo.SLACK_THREAD}"}


def test_the_demo_content_covers_what_the_demo_promises(settings):
    automation = [s for s in demo.SESSIONS if is_automation_session(settings, s.key)]
    prefixes = {s.key.split(":")[0] + ":" for s in automation}
    assert {"heartbeat:", "webhook:", "cron:"} <= prefixes
    assert all(any(s.key.startswith(p) for p in settings.automation_session_prefixes)
               for s in automation)
    humans = [s for s in demo.SESSIONS if s not in automation]
    assert len({s.key for s in humans if s.group_room_id == demo.TEAM_ROOM}) >= 4
    assert any(s.explicit_private for s in humans)
    assert any(s.channel_thread_key and not s.user_id and not s.group_room_id for s in humans)
    assert {u.shares_with_team for u in demo.USERS} == {True, False}
    text = " ".join(r.content for s in humans for r in s.rows)
    for cue in ("bevorzugt", "beschlossen", "muss", "prefers", "We decided", "always",
                "first", "then", "Zuerst", "dann"):
        assert cue in text, cue
    assert {r.source_type for s in humans for r in s.rows} == {"summary", "flush", "fact"}


def test_seed_then_dream_every_eligible_partition(db, settings, instance):
    report = demo.seed_demo(db, settings, instance_key=instance)
    assert report.instance_key == instance and report.reset is None
    assert report.written == EXPECTED_ROWS and report.deduplicated == 0
    assert report.automation == 7
    audiences = report.by_audience()
    assert audiences[f"team/{instance}"]["automation"] == 5
    assert audiences[f"workspace/{instance}"] == {
        "written": 2, "deduplicated": 0, "automation": 2, "summary": 0, "flush": 2, "fact": 0}
    assert audiences["private/dora"]["written"] == 4     # she opts out of team sharing
    assert audiences["private/ben"]["fact"] == 2         # explicit private notes
    assert {p.partition_key for p in report.eligible} == _expected_partitions(instance)
    team = next(p for p in report.eligible if p.partition.kind == "team")
    assert team.excluded_automation == 5 and team.total >= 15
    assert all(p.total >= settings.dream_min_inputs for p in report.eligible)

    automation_ids = {r.memory_id for r in report.rows if r.automation}
    assertions_before = _count(db, "agent_memory_assertions", instance)
    for summary in report.eligible:
        inputs = select_inputs(db, settings, summary.partition)
        assert not automation_ids & {r.memory_id for r in inputs.rows}
        assert not any(is_automation_session(settings, r.session_key) for r in inputs.rows)
        result = run_dream_partition(db, settings, summary.partition, model="extractive")
        assert result.status == "completed", (summary.partition_key, result.diagnostics)
        assert result.model == "extractive"
        assert result.stats["accepted"] >= 3 and result.stats["activated"] >= 3
        assert result.stats["excludedAutomation"] == summary.excluded_automation
        cited = {e["memoryId"] for a in result.proposals["assertions"] for e in a["evidence"]}
        assert not cited & {str(m) for m in automation_ids}

    # No evidence anywhere in the instance comes from an automation session's row.
    leaked = db.execute(
        """
        SELECT count(*) FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
         WHERE e.instance_key = %s AND s.memory_id = ANY(%s::uuid[])
        """, (instance, list(automation_ids))).fetchone()[0]
    assert leaked == 0
    assertions_after = _count(db, "agent_memory_assertions", instance)
    evidence_after = _count(db, "agent_memory_assertion_evidence", instance)
    assert assertions_after > assertions_before

    # A second run over every partition reuses what the first created.
    for summary in report.eligible:
        again = run_dream_partition(db, settings, summary.partition, model="extractive")
        assert again.status == "completed", again.diagnostics
        assert again.stats["created"] == 0 and again.stats["accepted"] >= 3
    assert _count(db, "agent_memory_assertions", instance) == assertions_after
    assert _count(db, "agent_memory_assertion_evidence", instance) == evidence_after
    duplicates = db.execute(
        "SELECT count(*) FROM (SELECT 1 FROM agent_memory_assertions WHERE instance_key = %s"
        " GROUP BY audience_kind, audience_key, lower(assertion_text) HAVING count(*) > 1) d",
        (instance,)).fetchone()[0]
    assert duplicates == 0


def test_a_second_seed_writes_nothing_new(db, settings, instance):
    first = demo.seed_demo(db, settings, instance_key=instance)
    tables = ("agent_memories", "agent_memory_sources", "agent_memory_assertions",
              "agent_memory_chunks", "agent_memory_assertion_evidence")
    before = {t: _count(db, t, instance) for t in tables}
    second = demo.seed_demo(db, settings, instance_key=instance)
    assert second.written == 0 and second.deduplicated == EXPECTED_ROWS
    assert {r.memory_id for r in second.rows} == {r.memory_id for r in first.rows}
    assert {t: _count(db, t, instance) for t in tables} == before
    assert [p.partition_key for p in second.eligible] == [p.partition_key
                                                          for p in first.eligible]
    assert before["agent_memories"] == EXPECTED_ROWS


def test_the_opted_out_users_direct_session_stays_private(db, settings, instance):
    report = demo.seed_demo(db, settings, instance_key=instance)
    dora_direct = [r for r in report.rows if r.session_key == "direct:dora:planning"]
    assert {r.audience_label for r in dora_direct} == {"private/dora"}
    dora_room = [r for r in report.rows if r.session_key == "room:platform-team:oncall"]
    assert {r.audience_label for r in dora_room} == {f"team/{instance}"}
    team = next(p for p in report.eligible if p.partition.kind == "team")
    team_inputs = {r.memory_id for r in select_inputs(db, settings, team.partition).rows}
    assert not team_inputs & {r.memory_id for r in report.rows
                              if r.audience.kind == "private"}


def test_reset_deletes_an_instance_without_ledger_decisions(db, settings, instance):
    ctx = AccessContext(instance, user_id="anna", session_key="room:platform-team:x",
                        group_room_id=demo.TEAM_ROOM)
    store_memory(db, settings, ctx, MemoryWrite("Wir haben beschlossen, Kaffee zu trinken.",
                                                source_type="summary"))
    other = f"{instance}-other"
    store_memory(db, settings, AccessContext(other, user_id="ben"),
                 MemoryWrite("Ben prefers tea over coffee.", source_type="summary"))
    report = demo.seed_demo(db, settings, instance_key=instance, reset=True)
    assert report.instance_key == instance
    assert report.reset.startswith("deleted ")
    assert report.written == EXPECTED_ROWS
    assert _count(db, "agent_memories", instance) == EXPECTED_ROWS
    assert _count(db, "agent_memories", other) == 1     # only that instance


def test_reset_blocked_by_the_append_only_ledger_seeds_a_fresh_instance(db, settings,
                                                                         instance):
    demo.seed_demo(db, settings, instance_key=instance)
    rows = _count(db, "agent_memories", instance)
    report = demo.seed_demo(db, settings, instance_key=instance, reset=True)
    assert report.instance_key == f"{instance}-2"
    assert "append-only" in report.reset and f"{instance}-2" in report.reset
    assert report.written == EXPECTED_ROWS and report.deduplicated == 0
    assert _count(db, "agent_memories", instance) == rows           # nothing deleted
    assert {p.partition_key for p in report.eligible} == _expected_partitions(f"{instance}-2")
    again = demo.seed_demo(db, settings, instance_key=instance, reset=True)
    assert again.instance_key == f"{instance}-3"


def test_partition_keys_of_an_awkward_instance_name_round_trip(db, settings, instance):
    report = demo.seed_demo(db, settings, instance_key=f"{instance}/prod [eu], b")
    assert len(report.eligible) == 4
    for summary in report.eligible:
        assert Partition.from_partition_key(summary.partition_key) == summary.partition
