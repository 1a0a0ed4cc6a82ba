"""A session's maintenance pass and the queue of due sessions, on the real database: the
three operations in order with one event row each, the session's lock (a busy session is
left alone), exactly one trailing pass for requests that pile up during a pass, failures
that back off and are retried later, the batch over the due sessions, and the event
aggregates behind /metrics."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector

from memory_platform.cli import main
from memory_platform.features.sessions import state
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.features.sessions.maintenance import (
    MAINTENANCE_SECTION,
    backoff_seconds,
    maintain_session,
    run_due_sessions,
)
from memory_platform.features.sessions.metrics import EventTotals, aggregate_events
from memory_platform.foundation.settings import get_settings
from memory_platform.shared.access import AccessContext
from tests.sessions.conversation import DURABLE_TURNS
from tests.support.environment import clean_environment  # noqa: F401
from tests.support.settings import hash_embedding_settings

SESSION = "web:alice-1"

TURNS = DURABLE_TURNS


@pytest.fixture
def settings(database_url):
    """The offline extractive model, hash embeddings, and triggers a short conversation
    reaches (flush and compaction due after six runs)."""
    return hash_embedding_settings(
        database_url, hash_embedding_dimensions=64, maintenance_default_model="extractive",
        session_flush_transcript_bytes=400, session_compaction_transcript_bytes=400,
        session_compaction_chunk_tokens=200)


def broken_provider(settings):
    """An OpenAI-compatible maintenance model nobody listens for (connection refused)."""
    return settings.model_copy(update={
        "maintenance_model": "fact-model", "maintenance_base_url": "http://127.0.0.1:9/v1",
        "maintenance_max_retries": 0, "maintenance_retry_backoff_seconds": 0.01})


def converse(conn, settings, instance: str, session: str = SESSION, user: str = "alice",
             turns: list[str] = TURNS) -> None:
    """One completed run per turn (a user item and the assistant's answer), appended
    through the items write path: each completed run asks for maintenance."""
    ctx = AccessContext(instance, user_id=user, session_key=session)
    for number, text in enumerate(turns):
        append_items(conn, settings, ctx, [
            TurnItem("user", f"{text} (turn {number})"),
            TurnItem("assistant", f"Noted: {text}")])


def events(conn, instance: str, session: str = SESSION) -> list[tuple]:
    return conn.execute(
        "SELECT operation, outcome, event_type, retries, fallbacks, duration_ms, details"
        " FROM agent_session_maintenance_events WHERE instance_key = %s AND session_key = %s"
        " ORDER BY id", (instance, session)).fetchall()


def queue_row(conn, instance: str, session: str = SESSION) -> tuple[datetime, datetime]:
    return conn.execute(
        "SELECT maintenance_requested_at, maintenance_done_at FROM agent_session_state"
        " WHERE instance_key = %s AND session_key = %s", (instance, session)).fetchone()


def due_keys(conn, instance: str) -> list[str]:
    return [d.session_key for d in state.due_sessions(conn, 100, instance)]


def end_backoff(conn, instance: str, session: str = SESSION) -> None:
    """Let the backoff pass: the queue's times move into the past together, as if the clock
    had advanced to just after the retry time."""
    conn.execute(
        "UPDATE agent_session_state SET"
        "   maintenance_requested_at = maintenance_requested_at - shift,"
        "   maintenance_done_at = maintenance_done_at - shift"
        "  FROM (SELECT maintenance_requested_at - clock_timestamp() + interval '1 second'"
        "          AS shift FROM agent_session_state"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s) AS clock"
        " WHERE instance_key = %(i)s AND session_key = %(s)s",
        {"i": instance, "s": session})


# --- one pass ------------------------------------------------------------------------------


def test_a_pass_runs_shared_facts_flush_and_compaction_with_one_event_each(
        conn, settings, instance):
    converse(conn, settings, instance)
    assert due_keys(conn, instance) == [SESSION]

    session_pass = maintain_session(conn, settings, instance, SESSION)

    assert session_pass.outcome == "done", session_pass.summary()
    assert [o.operation for o in session_pass.operations] == [
        "shared_facts", "memory_flush", "history_compaction"]
    assert all(o.outcome == "completed" for o in session_pass.operations), \
        session_pass.summary()
    rows = events(conn, instance)
    assert [(r[0], r[1], r[2]) for r in rows] == [
        ("shared_facts", "completed", "session.maintenance.shared_facts.completed"),
        ("memory_flush", "completed", "session.maintenance.memory_flush.completed"),
        ("history_compaction", "completed",
         "session.maintenance.history_compaction.completed")]
    for (_, _, _, _, _, duration_ms, details), result in zip(rows, session_pass.operations,
                                                             strict=True):
        assert details["reason"] == result.reason and details["model"] == "extractive"
        assert details["rowsWritten"] == result.rows_written
        assert duration_ms > 0
    facts, flush, compaction = session_pass.operations
    assert facts.rows_written >= 1 and compaction.rows_written >= 1
    # The flush found the same facts: the write path's dedup kept one row of each.
    assert flush.rows_written + flush.details["deduplicated"] >= 1
    kinds = dict(conn.execute(
        "SELECT source_type, count(*) FROM agent_memories WHERE instance_key = %s"
        " GROUP BY 1", (instance,)).fetchall())
    assert kinds["fact"] == facts.rows_written and kinds["summary"] == compaction.rows_written
    assert due_keys(conn, instance) == []          # done as of the pass's start
    requested, done = queue_row(conn, instance)
    assert done == session_pass.started_at and requested < done
    section = state.read_section(conn, instance, SESSION, MAINTENANCE_SECTION)
    assert section["consecutiveFailures"] == 0 and section["lastOutcome"] == "done"


def test_a_second_pass_without_new_turns_writes_nothing_new(conn, settings, instance):
    converse(conn, settings, instance)
    maintain_session(conn, settings, instance, SESSION)
    memories = conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key = %s",
                            (instance,)).fetchone()[0]

    again = maintain_session(conn, settings, instance, SESSION)

    assert again.outcome == "done"
    assert [o.outcome for o in again.operations] == ["skipped"] * 3, again.summary()
    assert conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key = %s",
                        (instance,)).fetchone()[0] == memories
    assert len(events(conn, instance)) == 6


def test_a_busy_session_is_left_alone(conn, database_url, settings, instance):
    converse(conn, settings, instance)
    before = queue_row(conn, instance)
    with psycopg.connect(database_url, autocommit=True) as other:
        assert state.try_lock_session(other, instance, SESSION)   # another pass holds it

        session_pass = maintain_session(conn, settings, instance, SESSION)
        batch = run_due_sessions(conn, settings, instance_key=instance)

    assert session_pass.outcome == "busy" and session_pass.operations == []
    assert [p.outcome for p in batch.passes] == ["busy"] and batch.sessions_busy == 1
    assert events(conn, instance) == []
    assert queue_row(conn, instance) == before
    assert due_keys(conn, instance) == [SESSION]     # still due: the holder's trailing pass


def test_requests_during_a_pass_leave_exactly_one_trailing_pass(
        conn, database_url, settings, instance):
    converse(conn, settings, instance)
    with psycopg.connect(database_url) as blocker:
        # Hold the session's state row: the pass waits at its first write to it, after it
        # started (its done-mark is already taken).
        blocker.execute("SELECT 1 FROM agent_session_state WHERE instance_key = %s"
                        " AND session_key = %s FOR UPDATE", (instance, SESSION))
        with psycopg.connect(database_url, autocommit=True) as pass_conn:
            register_vector(pass_conn)        # as every platform connection has
            pid = pass_conn.info.backend_pid
            results = []
            worker = threading.Thread(target=lambda: results.append(
                maintain_session(pass_conn, settings, instance, SESSION)))
            worker.start()
            wait_until_blocked(conn, pid)
            for _ in range(3):                         # requests pile up during the pass
                state.request_maintenance(blocker, instance, SESSION, "alice")
            blocker.commit()
            worker.join(timeout=120)
    (first,) = results
    assert first.outcome == "done"
    requested, done = queue_row(conn, instance)
    assert done == first.started_at < requested
    assert due_keys(conn, instance) == [SESSION]      # one entry, however many requests

    trailing = run_due_sessions(conn, settings, instance_key=instance)

    assert [p.outcome for p in trailing.passes] == ["done"]
    assert due_keys(conn, instance) == []
    assert run_due_sessions(conn, settings, instance_key=instance).passes == []


def wait_until_blocked(conn, pid: int) -> None:
    """Until the backend ``pid`` waits for a lock (a state, not a time, is awaited)."""
    for _ in range(6000):
        row = conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                           (pid,)).fetchone()
        if row and row[0] == "Lock":
            return
        threading.Event().wait(0.01)
    raise AssertionError("the pass never reached the held row")


# --- failures ------------------------------------------------------------------------------


def test_a_broken_provider_fails_the_model_operations_and_the_others_still_run(
        conn, settings, instance):
    converse(conn, settings, instance)

    session_pass = maintain_session(conn, broken_provider(settings), instance, SESSION)

    assert session_pass.outcome == "failed"
    facts, flush, compaction = session_pass.operations
    assert facts.outcome == "failed" and flush.outcome == "failed"
    assert facts.reason.startswith("model_") and facts.error
    assert compaction.outcome == "completed" and compaction.fallbacks >= 1   # deterministic
    assert [(r[0], r[1]) for r in events(conn, instance)] == [
        ("shared_facts", "failed"), ("memory_flush", "failed"),
        ("history_compaction", "completed")]
    assert conn.execute("SELECT count(*) FROM agent_session_runs WHERE instance_key = %s"
                        " AND shared_facts = 'pending'", (instance,)).fetchone()[0] == 6


def test_a_database_error_in_one_operation_does_not_stop_the_others(conn, settings, instance):
    converse(conn, settings, instance)
    conn.execute("ALTER TABLE agent_context_summaries RENAME TO summaries_away")
    try:
        session_pass = maintain_session(conn, settings, instance, SESSION)
    finally:
        conn.execute("ALTER TABLE summaries_away RENAME TO agent_context_summaries")

    facts, flush, compaction = session_pass.operations
    assert facts.outcome == "completed" and flush.outcome == "completed"
    assert compaction.outcome == "failed" and compaction.raised
    assert compaction.error.startswith("UndefinedTable")
    assert session_pass.outcome == "failed" and session_pass.retry_at is not None
    rows = events(conn, instance)
    assert [(r[0], r[1]) for r in rows] == [
        ("shared_facts", "completed"), ("memory_flush", "completed"),
        ("history_compaction", "failed")]
    assert rows[2][6]["exception"] == "UndefinedTable"


def test_an_unresolvable_model_is_reported_and_the_pass_is_retried(conn, settings, instance):
    converse(conn, settings, instance)
    unconfigured = settings.model_copy(update={"maintenance_model": "fact-model"})

    session_pass = maintain_session(conn, unconfigured, instance, SESSION)

    assert session_pass.model is None and "fact-model" in (session_pass.model_error or "")
    assert session_pass.outcome == "failed"
    assert session_pass.operation("shared_facts").outcome == "failed"
    assert session_pass.operation("memory_flush").outcome == "failed"
    assert session_pass.retry_at is not None


def test_failures_back_off_and_are_retried_later(conn, settings, instance):
    converse(conn, settings, instance)
    broken = broken_provider(settings)

    first = maintain_session(conn, broken, instance, SESSION)

    assert first.outcome == "failed" and first.consecutive_failures == 1
    assert first.retry_at is not None
    assert first.retry_at - first.started_at >= timedelta(seconds=30)
    assert due_keys(conn, instance) == []              # not before the backoff is over
    assert run_due_sessions(conn, broken, instance_key=instance).passes == []
    state.request_maintenance(conn, instance, SESSION, "alice")   # a new turn's request
    assert queue_row(conn, instance)[0] == first.retry_at          # does not pull it earlier

    end_backoff(conn, instance)
    second = run_due_sessions(conn, broken, instance_key=instance)

    (again,) = second.passes
    assert again.outcome == "failed" and again.consecutive_failures == 2
    assert again.retry_at - again.started_at >= timedelta(seconds=60)   # doubled
    section = state.read_section(conn, instance, SESSION, MAINTENANCE_SECTION)
    assert section["consecutiveFailures"] == 2 and section["lastOutcome"] == "failed"

    end_backoff(conn, instance)
    healed = run_due_sessions(conn, settings, instance_key=instance)   # the provider is back

    (done,) = healed.passes
    assert done.outcome == "done", done.summary()
    assert done.operation("shared_facts").outcome == "completed"
    assert done.operation("memory_flush").outcome == "completed"
    assert state.read_section(conn, instance, SESSION,
                              MAINTENANCE_SECTION)["consecutiveFailures"] == 0
    assert due_keys(conn, instance) == []
    assert conn.execute("SELECT count(*) FROM agent_session_runs WHERE instance_key = %s"
                        " AND shared_facts = 'pending'", (instance,)).fetchone()[0] == 0


def test_the_backoff_doubles_up_to_its_maximum(settings):
    assert [backoff_seconds(settings, n) for n in (1, 2, 3, 7, 8, 60)] == [
        30.0, 60.0, 120.0, 1920.0, 3600.0, 3600.0]


# --- the batch -----------------------------------------------------------------------------


def test_the_batch_takes_the_oldest_requests_first_up_to_its_limit(conn, settings, instance):
    for session in ("web:first", "web:second", "web:third"):
        converse(conn, settings, instance, session, turns=TURNS[:1])
    elsewhere = f"{instance}-other"
    converse(conn, settings, elsewhere, "web:elsewhere", turns=TURNS[:1])
    seen = []

    batch = run_due_sessions(conn, settings, limit=2, instance_key=instance,
                             progress=lambda n, total, p: seen.append((n, total,
                                                                       p.session_key)))

    assert [p.session_key for p in batch.passes] == ["web:first", "web:second"]
    assert seen == [(1, 2, "web:first"), (2, 2, "web:second")]
    assert batch.more and batch.sessions_done == 2
    assert due_keys(conn, instance) == ["web:third"]
    assert due_keys(conn, elsewhere) == ["web:elsewhere"]       # another instance waits
    totals = batch.totals()
    assert totals["shared_facts"].runs == 2 and totals["memory_flush"].runs == 2


def test_a_session_done_meanwhile_is_not_passed_again(conn, settings, instance):
    for session in ("web:first", "web:second"):
        converse(conn, settings, instance, session, turns=TURNS[:1])

    def another_process_does_the_second(number, total, session_pass):
        if number == 1:   # between the listing and the second pass
            started = state.start_pass(conn, instance, "web:second")
            state.finish_pass(conn, instance, "web:second", started)

    batch = run_due_sessions(conn, settings, instance_key=instance,
                             progress=another_process_does_the_second)

    assert [(p.session_key, p.outcome) for p in batch.passes] == [
        ("web:first", "done"), ("web:second", "not_due")]
    assert events(conn, instance, "web:second") == []


def test_the_batch_limit_must_be_positive(conn, settings):
    from memory_platform.foundation.errors import InvalidInput

    with pytest.raises(InvalidInput):
        run_due_sessions(conn, settings, limit=0)


# --- event aggregates ----------------------------------------------------------------------


def add_event(conn, operation: str, outcome: str, *, age: str = "1 minute",
              duration_ms: float = 10.0, retries: int = 0, fallbacks: int = 0) -> int:
    return conn.execute(
        "INSERT INTO agent_session_maintenance_events (instance_key, session_key, operation,"
        " outcome, retries, fallbacks, duration_ms, created_at)"
        " VALUES ('i', 's', %s, %s, %s, %s, %s, now() - %s::interval) RETURNING id",
        (operation, outcome, retries, fallbacks, duration_ms, age)).fetchone()[0]


def test_aggregates_stop_at_the_first_event_that_has_not_settled(conn):
    first = add_event(conn, "memory_flush", "completed", retries=2, duration_ms=1500)
    add_event(conn, "memory_flush", "failed", age="0 seconds")      # just written
    add_event(conn, "history_compaction", "completed")              # after it: waits too

    aggregate = aggregate_events(conn, settle_seconds=60)

    assert aggregate.through_id == first and aggregate.rows == 1
    flush = aggregate.operations["memory_flush"]
    assert (flush.completed, flush.failed, flush.retries) == (1, 0, 2)
    assert flush.duration_seconds_total == flush.duration_seconds_max == 1.5
    assert aggregate.operations["history_compaction"].completed == 0


def test_running_totals_read_each_event_once_in_bounded_batches(conn):
    for number in range(5):
        add_event(conn, "history_compaction", "completed", duration_ms=100 * (number + 1),
                  fallbacks=1)
    totals = EventTotals(max_rows=2, max_batches=2, settle_seconds=0)

    first = totals.refresh(conn)           # two batches of two rows: four events
    assert first.operations["history_compaction"].completed == 4
    second = totals.refresh(conn)          # the fifth, nothing twice
    compaction = second.operations["history_compaction"]
    assert (compaction.completed, compaction.fallbacks) == (5, 5)
    assert compaction.duration_seconds_total == 1.5 and compaction.duration_seconds_max == 0.5
    add_event(conn, "history_compaction", "failed")
    assert totals.refresh(conn).operations["history_compaction"].failed == 1
    assert totals.refresh(conn).operations["history_compaction"].completed == 5


# --- the command line ----------------------------------------------------------------------


def cli(database_url: str, tmp_path, monkeypatch, **extra: str) -> CliRunner:
    """A runner whose command reads the settings from this environment."""
    env = {"MEMORY_DATABASE_URL": database_url, "MEMORY_DATA_DIR": str(tmp_path / "state"),
           "MEMORY_EMBEDDING_PROVIDER": "hash", "MEMORY_HASH_EMBEDDING_DIMENSIONS": "64",
           "MEMORY_MAINTENANCE_DEFAULT_MODEL": "extractive",
           "MEMORY_SESSION_FLUSH_TRANSCRIPT_BYTES": "400",
           "MEMORY_SESSION_COMPACTION_TRANSCRIPT_BYTES": "400", **extra}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)          # no stray .env file
    get_settings.cache_clear()
    return CliRunner()


def test_cli_maintains_the_due_sessions_in_the_foreground(
        conn, settings, instance, database_url, tmp_path, monkeypatch):
    for session in ("web:first", "web:second"):
        converse(conn, settings, instance, session)
    converse(conn, settings, f"{instance}-other", "web:elsewhere", turns=TURNS[:1])
    runner = cli(database_url, tmp_path, monkeypatch)

    result = runner.invoke(main, ["sessions", "maintain", "--instance", instance,
                                  "--limit", "5"])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"[1/2] {instance}/web:first: done: shared_facts completed")
    assert lines[1].startswith(f"[2/2] {instance}/web:second: done")
    assert lines[2].startswith("2 session(s): 2 done, 0 failed, 0 busy")
    assert any(line.startswith("history_compaction: 2 completed") for line in lines[3:])
    assert due_keys(conn, instance) == []
    assert due_keys(conn, f"{instance}-other") == ["web:elsewhere"]   # not this instance

    again = runner.invoke(main, ["sessions", "maintain", "--instance", instance])
    assert again.exit_code == 0, again.output
    assert again.output.strip() == f"no session due for maintenance in instance {instance!r}"


def test_cli_reports_failed_sessions_with_a_failing_exit_status(
        conn, settings, instance, database_url, tmp_path, monkeypatch):
    converse(conn, settings, instance)
    runner = cli(database_url, tmp_path, monkeypatch, MEMORY_MAINTENANCE_MODEL="fact-model",
                 MEMORY_MAINTENANCE_BASE_URL="http://127.0.0.1:9/v1",
                 MEMORY_MAINTENANCE_MAX_RETRIES="0")

    result = runner.invoke(main, ["sessions", "maintain", "--instance", instance])

    assert result.exit_code == 1, result.output
    assert f"[1/1] {instance}/{SESSION}: failed: shared_facts failed" in result.output
    assert "retry after" in result.output
    assert "1 session(s) had a failed operation" in result.output


def test_cli_maintain_has_help():
    result = CliRunner().invoke(main, ["sessions", "maintain", "--help"])

    assert result.exit_code == 0
    assert "--limit" in result.output and "--instance" in result.output
    assert "shared facts, then the flush, then compaction" in " ".join(result.output.split())
