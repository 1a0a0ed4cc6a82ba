"""History compaction against a real database (and the scripted OpenAI-compatible server
for model answers): when it is due, what stays verbatim, the model loop with its guard,
retry, fallback and deadline, checkpoints and resumption after a timeout or a killed
connection, condensation, the lossless links, and the summary memory rows."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions import compaction
from memory_platform.features.sessions.compaction import checkpoint_leaf, compact_session
from memory_platform.features.sessions.state import COMPACTION_SECTION, read_section
from memory_platform.features.sessions.summarise import Span, SummaryOutcome
from memory_platform.shared.access import AccessContext
from tests.sessions.conversation import (
    add_run,
    answer,
    assembly,
    compaction_settings,
    conversation,
    good_answer,
    iter_pairs,
    messages,
    model_settings,
    reachable,
    summaries,
    summary_memories,
    turn,
    wait_for,
)
from tests.support import openai_server as scripted
from tests.support.openai_server import ScriptedOpenAIServer

openai_server_session = scripted.openai_server_session
openai_server = scripted.openai_server

SESSION = "chat:alice-1"


def _compactable_seqs(conn, instance: str, session: str, kept_runs: int = 3) -> list[int]:
    """The seqs of every raw item before the newest ``kept_runs`` completed runs (all runs
    before them are completed in these tests)."""
    return [row[0] for row in conn.execute(
        "SELECT m.seq FROM agent_context_messages m JOIN agent_session_runs r"
        "  ON r.instance_key = m.instance_key AND r.session_key = m.session_key"
        " AND r.run_id = m.run_id"
        " WHERE m.instance_key = %s AND m.session_key = %s AND r.run_index <"
        "   (SELECT min(run_index) FROM (SELECT run_index FROM agent_session_runs"
        "     WHERE instance_key = %s AND session_key = %s AND status = 'completed'"
        "     ORDER BY run_index DESC LIMIT %s) kept)"
        " ORDER BY m.seq", (instance, session, instance, session, kept_runs))]


def _assert_lossless(conn, instance: str, session: str) -> None:
    """Every raw item stands in the assembly exactly once: as itself or under exactly one
    summary item; each summary reaches exactly the items of its range; the assembly is
    summaries first, then raw items in order, at dense positions."""
    rows = assembly(conn, instance, session)
    assert [r[0] for r in rows] == list(range(len(rows)))
    kinds = [r[1] for r in rows]
    assert kinds == sorted(kinds, key=lambda k: k != "summary")
    seq_of = {m[0]: m[1] for m in messages(conn, instance, session)}
    covered: list[Any] = []
    for _, kind, node in rows:
        covered += reachable(conn, node) if kind == "summary" else [node]
    assert Counter(covered) == Counter(seq_of.keys())  # every item once, none twice
    raw_seqs = [seq_of[node] for _, kind, node in rows if kind == "message"]
    assert raw_seqs == sorted(raw_seqs)
    for summary in summaries(conn, instance, session):
        under = sorted(seq_of[m] for m in reachable(conn, summary["id"]))
        assert under == [s for s in sorted(seq_of.values())
                         if summary["first_seq"] <= s <= summary["last_seq"]]


def _state(conn, instance: str, session: str = SESSION) -> dict[str, Any]:
    return read_section(conn, instance, session, COMPACTION_SECTION)


# --- when it is due --------------------------------------------------------------------------

def test_not_due_skips_and_writes_nothing(db, module_database_url, instance):
    settings = compaction_settings(module_database_url, session_compaction_transcript_bytes=50_000)
    conversation(db, instance, SESSION, 6)
    before = assembly(db, instance, SESSION)

    report = compact_session(db, settings, instance, SESSION)

    assert (report.outcome, report.reason, report.trigger) == ("skipped", "not_due", None)
    assert report.measures["uncompactedBytes"] < 50_000
    assert summaries(db, instance, SESSION) == []
    assert assembly(db, instance, SESSION) == before
    assert _state(db, instance) == {}
    assert summary_memories(db, instance, SESSION) == []


def test_due_by_transcript_bytes_after_enough_new_turns(db, module_database_url, instance):
    settings = compaction_settings(module_database_url,
                                   session_compaction_transcript_bytes=1_200)
    conversation(db, instance, SESSION, 8)

    report = compact_session(db, settings, instance, SESSION)

    assert (report.outcome, report.reason, report.trigger) == \
        ("completed", "compacted", "transcript_bytes")
    assert report.leaf_summaries >= 2 and report.chunks_left == 0
    state = _state(db, instance)
    assert state["compactedThroughSeq"] == _compactable_seqs(db, instance, SESSION)[-1]
    assert state["lastTrigger"] == "transcript_bytes" and state["passes"] == 1
    assert state["leafSummaries"] == report.leaf_summaries
    assert state["pendingThroughSeq"] is None
    _assert_lossless(db, instance, SESSION)

    # One new turn is not enough for another pass (though the bytes are); two are.
    conversation(db, instance, SESSION, 1, first=8)
    waiting = compact_session(db, settings, instance, SESSION)
    assert waiting.reason == "not_due" and waiting.measures["newTurns"] == 1
    conversation(db, instance, SESSION, 1, first=9)
    again = compact_session(db, settings, instance, SESSION)
    assert again.trigger == "transcript_bytes" and again.leaf_summaries >= 1
    _assert_lossless(db, instance, SESSION)


def test_budget_pressure_triggers_without_a_turn_minimum(db, module_database_url, instance):
    settings = compaction_settings(module_database_url, session_compaction_min_new_turns=50,
                                   session_compaction_transcript_bytes=10_000_000)
    conversation(db, instance, SESSION, 5)
    assert compact_session(db, settings, instance, SESSION).reason == "not_due"
    add_run(db, instance, SESSION, turn(5), prompt_tokens=9_000, context_budget_tokens=10_000)

    report = compact_session(db, settings, instance, SESSION)

    assert (report.outcome, report.trigger) == ("completed", "budget_pressure")
    assert report.measures["budgetTokens"] == 10_000
    assert report.leaf_summaries >= 1


def test_raw_history_over_its_share_of_the_budget_triggers(db, module_database_url, instance):
    settings = compaction_settings(module_database_url, session_compaction_min_new_turns=50,
                                   session_compaction_transcript_bytes=10_000_000,
                                   session_context_budget_tokens=1_000)
    conversation(db, instance, SESSION, 8)   # about 640 raw tokens > 50% of 1,000

    report = compact_session(db, settings, instance, SESSION)

    assert report.trigger == "history_share"
    assert report.measures["rawHistoryTokens"] >= 500
    assert report.leaf_summaries >= 1


# --- what stays verbatim ---------------------------------------------------------------------

def test_recent_turns_and_open_runs_stay_verbatim(db, module_database_url, instance):
    settings = compaction_settings(module_database_url)
    early = conversation(db, instance, SESSION, 4)
    open_run = add_run(db, instance, SESSION, turn(4), completed=False)
    conversation(db, instance, SESSION, 5, first=5)   # completed, but after the open run

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert report.trigger == "forced" and report.leaf_summaries >= 1
    seqs = {run_id: [] for run_id in (*early, open_run)}
    for _, seq, run_id in messages(db, instance, SESSION):
        seqs.setdefault(run_id, []).append(seq)
    last_early = max(seqs[early[-1]])
    assert _state(db, instance)["compactedThroughSeq"] == last_early
    assert max(s["last_seq"] for s in summaries(db, instance, SESSION)) == last_early
    raw = [node for _, kind, node in assembly(db, instance, SESSION) if kind == "message"]
    later = [m[0] for m in messages(db, instance, SESSION) if m[1] > last_early]
    assert raw == later   # the open run and everything after it, verbatim and in order
    _assert_lossless(db, instance, SESSION)

    # Once the open run completes, its items and the runs after it (but the newest three)
    # are compacted too.
    db.execute("UPDATE agent_session_runs SET status = 'completed', completed_at = now()"
                " WHERE instance_key = %s AND run_id = %s", (instance, open_run))
    compact_session(db, settings, instance, SESSION, force=True)
    assert _state(db, instance)["compactedThroughSeq"] == \
        _compactable_seqs(db, instance, SESSION)[-1]
    _assert_lossless(db, instance, SESSION)


# --- the offline model -----------------------------------------------------------------------

def test_offline_extractive_compaction_end_to_end(db, module_database_url, instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)

    report = compact_session(db, settings, instance, SESSION)

    assert report.model == "extractive" and report.fallbacks == 0 and report.retries == 0
    assert report.produced_by == {"extractive": report.leaf_summaries}
    leaves = summaries(db, instance, SESSION)
    first = leaves[0]
    assert (first["kind"], first["depth"], first["first_seq"]) == ("leaf", 0, 0)
    assert (first["produced_by"], first["model"], first["user_id"]) == \
        ("extractive", "extractive", "alice")
    assert first["content"].startswith("Conversation summary (run")
    assert "2026-11-30" in first["content"]
    assert "user (alice): Turn 0: Alice from Finance says invoice INV-1000" in first["content"]
    assert first["token_count"] <= settings.session_compaction_summary_tokens
    assert [m["id"] for m in summary_memories(db, instance, SESSION)] == \
        [s["memory_id"] for s in leaves]
    assert _state(db, instance)["lastOutcome"] == "compacted"
    _assert_lossless(db, instance, SESSION)


# --- the model, its guard and the fallback ---------------------------------------------------

def _one_chunk(db, instance: str) -> None:
    """Four turns: one chunk of compactable items (the first run) before the kept three."""
    conversation(db, instance, SESSION, 4)


def test_guard_failure_then_good_answer_takes_one_retry(db, module_database_url, instance,
                                                       openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_chunk_tokens=1_000)
    _one_chunk(db, instance)
    openai_server.script_chat(content=answer('```json\n{"summary": "x"}\n```'))
    openai_server.script("chat/completions", respond=good_answer)

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert (report.leaf_summaries, report.retries, report.fallbacks) == (1, 1, 0)
    [leaf] = summaries(db, instance, SESSION)
    assert (leaf["produced_by"], leaf["model"]) == ("model", "summary-model")
    assert leaf["content"].startswith("Summary of the talk:")
    requests = openai_server.requests("chat/completions")
    assert len(requests) == 2
    retry_prompt = requests[1].json["messages"][1]["content"]
    assert "Your previous summary was rejected: it contains a code fence" in retry_prompt
    assert requests[0].json["response_format"]["json_schema"]["strict"] is True
    assert _state(db, instance)["retries"] == 1


def test_two_guard_failures_fall_back_to_the_deterministic_summary(
        db, module_database_url, instance, openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_chunk_tokens=1_000)
    _one_chunk(db, instance)
    openai_server.script_chat(content=answer("Things were said."), times=2)

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert (report.leaf_summaries, report.retries, report.fallbacks) == (1, 1, 1)
    assert report.outcome == "completed"
    [leaf] = summaries(db, instance, SESSION)
    assert leaf["produced_by"] == "fallback"
    assert leaf["content"].startswith("Conversation summary (")
    assert len(openai_server.requests("chat/completions")) == 2
    assert summary_memories(db, instance, SESSION)[0]["metadata"]["producedBy"] == "fallback"


def test_malformed_answer_falls_back_without_a_retry(db, module_database_url, instance,
                                                    openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_chunk_tokens=1_000)
    _one_chunk(db, instance)
    openai_server.script_chat(content="not json at all")

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert (report.fallbacks, report.retries) == (1, 0)
    assert report.error and report.error.startswith("malformed_output")
    assert summaries(db, instance, SESSION)[0]["produced_by"] == "fallback"


def test_model_timeout_falls_back_within_the_deadline(db, module_database_url, instance,
                                                     openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_chunk_tokens=1_000,
                              session_compaction_timeout_seconds=1.0)
    _one_chunk(db, instance)
    openai_server.script("chat/completions", delay=4.0, respond=good_answer)

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert report.deadline_seconds == 1.0
    assert (report.outcome, report.leaf_summaries, report.fallbacks) == ("completed", 1, 1)
    assert report.error and report.error.startswith("timeout")
    assert summaries(db, instance, SESSION)[0]["produced_by"] == "fallback"
    assert report.chunks_left == 0


def test_the_deadline_is_clamped_to_50_seconds_and_the_phase_timeout(module_database_url):
    assert compaction.compaction_deadline_seconds(compaction_settings(
        module_database_url, session_compaction_timeout_seconds=500)) == 50.0
    assert compaction.compaction_deadline_seconds(compaction_settings(
        module_database_url, maintenance_phase_timeout_seconds_override=7.0)) == 7.0


def test_deadline_passed_mid_way_leaves_chunks_and_the_next_pass_resumes(
        db, module_database_url, instance, openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_timeout_seconds=1.0)
    conversation(db, instance, SESSION, 8)
    openai_server.add_route("chat/completions", good_answer)
    openai_server.script("chat/completions", delay=3.0, respond=good_answer)

    first = compact_session(db, settings, instance, SESSION)

    assert first.timed_out and first.chunks_left > 0
    assert (first.outcome, first.reason, first.leaf_summaries) == ("completed", "timed_out", 1)
    state = _state(db, instance)
    assert state["pendingThroughSeq"] > state["compactedThroughSeq"]
    _assert_lossless(db, instance, SESSION)

    # No new turn: the unfinished pass alone makes the next one due, and it resumes.
    second = compact_session(db, settings.model_copy(
        update={"session_compaction_timeout_seconds": 30.0}), instance, SESSION)

    assert second.trigger == "resume" and not second.timed_out and second.chunks_left == 0
    assert second.leaf_summaries == first.chunks_left
    assert summaries(db, instance, SESSION)[0]["first_seq"] == 0
    assert _state(db, instance)["compactedThroughSeq"] == \
        _compactable_seqs(db, instance, SESSION)[-1]
    assert _state(db, instance)["pendingThroughSeq"] is None
    _assert_lossless(db, instance, SESSION)


def test_a_compaction_killed_mid_way_resumes_without_a_duplicate(
        db, module_database_url, instance, openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url)
    conversation(db, instance, SESSION, 8)
    openai_server.add_route("chat/completions", good_answer)
    openai_server.script("chat/completions", respond=good_answer)
    openai_server.script("chat/completions", delay=3.0, respond=good_answer)  # 2nd chunk

    victim = psycopg.connect(module_database_url, autocommit=True)
    register_vector(victim)
    pid = victim.info.backend_pid
    failure: list[BaseException] = []

    def run() -> None:
        try:
            compact_session(victim, settings, instance, SESSION)
        except BaseException as exc:  # the kill surfaces here
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    try:
        assert wait_for(lambda: len(summaries(db, instance, SESSION)) == 1
                        and len(openai_server.requests("chat/completions")) == 2)
        db.execute("SELECT pg_terminate_backend(%s)", (pid,))
        worker.join(timeout=20)
    finally:
        victim.close()
    assert not worker.is_alive()
    assert failure and isinstance(failure[0], psycopg.OperationalError)
    assert len(summaries(db, instance, SESSION)) == 1

    resumed = compact_session(db, settings, instance, SESSION)

    assert resumed.trigger == "resume" and resumed.outcome == "completed"
    leaves = summaries(db, instance, SESSION)
    starts = [leaf["first_seq"] for leaf in leaves]
    assert len(starts) == len(set(starts)) and len(leaves) == 1 + resumed.leaf_summaries
    for earlier, later in iter_pairs(leaves):
        assert later["first_seq"] == earlier["last_seq"] + 1
    _assert_lossless(db, instance, SESSION)
    rows = summary_memories(db, instance, SESSION)
    assert sorted(str(r["metadata"]["contextSummaryId"]) for r in rows) == \
        sorted(str(leaf["id"]) for leaf in leaves)
    assert all(leaf["memory_id"] is not None for leaf in leaves)

    # ... and a second pass adds nothing.
    after = compact_session(db, settings, instance, SESSION)
    assert (after.outcome, after.reason) == ("skipped", "not_due")
    assert len(summaries(db, instance, SESSION)) == len(leaves)


def test_a_second_pass_adds_nothing(db, module_database_url, instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)
    compact_session(db, settings, instance, SESSION)
    before = (summaries(db, instance, SESSION), assembly(db, instance, SESSION),
              summary_memories(db, instance, SESSION), _state(db, instance))

    unforced = compact_session(db, settings, instance, SESSION)
    forced = compact_session(db, settings, instance, SESSION, force=True)

    assert (unforced.outcome, unforced.reason) == ("skipped", "not_due")
    assert (forced.outcome, forced.reason, forced.candidates) == ("skipped", "not_due", 0)
    assert (summaries(db, instance, SESSION), assembly(db, instance, SESSION),
            summary_memories(db, instance, SESSION), _state(db, instance)) == before


def test_a_racing_checkpoint_cannot_write_a_second_summary(db, module_database_url, instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)
    compact_session(db, settings, instance, SESSION)
    [first, *_] = summaries(db, instance, SESSION)

    again = checkpoint_leaf(
        db, instance, SESSION, span=Span(0, first["last_seq"], 0, 0, None, None),
        last_run_index=0, user_id="alice", channel_thread_key=None,
        outcome=SummaryOutcome("A second summary of the same items.", "model"), model="m")

    assert again is None
    assert [s["first_seq"] for s in summaries(db, instance, SESSION)].count(0) == 1
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute(
            "INSERT INTO agent_context_summaries (instance_key, session_key, kind, depth,"
            " content, first_seq, last_seq) VALUES (%s, %s, 'leaf', 0, 'dup', 0, 1)",
            (instance, SESSION))


# --- condensation and the lossless graph -----------------------------------------------------

def test_condensation_at_fanout_keeps_every_item_reachable(db, module_database_url, instance):
    settings = compaction_settings(module_database_url, session_condense_fanout=2)
    conversation(db, instance, SESSION, 14)

    report = compact_session(db, settings, instance, SESSION)

    assert report.leaf_summaries >= 4 and report.condensed_summaries >= 2
    rows = summaries(db, instance, SESSION)
    assert max(s["depth"] for s in rows) >= 2
    condensed = [s for s in rows if s["kind"] == "condensed"]
    assert all(s["memory_id"] is None for s in condensed)   # its leaves are memory rows
    assert all(s["produced_by"] == "extractive" for s in rows)
    standing = [node for _, kind, node in assembly(db, instance, SESSION) if kind == "summary"]
    depths = {s["id"]: s["depth"] for s in rows}
    # What stands: strictly fewer than fanout summaries per depth, deepest first.
    per_depth = Counter(depths[node] for node in standing)
    assert all(count < 2 for count in per_depth.values())
    assert [depths[n] for n in standing] == sorted((depths[n] for n in standing), reverse=True)
    state = _state(db, instance)
    assert state["condensedSummaries"] == report.condensed_summaries
    _assert_lossless(db, instance, SESSION)

    # Every raw item is reachable from every summary above it.
    seq_of = {m[0]: m[1] for m in messages(db, instance, SESSION)}
    for summary in rows:
        for message in reachable(db, summary["id"]):
            assert summary["first_seq"] <= seq_of[message] <= summary["last_seq"]


def test_condensation_runs_with_the_model_and_its_guard(db, module_database_url, instance,
                                                       openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url,
                              session_condense_fanout=2)
    conversation(db, instance, SESSION, 8)
    openai_server.add_route("chat/completions", good_answer)

    report = compact_session(db, settings, instance, SESSION)

    assert report.condensed_summaries >= 1 and report.fallbacks == 0
    condensed = [s for s in summaries(db, instance, SESSION) if s["kind"] == "condensed"]
    assert condensed and all(s["produced_by"] == "model" for s in condensed)
    prompts = [r.json["messages"][1]["content"] for r in openai_server.requests()]
    assert any(p.startswith("Merge these 2 consecutive summaries") for p in prompts)
    _assert_lossless(db, instance, SESSION)


# --- summary memory rows ---------------------------------------------------------------------

def test_summary_memory_rows_of_a_direct_session_are_private(db, module_database_url,
                                                             instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)

    report = compact_session(db, settings, instance, SESSION)

    rows = summary_memories(db, instance, SESSION)
    assert [r["id"] for r in rows] == report.summary_memory_ids
    leaves = summaries(db, instance, SESSION)
    for row, leaf in zip(rows, leaves, strict=True):
        assert (row["visibility_scope"], row["audience_key"]) == ("private", "alice")
        assert row["trust_class"] == "assistant_inference"
        assert row["memory_scope"] == "session"
        assert row["content"] == leaf["content"] and row["id"] == leaf["memory_id"]
        assert row["metadata"] == {
            "contextSummaryId": str(leaf["id"]), "sessionKey": SESSION,
            "firstSeq": leaf["first_seq"], "lastSeq": leaf["last_seq"],
            "producedBy": "extractive", "memoryClass": "session_summary"}
        assert row["occurred_at"] is not None
    alice = AccessContext(instance_key=instance, user_id="alice")
    bob = AccessContext(instance_key=instance, user_id="bob")
    hits = search_memories(db, settings, alice, "invoice INV-1000 Berlin office", stamp=False)
    assert rows[0]["id"] in {hit.memory_id for hit in hits}
    assert search_memories(db, settings, bob, "invoice INV-1000 Berlin office",
                           stamp=False) == []


def test_summary_memory_rows_of_a_room_are_team_rows(db, module_database_url, instance):
    settings = compaction_settings(module_database_url)
    room = "room:release"
    conversation(db, instance, room, 8, group_room_id="team-room")

    compact_session(db, settings, instance, room)

    rows = summary_memories(db, instance, room)
    assert rows and all((r["visibility_scope"], r["audience_key"]) == ("team", instance)
                        for r in rows)
    bob = AccessContext(instance_key=instance, user_id="bob")
    hits = search_memories(db, settings, bob, "invoice INV-1000 Berlin office", stamp=False)
    assert rows[0]["id"] in {hit.memory_id for hit in hits}


def test_automation_sessions_are_compacted_without_memory_rows(db, module_database_url,
                                                               instance):
    settings = compaction_settings(module_database_url)
    session = "cron:nightly-report"
    conversation(db, instance, session, 8, user_id=None)

    report = compact_session(db, settings, instance, session)

    assert report.leaf_summaries >= 1 and report.summary_memory_ids == []
    assert summary_memories(db, instance, session) == []
    _assert_lossless(db, instance, session)


def test_a_lost_memory_link_is_repaired_without_a_second_row(db, module_database_url,
                                                             instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)
    compact_session(db, settings, instance, SESSION)
    rows = summary_memories(db, instance, SESSION)
    db.execute("UPDATE agent_context_summaries SET memory_id = NULL"
               " WHERE instance_key = %s AND session_key = %s", (instance, SESSION))

    report = compact_session(db, settings, instance, SESSION)

    assert (report.outcome, report.reason) == ("completed", "repaired")
    assert report.memory_repairs == len(rows)
    assert summary_memories(db, instance, SESSION) == rows
    assert [s["memory_id"] for s in summaries(db, instance, SESSION)] == [r["id"] for r in rows]


def test_a_summary_committed_before_a_crash_gets_its_memory_row_once(db, module_database_url,
                                                                     instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 4)
    seqs = _compactable_seqs(db, instance, SESSION)
    # The checkpoint of a chunk commits; the pass dies before the memory row is written.
    summary_id = checkpoint_leaf(
        db, instance, SESSION, span=Span(seqs[0], seqs[-1], 0, 0, None, None),
        last_run_index=0, user_id="alice", channel_thread_key=None,
        outcome=SummaryOutcome("Alice from Finance: invoice INV-1000 is due.", "model"),
        model="summary-model", owner="alice")
    assert summary_id is not None and summary_memories(db, instance, SESSION) == []

    first = compact_session(db, settings, instance, SESSION)
    second = compact_session(db, settings, instance, SESSION)

    assert first.memory_repairs == 1 and second.memory_repairs == 0
    [row] = summary_memories(db, instance, SESSION)
    assert row["metadata"]["contextSummaryId"] == str(summary_id)
    assert summaries(db, instance, SESSION)[0]["memory_id"] == row["id"]


# --- with the items API's own writes ---------------------------------------------------------

def test_compaction_of_items_appended_through_the_items_api(db, module_database_url,
                                                            instance):
    from memory_platform.features.sessions.items import TurnItem, append_items, complete_run

    settings = compaction_settings(module_database_url)
    session = "chat:appended"
    ctx = AccessContext(instance_key=instance, user_id="alice", session_key=session)
    for n in range(7):
        items = [TurnItem(role, text, occurred_at=None, client_item_id=f"m-{n}-{i}",
                          metadata={"tool": "calendar"} if role == "assistant" else None)
                 for i, (role, text) in enumerate(turn(n))]
        if n % 2:   # a run of its own, completed at once
            append_items(db, settings, ctx, items)
        else:       # a named run, completed afterwards with its budget figures
            append_items(db, settings, ctx, items[:1], run_id=f"run-{n}")
            append_items(db, settings, ctx, items[1:], run_id=f"run-{n}")
            complete_run(db, settings, ctx, f"run-{n}", prompt_tokens=100,
                         context_budget_tokens=100_000)
    open_items = [TurnItem("user", "An open question about INV-2000 that is not done yet.")]
    append_items(db, settings, ctx, open_items, run_id="run-open")

    report = compact_session(db, settings, instance, session)

    assert report.outcome == "completed" and report.leaf_summaries >= 1
    assert _state(db, instance, session)["compactedThroughSeq"] == \
        _compactable_seqs(db, instance, session)[-1]
    _assert_lossless(db, instance, session)
    # An append after the compaction lands at the end of the rewritten assembly.
    append_items(db, settings, ctx, [TurnItem("user", "A late remark about Bob.")])
    rows = assembly(db, instance, session)
    assert rows[-1][1] == "message" and [r[0] for r in rows] == list(range(len(rows)))
    last = db.execute("SELECT id FROM agent_context_messages WHERE instance_key = %s"
                      " AND session_key = %s ORDER BY seq DESC LIMIT 1",
                      (instance, session)).fetchone()[0]
    assert rows[-1][2] == last


def test_a_transactional_connection_gets_every_unit_committed(db, module_database_url,
                                                              instance):
    settings = compaction_settings(module_database_url)
    conversation(db, instance, SESSION, 8)

    with psycopg.connect(module_database_url) as conn:   # autocommit off, as the API pool
        register_vector(conn)
        report = compact_session(conn, settings, instance, SESSION)
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    assert report.leaf_summaries >= 2
    assert len(summaries(db, instance, SESSION)) == report.leaf_summaries
    assert len(summary_memories(db, instance, SESSION)) == report.leaf_summaries
    _assert_lossless(db, instance, SESSION)


def test_a_given_model_is_bounded_by_the_compaction_deadline(
        db, module_database_url, instance, openai_server: ScriptedOpenAIServer):
    from memory_platform.features.sessions.model import session_model

    settings = model_settings(module_database_url, openai_server.base_url,
                              session_compaction_chunk_tokens=1_000,
                              session_compaction_timeout_seconds=1.0)
    _one_chunk(db, instance)
    openai_server.script("chat/completions", delay=4.0, respond=good_answer)
    model = session_model(settings, timeout_seconds=600)   # the caller's own, long timeout

    report = compact_session(db, settings, instance, SESSION, model=model, force=True)

    assert (report.fallbacks, report.model) == (1, "summary-model")
    assert report.error and report.error.startswith("timeout")


def test_an_item_larger_than_a_chunk_is_cut_in_the_prompt_but_covered(
        db, module_database_url, instance, openai_server: ScriptedOpenAIServer):
    settings = model_settings(module_database_url, openai_server.base_url)
    openai_server.add_route("chat/completions", good_answer)
    huge = "Start of the build log. " + "compile step ok; " * 2_000 + "Build 4711 failed."
    add_run(db, instance, SESSION, [("user", "Why did the build fail?"), ("tool", huge)],
            metadata={"tool": "ci.logs"})
    conversation(db, instance, SESSION, 3, first=1)

    report = compact_session(db, settings, instance, SESSION, force=True)

    assert report.fallbacks == 0
    cap = settings.session_compaction_chunk_tokens * 4
    prompts = [r.json["messages"][1]["content"] for r in openai_server.requests()]
    cut = next(p for p in prompts if "characters left out" in p)
    assert len(cut) < cap + 1_000
    assert "Start of the build log." in cut and "Build 4711 failed." in cut
    assert "tool (ci.logs)]" in cut
    assert max(s["last_seq"] for s in summaries(db, instance, SESSION)) == 1
    _assert_lossless(db, instance, SESSION)
