"""The flush before compaction, on the real database: its triggers (transcript bytes over
the last 8 runs, at least 3 new turns, budget pressure overriding the minimum), automation
sessions, the memoryFlush state, the rows it writes (source_type 'flush' in the audience
of their run, found by the owner's search), trust, and a failed model call that changes
nothing."""

from __future__ import annotations

import pytest

from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions.flush import flush_session
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from memory_platform.features.sessions.state import FLUSH_SECTION, read_section, read_state
from memory_platform.shared.access import AccessContext
from tests.sessions.facts_conversation import (
    ALICE_RUN,
    DECISION,
    GERMAN_DECISION,
    GERMAN_RUN,
    PREFERENCE,
    REMEMBERED,
    add_run,
    answer,
    fact,
    filler_run,
    http_model,
    http_settings,
    memories,
    offline_settings,
    set_share,
)
from tests.support import openai_server as scripted
from tests.support.environment import clean_environment  # noqa: F401

# The scripted OpenAI-compatible server (its fixtures, used by name).
openai_server_session = scripted.openai_server_session
openai_server = scripted.openai_server

SESSION = "web:alice-7"


@pytest.fixture
def settings(module_database_url):
    return offline_settings(module_database_url)


def fillers(db, instance, count: int, *, bytes_each: int = 200, session: str = SESSION,
            **context) -> None:
    for index in range(count):
        add_run(db, instance, session, filler_run(index, 200), user_id="alice",
                transcript_bytes=bytes_each, **context)


def flush_state(db, instance, session: str = SESSION) -> dict:
    return read_section(db, instance, session, FLUSH_SECTION)


# --- triggers --------------------------------------------------------------------------------


def test_a_short_session_is_not_due_and_says_why(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    fillers(db, instance, 3)
    report = flush_session(db, settings, instance, SESSION)
    assert (report.outcome, report.reason) == ("skipped", "not_due")
    state = flush_state(db, instance)
    assert state["lastSkipReason"] == "below_threshold"
    assert state["lastBudgetCheck"] == {"promptTokens": None, "budgetTokens": 128_000,
                                        "ratio": 0.0, "pressure": False}
    assert "lastFlushedRunCount" not in state
    assert memories(db, instance) == []


def test_only_the_bytes_of_the_last_8_runs_count(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", transcript_bytes=17_000)
    fillers(db, instance, 8, bytes_each=200)   # the big run is the 9th newest: left out
    assert flush_session(db, settings, instance, SESSION).reason == "not_due"
    assert flush_state(db, instance)["lastSkipReason"] == "below_threshold"

    other = "web:alice-8"
    fillers(db, instance, 1, session=other)
    add_run(db, instance, other, ALICE_RUN, user_id="alice", transcript_bytes=17_000)
    fillers(db, instance, 7, session=other)    # 17,000 + 7 x 200 = 18,400 in the window
    report = flush_session(db, settings, instance, other)
    assert (report.outcome, report.transcript_bytes) == ("completed", 18_400)
    assert {r["content"] for r in memories(db, instance, other)} == {DECISION, PREFERENCE}


def test_a_flush_needs_3_new_turns_since_the_last_one(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", transcript_bytes=18_000)
    fillers(db, instance, 2)
    assert flush_session(db, settings, instance, SESSION).outcome == "completed"
    assert flush_state(db, instance)["lastFlushedRunCount"] == 3

    add_run(db, instance, SESSION, GERMAN_RUN, user_id="alice")
    fillers(db, instance, 1)
    report = flush_session(db, settings, instance, SESSION)
    assert (report.reason, report.new_runs) == ("not_due", 2)
    assert flush_state(db, instance)["lastSkipReason"] == "too_few_new_turns"

    fillers(db, instance, 1)
    report = flush_session(db, settings, instance, SESSION)
    assert (report.outcome, report.runs_flushed) == ("completed", 3)
    state = flush_state(db, instance)
    assert (state["lastFlushedRunCount"], state["flushes"]) == (6, 2)
    assert {r["content"] for r in memories(db, instance)} == {
        DECISION, PREFERENCE, GERMAN_DECISION, REMEMBERED}


def test_budget_pressure_flushes_without_waiting_for_turns_or_bytes(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", transcript_bytes=18_000)
    fillers(db, instance, 2)
    flush_session(db, settings, instance, SESSION)
    # One new turn and a small transcript, but the prompt is at 90% of the run's budget.
    add_run(db, instance, SESSION, GERMAN_RUN, user_id="alice", prompt_tokens=9_000,
            context_budget_tokens=10_000)
    report = flush_session(db, settings, instance, SESSION)
    assert (report.outcome, report.new_runs) == ("completed", 1)
    assert flush_state(db, instance)["lastBudgetCheck"] == {
        "promptTokens": 9_000, "budgetTokens": 10_000, "ratio": 0.9, "pressure": True}


def test_without_its_own_budget_a_run_is_measured_against_the_default(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", prompt_tokens=110_000)
    report = flush_session(db, settings, instance, SESSION)
    assert report.outcome == "completed"
    assert report.budget is not None and report.budget.pressure
    assert report.budget.budget_tokens == settings.session_context_budget_tokens


def test_below_the_pressure_ratio_is_no_pressure(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", prompt_tokens=8_400,
            context_budget_tokens=10_000)
    report = flush_session(db, settings, instance, SESSION)
    assert report.reason == "not_due" and not report.budget.pressure


def test_force_skips_the_triggers_but_not_the_need_for_a_new_turn(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    assert flush_session(db, settings, instance, SESSION, force=True).outcome == "completed"
    report = flush_session(db, settings, instance, SESSION, force=True)
    assert (report.outcome, report.reason) == ("skipped", "not_due")
    assert flush_state(db, instance)["lastSkipReason"] == "no_new_turns"


def test_an_automation_session_is_never_flushed_and_the_state_says_so(db, settings, instance):
    session = "heartbeat:daily"
    add_run(db, instance, session, ALICE_RUN, user_id="alice", transcript_bytes=40_000)
    report = flush_session(db, settings, instance, session, force=True)
    assert (report.outcome, report.reason) == ("skipped", "automation_session")
    assert read_state(db, instance, session)["memoryFlush"]["lastSkipReason"] == \
        "automation_session"
    assert memories(db, instance) == []


# --- what it writes --------------------------------------------------------------------------


def test_flush_rows_carry_the_sessions_audience_and_are_found_by_the_owner(db, settings,
                                                                          instance):
    set_share(db, instance, "alice", False)
    run_id = add_run(db, instance, SESSION, ALICE_RUN, user_id="alice",
                     transcript_bytes=20_000)
    report = flush_session(db, settings, instance, SESSION, force=True)
    rows = memories(db, instance)
    assert {r["content"] for r in rows} == {DECISION, PREFERENCE}
    for row in rows:
        assert (row["source_type"], row["visibility_scope"], row["audience_key"]) == (
            "flush", "private", "alice")
        assert row["assertion_id"] is None and row["memory_scope"] == "session"
        assert row["session_key"] == SESSION and row["trust_class"] == "human_direct"
        assert row["metadata"]["runId"] == run_id
        assert row["metadata"]["flushedBy"] == "extractive"
        assert row["metadata"]["memoryClass"] == "flush"
        assert set(row["metadata"]) >= {"sessionKey", "runId", "sourceMessageId", "flushedBy"}
    alice = AccessContext(instance, user_id="alice")
    hits = [h.content for h in search_memories(db, settings, alice, "PostgreSQL billing",
                                               stamp=False)]
    assert DECISION in hits
    bob = AccessContext(instance, user_id="bob")
    assert DECISION not in [h.content for h in search_memories(
        db, settings, bob, "PostgreSQL billing", stamp=False)]

    state = flush_state(db, instance)
    assert state["lastFlushedRunCount"] == 1 and state["flushes"] == 1
    assert state["lastMemoryId"] == f"agent_memories/{report.memory_ids[-1]}"
    assert state["lastBytesWritten"] == len(DECISION.encode()) + len(PREFERENCE.encode())
    assert state["lastSkipReason"] is None and state["lastFlushedAt"]
    assert set(state["lastBudgetCheck"]) == {"promptTokens", "budgetTokens", "ratio",
                                             "pressure"}


def test_each_flushed_fact_lands_in_the_audience_of_its_own_run(db, settings, instance):
    set_share(db, instance, "alice", False)
    add_run(db, instance, SESSION, [ALICE_RUN[0]], user_id="alice")
    add_run(db, instance, SESSION, [("user", PREFERENCE)], user_id="alice",
            group_room_id="room:ops")
    flush_session(db, settings, instance, SESSION, force=True)
    rows = {r["content"]: r for r in memories(db, instance)}
    assert (rows[DECISION]["visibility_scope"], rows[DECISION]["audience_key"]) == (
        "private", "alice")
    # Opted out in a room: the room's channel audience (never the whole team), with its refs.
    assert (rows[PREFERENCE]["visibility_scope"], rows[PREFERENCE]["audience_key"]) == (
        "channel", "room:ops")
    assert rows[PREFERENCE]["subject_refs"] == {"userId": "alice", "groupRoomId": "room:ops"}


CONFIRMED = "I booked the review for Friday at 14:00."


def test_what_only_the_assistant_stated_is_flushed_but_is_no_shared_fact(db, settings,
                                                                       instance):
    set_share(db, instance, "alice", False)
    run_id = add_run(db, instance, SESSION, [
        ("user", "Can you find a slot for the design review next week?"),
        ("assistant", f"{CONFIRMED} I will send the invitation to the whole team.")],
        user_id="alice")
    shared = extract_shared_facts(db, settings, instance, SESSION)
    assert (shared.outcome, shared.runs_done, shared.memory_ids) == ("completed", 1, [])
    assert memories(db, instance, source_type="fact") == []

    report = flush_session(db, settings, instance, SESSION, force=True)
    assert report.outcome == "completed" and len(report.memory_ids) == 1
    [row] = memories(db, instance)
    assert (row["content"], row["source_type"], row["trust_class"]) == (
        CONFIRMED, "flush", "assistant_inference")
    assert (row["visibility_scope"], row["audience_key"]) == ("private", "alice")
    message_id = db.execute(
        "SELECT id::text FROM agent_context_messages WHERE instance_key = %s AND run_id = %s"
        " AND role = 'assistant'", (instance, run_id)).fetchone()[0]
    assert row["metadata"]["sourceMessageId"] == message_id


def test_an_assistants_echo_of_a_private_statement_stays_private(db, settings, instance):
    set_share(db, instance, "alice", True)  # shares with the team, but asked for privacy here
    add_run(db, instance, SESSION, [
        ("user", "Only for me: my dentist appointment is on 14 December."),
        ("assistant", "I booked a reminder for your dentist appointment on 14 December.")],
        user_id="alice")
    flush_session(db, settings, instance, SESSION, force=True)
    rows = memories(db, instance)
    assert len(rows) == 2 and {r["trust_class"] for r in rows} == {
        "human_direct", "assistant_inference"}
    assert {(r["visibility_scope"], r["audience_key"]) for r in rows} == {("private", "alice")}


def test_a_repeated_flush_of_the_same_fact_keeps_one_row(db, settings, instance):
    add_run(db, instance, SESSION, [ALICE_RUN[0]], user_id="alice")
    flush_session(db, settings, instance, SESSION, force=True)
    [before] = memories(db, instance)
    add_run(db, instance, SESSION, [ALICE_RUN[0]], user_id="alice")
    report = flush_session(db, settings, instance, SESSION, force=True)
    [after] = memories(db, instance)
    assert (report.deduplicated, report.memory_ids) == (1, [])
    assert after["id"] == before["id"] and after["updated_at"] > before["updated_at"]
    assert flush_state(db, instance)["lastMemoryId"] == f"agent_memories/{after['id']}"


def test_a_models_paraphrase_is_flushed_as_an_inference(db, instance, module_database_url,
                                                        openai_server):
    settings = http_settings(module_database_url, openai_server.base_url)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    openai_server.script_chat(content=answer(
        fact(DECISION, kind="decision"),
        fact("Billing runs on PostgreSQL 18.", excerpt="move to PostgreSQL 18"),
        fact("A paraphrase", excerpt="not in the conversation")))
    report = flush_session(db, settings, instance, SESSION, force=True,
                           model=http_model(settings))
    assert (report.outcome, report.facts_proposed, report.rejected) == ("completed", 3, 1)
    trust = {r["content"]: r["trust_class"] for r in memories(db, instance)}
    assert trust == {DECISION: "human_direct",
                     "Billing runs on PostgreSQL 18.": "assistant_inference"}
    assert {r["metadata"]["flushedBy"] for r in memories(db, instance)} == {"fact-model"}


def test_a_failed_model_call_changes_no_state_and_is_retried(db, instance, module_database_url,
                                                             openai_server):
    settings = http_settings(module_database_url, openai_server.base_url)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", transcript_bytes=18_000)
    fillers(db, instance, 2)
    flush_session(db, offline_settings(module_database_url), instance, SESSION)
    fillers(db, instance, 1)
    add_run(db, instance, SESSION, GERMAN_RUN, user_id="alice", prompt_tokens=120_000)
    before = read_state(db, instance, SESSION)
    rows_before = len(memories(db, instance))

    openai_server.script("chat/completions", status=503, json={"error": {"message": "busy"}})
    model = http_model(settings)
    report = flush_session(db, settings, instance, SESSION, model=model)
    assert (report.outcome, report.reason) == ("failed", "model_http_error")
    assert report.error and "busy" in report.error
    assert read_state(db, instance, SESSION) == before
    assert len(memories(db, instance)) == rows_before

    openai_server.script_chat(content=answer(fact(GERMAN_DECISION, kind="decision")))
    report = flush_session(db, settings, instance, SESSION, model=model)
    assert report.outcome == "completed"
    state = flush_state(db, instance)
    assert (state["lastFlushedRunCount"], state["flushes"]) == (5, 2)
    assert GERMAN_DECISION in {r["content"] for r in memories(db, instance)}
