"""The feedback recorders: injections, responses (the cited sensor) and corrections, each
once per run, with their counters."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory_platform.features.retrieval.feedback.events import (
    record_corrections,
    record_injection,
    record_response,
    record_visible_injection,
)
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.shared.access import AccessContext

INSTANCE = "acme"
OTHER_INSTANCE = "globex"
TEXT = "The quarterly VAT filing for Mandant Nord is due on the tenth of each month."
CITING_RESPONSE = "Reminder: Nord's quarterly VAT filing is due on the 10th, as every month."
UNRELATED_RESPONSE = "The office kitchen gets a new coffee machine on Monday."
ALICE = AccessContext(INSTANCE, user_id="alice", session_key="web:alice")
BOB = AccessContext(INSTANCE, user_id="bob")


def _assertion(conn: Any, text: str = TEXT, instance: str = INSTANCE,
               audience: tuple[str, str] | None = None) -> uuid.UUID:
    """A minimal active, approved assertion row (workspace unless ``audience`` is given)."""
    kind, key = audience or ("workspace", instance)
    return conn.execute(
        """
        INSERT INTO agent_memory_assertions
               (instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
                assertion_type, assertion_text, status, review_state, origin)
        VALUES (%s, %s, %s, %s, %s, 'fact', %s, 'active', 'policy_approved', 'explicit')
        RETURNING id
        """,
        (instance, kind, key, key if kind == "private" else None, uuid.uuid4().hex, text),
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
    assert record_visible_injection(conn, ALICE, [cited, ignored], run_id="run-1") == (2, 2)
    assert record_response(conn, ALICE, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == [cited]
    assert _counts(conn, cited) == (1, 1, 0) and _counts(conn, ignored) == (1, 0, 0)
    [event] = _events(conn, "cited", cited)
    assert (event["run_id"], event["user_id"], event["session_key"]) == (
        "run-1", "alice", "web:alice")


def test_a_response_only_cites_assertions_injected_in_its_run(conn, settings):
    elsewhere = _assertion(conn)
    record_visible_injection(conn, ALICE, [elsewhere], run_id="run-1")
    record_visible_injection(conn, ALICE, [], run_id="run-2")
    assert record_response(conn, ALICE, run_id="run-2", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert _counts(conn, elsewhere) == (1, 0, 0)


def test_a_response_is_recorded_once_per_run(conn, settings):
    assertion = _assertion(conn)
    record_visible_injection(conn, ALICE, [assertion], run_id="run-1")
    for _ in range(2):
        assert record_response(conn, ALICE, run_id="run-1", response_text=CITING_RESPONSE,
                               settings=settings) == [assertion]
    assert _counts(conn, assertion) == (1, 1, 0)
    assert len(_events(conn, "cited", assertion)) == 1


def test_a_response_does_not_see_runs_of_another_instance(conn, settings):
    theirs = _assertion(conn, instance=OTHER_INSTANCE)
    other = AccessContext(OTHER_INSTANCE, user_id="alice")
    record_visible_injection(conn, other, [theirs], run_id="run-1")
    with pytest.raises(NotFound, match="no run 'run-1'"):
        record_response(conn, ALICE, run_id="run-1", response_text=CITING_RESPONSE,
                        settings=settings)
    assert _counts(conn, theirs) == (1, 0, 0)


# --- F5: a run is its first reporter's -----------------------------------------------------


def _table_counts(conn: Any) -> tuple[int, int, int]:
    return conn.execute(
        "SELECT (SELECT count(*) FROM agent_feedback_runs),"
        " (SELECT count(*) FROM agent_memory_retrieval_feedback),"
        " (SELECT coalesce(sum(injected_count + cited_count), 0) FROM agent_memory_assertions)"
    ).fetchone()


def test_f5_the_first_injection_report_makes_the_run_its_users(conn):
    record_visible_injection(conn, ALICE, [_assertion(conn)], run_id="run-1")
    assert conn.execute(
        "SELECT instance_key, run_id, user_id, session_key FROM agent_feedback_runs"
    ).fetchall() == [(INSTANCE, "run-1", "alice", "web:alice")]


def test_f5_another_user_cannot_cite_in_a_run_and_learns_nothing(conn, settings):
    """Review A5: Eve with Bob's run id gets the answer of a run that does not exist, and
    Bob's counters do not move."""
    bobs = _assertion(conn, text="Bob plans to resign in March after the bonus payout.",
                      audience=("private", "bob"))
    record_visible_injection(conn, BOB, [bobs], run_id="run-42")
    before = _table_counts(conn)
    eve = AccessContext(INSTANCE, user_id="eve")
    with pytest.raises(NotFound) as refused:
        record_response(conn, eve, run_id="run-42",
                        response_text="resign March bonus payout plans", settings=settings)
    with pytest.raises(NotFound) as unknown:
        record_response(conn, eve, run_id="run-never", response_text="resign March bonus",
                        settings=settings)
    assert refused.value.message == "no run 'run-42'"
    assert unknown.value.message == "no run 'run-never'"
    with pytest.raises(NotFound):
        record_visible_injection(conn, eve, [bobs], run_id="run-42")
    assert _table_counts(conn) == before
    assert _counts(conn, bobs) == (1, 0, 0)


def test_f5_a_runtime_acting_for_another_user_cannot_report_on_the_run(conn, settings):
    assertion = _assertion(conn)
    record_visible_injection(conn, ALICE, [assertion], run_id="run-1")
    for someone in (AccessContext(INSTANCE, user_id="bob"), AccessContext(INSTANCE)):
        with pytest.raises(NotFound):
            record_response(conn, someone, run_id="run-1", response_text=CITING_RESPONSE,
                            settings=settings)
    assert _counts(conn, assertion) == (1, 0, 0)


def test_f5_cited_counts_only_assertions_the_reporter_may_still_see(conn, settings):
    """A channel assertion injected in its thread is not cited from outside the thread, and
    an assertion retracted since the injection is not cited at all."""
    in_thread = AccessContext(INSTANCE, user_id="alice", channel_thread_key="slack:C1:1")
    channel = _assertion(conn, audience=("channel", "slack:C1:1"))
    retracted = _assertion(conn)
    assert record_visible_injection(conn, in_thread, [channel, retracted],
                                    run_id="run-1") == (2, 2)
    conn.execute("UPDATE agent_memory_assertions SET status = 'superseded' WHERE id = %s",
                 (retracted,))
    outside = AccessContext(INSTANCE, user_id="alice")
    assert record_response(conn, outside, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == []
    assert record_response(conn, in_thread, run_id="run-1", response_text=CITING_RESPONSE,
                           settings=settings) == [channel]
    assert _counts(conn, retracted) == (1, 0, 0)


def test_f3_a_response_longer_than_the_setting_is_refused_and_records_nothing(conn, settings):
    assertion = _assertion(conn)
    record_visible_injection(conn, ALICE, [assertion], run_id="run-1")
    limit = settings.cited_response_max_chars
    with pytest.raises(InvalidInput, match=f"at most {limit}") as refused:
        record_response(conn, ALICE, run_id="run-1",
                        response_text=CITING_RESPONSE + " " * limit, settings=settings)
    assert refused.value.code == "response_too_long"
    assert _counts(conn, assertion) == (1, 0, 0)


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
