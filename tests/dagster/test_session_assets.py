"""Session maintenance on Dagster, in-process on an ephemeral instance over the real
database: ``session_maintenance_job`` maintains a real conversation and materialises the
session assets with numeric metadata; the assets sit between the context tables and the
Dream inputs; ``session_maintenance_sensor`` requests one run when sessions are due and
none is unfinished, never the same request twice, and skips otherwise."""

from __future__ import annotations

import psycopg
import pytest
from dagster import (
    AssetKey,
    DagsterRunStatus,
    RunRequest,
    SkipReason,
    build_sensor_context,
)

from memory_platform.assets.sessions import SESSION_MAINTENANCE_JOB
from memory_platform.definitions import build_definitions
from memory_platform.features.sessions import state
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.foundation.settings import get_settings
from memory_platform.sensors.sessions import build_session_maintenance_sensor
from memory_platform.shared.access import AccessContext
from tests.dagster.conftest import new_instance_key
from tests.sessions.conversation import DURABLE_TURNS

TURNS = DURABLE_TURNS
NUMBERS = ("sessions_handled", "sessions_done", "sessions_failed", "sessions_busy",
           "sessions", "completed", "failed", "skipped", "retries", "fallbacks",
           "rows_written")


@pytest.fixture
def short_triggers(settings, monkeypatch):
    """Flush and compaction due after a short conversation (the code server's environment)."""
    monkeypatch.setenv("MEMORY_SESSION_FLUSH_TRANSCRIPT_BYTES", "400")
    monkeypatch.setenv("MEMORY_SESSION_COMPACTION_TRANSCRIPT_BYTES", "400")
    monkeypatch.setenv("MEMORY_SESSION_COMPACTION_CHUNK_TOKENS", "200")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


def converse(db, settings, instance_key: str, session: str = "web:alice-1") -> None:
    ctx = AccessContext(instance_key, user_id="alice", session_key=session)
    for number, text in enumerate(TURNS):
        append_items(db, settings, ctx, [TurnItem("user", f"{text} (turn {number})"),
                                         TurnItem("assistant", f"Noted: {text}")])


def run_job(resources, instance):
    job = build_definitions(resources).resolve_job_def(SESSION_MAINTENANCE_JOB)
    return job.execute_in_process(instance=instance)


def sense(settings, instance, resources):
    sensor_def = build_session_maintenance_sensor(settings)
    with build_sensor_context(instance=instance, resources=resources) as context:
        return sensor_def(context)


def test_the_job_maintains_a_conversation_and_materialises_the_session_assets(
        db, short_triggers, resources, instance):
    instance_key = new_instance_key()
    converse(db, short_triggers, instance_key)

    result = run_job(resources, instance)

    assert result.success
    events = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in result.get_asset_materialization_events()}
    assert set(events) == {"shared_facts", "flush_memories", "session_summaries"}
    for metadata in events.values():
        for name in NUMBERS:
            assert isinstance(metadata[name].value, int), name   # plotted by the UI
        for name in ("seconds_total", "seconds_max"):
            assert isinstance(metadata[name].value, float), name
        assert metadata["sessions_handled"].value == 1
        assert metadata["sessions_done"].value == 1
        assert metadata["completed"].value == 1 and metadata["failed"].value == 0
        assert metadata["model"].value == "extractive"
        assert "agent_session_maintenance_events" in metadata["writes"].value
    summaries = events["session_summaries"]
    assert summaries["rows_written"].value >= 1
    assert events["shared_facts"]["rows_written"].value >= 1
    written = dict(db.execute(
        "SELECT source_type, count(*) FROM agent_memories WHERE instance_key = %s"
        " GROUP BY 1", (instance_key,)).fetchall())
    assert written["summary"] == summaries["rows_written"].value
    assert db.execute("SELECT count(*) FROM agent_context_summaries WHERE instance_key = %s",
                      (instance_key,)).fetchone()[0] >= 1
    assert db.execute("SELECT count(*) FROM agent_session_maintenance_events"
                      " WHERE instance_key = %s", (instance_key,)).fetchone()[0] == 3
    assert state.due_sessions(db, 10, instance_key) == []


def test_an_error_escaping_an_operation_fails_the_run_after_its_materialisations(
        db, short_triggers, resources, instance):
    instance_key = new_instance_key()
    converse(db, short_triggers, instance_key)
    db.execute("ALTER TABLE agent_context_summaries RENAME TO summaries_away")
    try:
        job = build_definitions(resources).resolve_job_def(SESSION_MAINTENANCE_JOB)
        result = job.execute_in_process(instance=instance, raise_on_error=False)
    finally:
        db.execute("ALTER TABLE summaries_away RENAME TO agent_context_summaries")

    assert not result.success
    events = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in result.get_asset_materialization_events()}
    assert events["session_summaries"]["failed"].value == 1
    assert events["shared_facts"]["completed"].value == 1
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "1 error(s) escaped a session pass" in failure.event_specific_data.error.message
    assert "UndefinedTable" in str(failure.event_specific_data.user_failure_data.metadata)


def test_a_run_without_due_sessions_materialises_nothing(db, settings, resources, instance):
    result = run_job(resources, instance)

    assert result.success
    assert result.get_asset_materialization_events() == []


def test_the_session_assets_sit_between_the_context_tables_and_the_dream_inputs():
    graph = build_definitions().resolve_asset_graph()

    def parents(key: str) -> set[str]:
        return {k.to_user_string() for k in graph.get(AssetKey(key)).parent_keys}

    assert {"shared_facts", "flush_memories", "session_summaries"} <= parents("dream_inputs")
    assert {"agent_session_runs", "agent_context_messages"} <= parents("shared_facts")
    assert {"agent_context_messages", "agent_context_items", "flush_memories"} <= \
        parents("session_summaries")
    assert {"shared_facts", "flush_memories", "session_summaries"} <= \
        parents("agent_session_maintenance_events")
    assert "session_summaries" in parents("agent_context_summary_messages")
    assert graph.get(AssetKey("session_summaries")).group_name == "sessions"


def test_the_sensor_skips_without_due_sessions(db, settings, resources, instance):
    skipped = sense(settings, instance, resources)

    assert isinstance(skipped, SkipReason)
    assert "no session due" in skipped.skip_message


def test_the_sensor_requests_one_run_for_due_sessions_and_never_repeats_it(
        db, settings, resources, instance):
    converse(db, settings, new_instance_key(), "web:one")
    converse(db, settings, new_instance_key(), "web:two")

    first = sense(settings, instance, resources)
    again = sense(settings, instance, resources)

    assert isinstance(first, RunRequest) and isinstance(again, RunRequest)
    assert first.tags["memory-platform/sessions-due"] == "2"
    oldest = state.due_sessions(db, 10)[0].requested_at.isoformat()
    assert first.run_key.startswith(f"sessions:{oldest}:2:")
    assert again.run_key == first.run_key     # the daemon deduplicates: no second run


def test_the_sensor_waits_while_a_run_is_unfinished(db, settings, resources, instance):
    converse(db, settings, new_instance_key())
    job = build_definitions(resources).resolve_job_def(SESSION_MAINTENANCE_JOB)
    run = instance.create_run_for_job(job, status=DagsterRunStatus.STARTED)

    skipped = sense(settings, instance, resources)

    assert isinstance(skipped, SkipReason)
    assert run.run_id in skipped.skip_message


def test_a_session_left_due_by_a_run_gets_a_new_request_after_it(
        db, database_url, settings, resources, instance):
    instance_key = new_instance_key()
    converse(db, settings, instance_key)
    before = sense(settings, instance, resources)
    with psycopg.connect(database_url, autocommit=True) as other:
        assert state.try_lock_session(other, instance_key, "web:alice-1")  # busy meanwhile
        result = run_job(resources, instance)
    assert result.success and result.get_asset_materialization_events() == []

    after = sense(settings, instance, resources)

    assert isinstance(before, RunRequest) and isinstance(after, RunRequest)
    assert after.run_key != before.run_key
    assert result.run_id in after.run_key
