"""The feedback recorders: injections, responses (the cited sensor) and corrections, each
once per run, with their counters."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory_platform.errors import InvalidInput
from memory_platform.retrieval.feedback.events import (
    record_corrections,
    record_injection,
    record_response,
)

INSTANCE = "acme"
OTHER_INSTANCE = "globex"
TEXT = "The quarterly VAT filing for Mandant Nord is due on the tenth of each month."
CITING_RESPONSE = "Reminder: Nord's quarterly VAT filing is due on the 10th, as every month."
UNRELATED_RESPONSE = "The office kitchen gets a new coffee machine on Monday."


def _assertion(conn: Any, text: str = TEXT, instance: str = INSTANCE) -> uuid.UUID:
    """A minimal active assertion row."""
    return conn.execute(
        """
        INSERT INTO agent_memory_assertions
               (instance_key, audience_kind, audience_key, identity_hash, assertion_type,
                assertion_text, status, origin)
        VALUES (%s, 'workspace', %s, %s, 'fact', %s, 'active', 'explicit')
        RETURNING id
        """,
        (instance, instance, uuid.uuid4().hex, text),
    ).fetchone()[0]


def _counts(conn: Any, assertion_id: uuid.UUID) -> tuple[int, int, int]:
    return conn.execute(
        """
        SELECT injected_count, cited_count, corrected_count
          FROM agent_memory_assertions
         WHERE id = %s
        """,
        (assertion_id,),
    ).fetchone()


def _events(conn: Any, event_type: str, assertion_id: uuid.UUID | None = None) -> list[dict]:
    rows = conn.execute(
        """
        SELECT assertion_id, memory_id, run_id, user_id, session_key, details
          FROM agent_memory_retrieval_feedback
         WHERE event_type = %s
           AND (%s::uuid IS NULL OR assertion_id = %s)
         ORDER BY id
        """,
        (event_type, assertion_id, assertion_id),
    ).fetchall()
    keys = ("assertion_id", "memory_id", "run_id", "user_id", "session_key", "details")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _injected_hours_ago(conn: Any, assertion_id: uuid.UUID, hours: int) -> None:
    conn.execute(
        """
        UPDATE agent_memory_assertions
           SET injected_count = injected_count + 1,
               last_injected_at = now() - make_interval(hours => %s)
         WHERE id = %s
        """,
        (hours, assertion_id),
    )


# --- recording injections ----------------------------------------------------------------


def test_injection_counts_each_assertion_and_stamps_the_time(conn):
    first, second = _assertion(conn), _assertion(conn)
    assert record_injection(conn, INSTANCE, [first, second], run_id="run-1") == 2
    assert _counts(conn, first) == (1, 0, 0) and _counts(conn, second) == (1, 0, 0)
    stamped = conn.execute(
        """
        SELECT count(*)
          FROM agent_memory_assertions
         WHERE last_injected_at > now() - interval '1 minute'
        """
    ).fetchone()[0]
    assert stamped == 2


def test_injection_events_carry_run_user_and_session(conn):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1", user_id="alice",
                     session_key="web:1")
    [event] = _events(conn, "injected", assertion)
    assert (event["run_id"], event["user_id"], event["session_key"]) == (
        "run-1", "alice", "web:1")


def test_injection_is_recorded_once_per_run(conn):
    first, second = _assertion(conn), _assertion(conn)
    record_injection(conn, INSTANCE, [first], run_id="run-1")
    assert record_injection(conn, INSTANCE, [first, second, first], run_id="run-1") == 1
    assert _counts(conn, first) == (1, 0, 0) and _counts(conn, second) == (1, 0, 0)
    assert len(_events(conn, "injected", first)) == 1


def test_a_later_run_counts_the_injection_again(conn):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    assert record_injection(conn, INSTANCE, [assertion], run_id="run-2") == 1
    assert _counts(conn, assertion) == (2, 0, 0)


def test_injection_ignores_assertions_of_another_instance(conn):
    ours, theirs = _assertion(conn), _assertion(conn, instance=OTHER_INSTANCE)
    assert record_injection(conn, INSTANCE, [ours, theirs, uuid.uuid4()], run_id="run-1") == 1
    assert _counts(conn, theirs) == (0, 0, 0)
    assert _events(conn, "injected", theirs) == []


def test_injection_needs_a_run_id(conn):
    with pytest.raises(InvalidInput, match="run_id"):
        record_injection(conn, INSTANCE, [_assertion(conn)], run_id="")


# --- recording responses -----------------------------------------------------------------


def test_a_response_records_citations_of_the_injected_assertions(conn, settings):
    cited, ignored = _assertion(conn), _assertion(conn, text=UNRELATED_RESPONSE)
    record_injection(conn, INSTANCE, [cited, ignored], run_id="run-1", user_id="alice")
    assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == [cited]
    assert _counts(conn, cited) == (1, 1, 0) and _counts(conn, ignored) == (1, 0, 0)
    [event] = _events(conn, "cited", cited)
    assert (event["run_id"], event["user_id"]) == ("run-1", "alice")


def test_a_response_only_cites_assertions_injected_in_its_run(conn, settings):
    elsewhere = _assertion(conn)
    record_injection(conn, INSTANCE, [elsewhere], run_id="run-1")
    assert record_response(conn, INSTANCE, run_id="run-2", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert _counts(conn, elsewhere) == (1, 0, 0)


def test_a_response_is_recorded_once_per_run(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    for _ in range(2):
        assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                               settings=settings) == [assertion]
    assert _counts(conn, assertion) == (1, 1, 0)
    assert len(_events(conn, "cited", assertion)) == 1


def test_a_response_does_not_see_runs_of_another_instance(conn, settings):
    theirs = _assertion(conn, instance=OTHER_INSTANCE)
    record_injection(conn, OTHER_INSTANCE, [theirs], run_id="run-1")
    assert record_response(conn, INSTANCE, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert _counts(conn, theirs) == (1, 0, 0)


# --- recording corrections ---------------------------------------------------------------


def test_corrections_count_only_recently_injected_assertions(conn, settings):
    recent, stale, never = _assertion(conn), _assertion(conn), _assertion(conn)
    record_injection(conn, INSTANCE, [recent], run_id="run-1")
    _injected_hours_ago(conn, stale, settings.feedback_correction_window_hours + 1)
    assert record_corrections(conn, INSTANCE, [recent, stale, never], reason="superseded",
                              settings=settings) == 1
    assert _counts(conn, recent) == (1, 0, 1)
    assert _counts(conn, stale) == (1, 0, 0) and _counts(conn, never) == (0, 0, 0)


def test_a_correction_event_records_the_ledger_reason(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    record_corrections(conn, INSTANCE, [assertion], reason="conflict", settings=settings)
    [event] = _events(conn, "corrected", assertion)
    assert event["details"] == {"reason": "conflict"}


def test_the_correction_window_comes_from_settings(conn, settings):
    assertion = _assertion(conn)
    _injected_hours_ago(conn, assertion, 100)
    wide = settings.model_copy(update={"feedback_correction_window_hours": 120})
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              settings=settings) == 0
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              settings=wide) == 1


def test_an_explicit_correction_window_overrides_the_setting(conn, settings):
    assertion = _assertion(conn)
    _injected_hours_ago(conn, assertion, 2)
    assert record_corrections(conn, INSTANCE, [assertion], reason="superseded",
                              window_hours=1, settings=settings) == 0


def test_each_ledger_event_is_one_correction(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    record_corrections(conn, INSTANCE, [assertion], reason="conflict", settings=settings)
    record_corrections(conn, INSTANCE, [assertion], reason="superseded", settings=settings)
    assert _counts(conn, assertion) == (1, 0, 2)


def test_a_repeated_ledger_event_key_is_recorded_once(conn, settings):
    assertion = _assertion(conn)
    record_injection(conn, INSTANCE, [assertion], run_id="run-1")
    for _ in range(2):
        record_corrections(conn, INSTANCE, [assertion], reason="conflict",
                           event_key="conflict:42", settings=settings)
    assert _counts(conn, assertion) == (1, 0, 1)


def test_corrections_ignore_assertions_of_another_instance(conn, settings):
    theirs = _assertion(conn, instance=OTHER_INSTANCE)
    record_injection(conn, OTHER_INSTANCE, [theirs], run_id="run-1")
    assert record_corrections(conn, INSTANCE, [theirs], reason="conflict",
                              settings=settings) == 0
    assert _counts(conn, theirs) == (1, 0, 0)
