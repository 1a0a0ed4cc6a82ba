"""Shared facts after a completed run, on the real database: the skip rules (16 characters
unless a remember intent, automation sessions, runs nobody can be attributed), the audience
by the sharing rules, dedup, trust, and a failed model call that leaves the run pending."""

from __future__ import annotations

import pytest

from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from memory_platform.shared.access import AccessContext
from tests.sessions.facts_conversation import (
    ALICE_RUN,
    CHATTER_RUN,
    DECISION,
    PREFERENCE,
    PRIVATE,
    PRIVATE_RUN,
    SHORT_REMEMBER_RUN,
    add_run,
    answer,
    fact,
    http_model,
    http_settings,
    memories,
    no_requests,
    offline_settings,
    run_states,
    set_share,
)
from tests.support import openai_server as scripted
from tests.support.environment import clean_environment  # noqa: F401

# The scripted OpenAI-compatible server (its fixtures, used by name).
openai_server_session = scripted.openai_server_session
openai_server = scripted.openai_server

SESSION = "web:alice-1"


@pytest.fixture
def settings(module_database_url):
    return offline_settings(module_database_url)


def search(db, settings, ctx: AccessContext, query: str) -> list[str]:
    return [hit.content for hit in search_memories(db, settings, ctx, query, limit=10,
                                                   stamp=False)]


# --- when a run is extracted -----------------------------------------------------------------


def test_a_run_with_user_turns_under_16_characters_is_skipped_without_a_model_call(
        db, instance, module_database_url, openai_server):
    settings = http_settings(module_database_url, openai_server.base_url)
    add_run(db, instance, SESSION, CHATTER_RUN, user_id="alice")
    with no_requests(openai_server):
        report = extract_shared_facts(db, settings, instance, SESSION,
                                      model=http_model(settings))
    assert (report.outcome, report.reason, report.runs_skipped) == ("skipped", "too_short", 1)
    assert run_states(db, instance, SESSION) == ["skipped"]
    assert memories(db, instance) == []


def test_a_remember_intent_is_extracted_however_short(db, settings, instance):
    add_run(db, instance, SESSION, SHORT_REMEMBER_RUN, user_id="alice")
    report = extract_shared_facts(db, settings, instance, SESSION)
    assert (report.outcome, report.runs_done) == ("completed", 1)
    assert run_states(db, instance, SESSION) == ["done"]
    assert [row["content"] for row in memories(db, instance)] == ["Gate 7"]


def test_an_automation_session_is_skipped(db, settings, instance):
    add_run(db, instance, "cron:nightly-report", ALICE_RUN, user_id="alice")
    report = extract_shared_facts(db, settings, instance, "cron:nightly-report")
    assert (report.outcome, report.reason) == ("skipped", "automation_session")
    assert run_states(db, instance, "cron:nightly-report") == ["skipped"]
    assert memories(db, instance) == []


def test_a_run_without_user_and_channel_is_skipped(db, settings, instance):
    add_run(db, instance, "anon-1", ALICE_RUN)
    report = extract_shared_facts(db, settings, instance, "anon-1")
    assert (report.outcome, report.reason) == ("skipped", "unattributed")
    assert memories(db, instance) == []


def test_open_runs_wait_and_done_runs_are_not_extracted_again(db, settings, instance):
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    add_run(db, instance, SESSION, PRIVATE_RUN, user_id="alice", completed=False)
    first = extract_shared_facts(db, settings, instance, SESSION)
    second = extract_shared_facts(db, settings, instance, SESSION)
    assert (first.runs_done, second.outcome, second.reason) == (1, "skipped", "nothing_pending")
    assert run_states(db, instance, SESSION) == ["done", "pending"]


# --- where a fact lands ----------------------------------------------------------------------


@pytest.mark.parametrize("share, context, kind, key", [
    (False, {}, "private", "alice"),                       # opted out: owner-private
    (None, {}, "team", None),                              # sharing is on by default
    (False, {"group_room_id": "room:team"}, "channel", "room:team"),  # opted out in a room
    (None, {"group_room_id": "room:team"}, "team", None),  # team room
    (None, {"channel_thread_key": "slack:C1/1.0"}, "team", None),     # linked channel
], ids=["direct-opted-out", "direct-default", "room-opted-out", "room", "linked-channel"])
def test_the_audience_follows_the_sharing_rules(db, settings, instance, share, context, kind,
                                                key):
    set_share(db, instance, "alice", share)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice", **context)
    report = extract_shared_facts(db, settings, instance, SESSION)
    rows = memories(db, instance)
    assert len(rows) == len(report.memory_ids) == 2
    assert {(r["visibility_scope"], r["audience_key"]) for r in rows} == {(kind, key or instance)}
    assert all(r["source_type"] == "fact" and r["metadata"]["memoryClass"] == "shared_fact"
               for r in rows)
    # A shared fact keeps who said it; a private one is its owner's anyway.
    assert all(r["subject_refs"].get("userId") == (None if kind == "private" else "alice")
               for r in rows)


def test_an_unlinked_channel_writes_channel_facts(db, settings, instance):
    add_run(db, instance, "slack:C9", ALICE_RUN, channel_thread_key="slack:C9/2.0",
            channel_type="slack")
    extract_shared_facts(db, settings, instance, "slack:C9")
    rows = memories(db, instance)
    assert {(r["visibility_scope"], r["audience_key"]) for r in rows} == {
        ("channel", "slack:C9/2.0")}
    # Nobody said it as an authenticated user: an inference, waiting for review.
    assert {(r["trust_class"], r["assertion_status"]) for r in rows} == {
        ("assistant_inference", "candidate")}


def test_a_private_fact_is_found_by_its_owner_and_by_nobody_else(db, settings, instance):
    set_share(db, instance, "alice", False)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    extract_shared_facts(db, settings, instance, SESSION)
    alice = AccessContext(instance, user_id="alice")
    bob = AccessContext(instance, user_id="bob")
    # The preference activated at once (the user's own words); the decision waits for review
    # (decisions always do), so retrieval does not offer it yet.
    assert search(db, settings, alice, "short answers bullet points") == [PREFERENCE]
    assert search(db, settings, bob, "short answers bullet points") == []


def test_a_team_fact_is_found_by_another_user(db, settings, instance):
    set_share(db, instance, "alice", None)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    extract_shared_facts(db, settings, instance, SESSION)
    bob = AccessContext(instance, user_id="bob", session_key="web:bob-1")
    assert search(db, settings, bob, "short answers bullet points") == [PREFERENCE]


def test_a_fact_said_privately_stays_private_although_the_user_shares(db, settings, instance):
    set_share(db, instance, "alice", True)
    add_run(db, instance, SESSION, PRIVATE_RUN + ALICE_RUN, user_id="alice")
    extract_shared_facts(db, settings, instance, SESSION)
    audience = {r["content"]: r["visibility_scope"] for r in memories(db, instance)}
    assert audience == {PRIVATE: "private", DECISION: "team", PREFERENCE: "team"}
    alice, bob = AccessContext(instance, user_id="alice"), AccessContext(instance, user_id="bob")
    assert PRIVATE in search(db, settings, alice, "doctor appointment Friday")
    assert PRIVATE not in search(db, settings, bob, "doctor appointment Friday")


# --- dedup, trust and provenance -------------------------------------------------------------


def test_a_second_extraction_of_the_same_fact_only_touches_updated_at(db, settings, instance):
    set_share(db, instance, "alice", False)
    add_run(db, instance, SESSION, [ALICE_RUN[0]], user_id="alice")
    extract_shared_facts(db, settings, instance, SESSION)
    [before] = memories(db, instance)
    add_run(db, instance, SESSION, [ALICE_RUN[0]], user_id="alice")
    report = extract_shared_facts(db, settings, instance, SESSION)
    [after] = memories(db, instance)
    assert (report.deduplicated, report.memory_ids) == (1, [])
    assert after["id"] == before["id"] and after["content"] == DECISION
    assert after["updated_at"] > before["updated_at"]
    assert after["created_at"] == before["created_at"]


def test_the_users_own_sentence_activates_and_a_paraphrase_waits_for_review(
        db, instance, module_database_url, openai_server):
    settings = http_settings(module_database_url, openai_server.base_url)
    set_share(db, instance, "alice", False)
    run_id = add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    openai_server.script_chat(content=answer(
        fact(PREFERENCE, kind="preference"),
        fact("Alice wants brief bullet-point answers.", excerpt=PREFERENCE,
             kind="preference")))
    report = extract_shared_facts(db, settings, instance, SESSION, model=http_model(settings))
    assert (report.outcome, len(report.memory_ids), report.rejected) == ("completed", 2, 0)
    rows = {r["content"]: r for r in memories(db, instance)}
    direct, inferred = rows[PREFERENCE], rows["Alice wants brief bullet-point answers."]
    assert (direct["trust_class"], direct["assertion_status"]) == ("human_direct", "active")
    assert (inferred["trust_class"], inferred["assertion_status"]) == (
        "assistant_inference", "candidate")
    message_id = db.execute(
        "SELECT id::text FROM agent_context_messages WHERE instance_key = %s AND run_id = %s"
        " AND content LIKE %s", (instance, run_id, PREFERENCE + "%")).fetchone()[0]
    assert direct["metadata"] == {
        "sessionKey": SESSION, "runId": run_id, "sourceMessageId": message_id,
        "extractedBy": "fact-model", "excerpt": PREFERENCE, "memoryClass": "shared_fact"}


def test_every_fact_of_a_run_an_agent_wrote_waits_for_review(db, settings, instance):
    set_share(db, instance, "alice", False)
    run_id = add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    db.execute("UPDATE agent_session_runs SET agent_written = true"
               " WHERE instance_key = %s AND run_id = %s", (instance, run_id))
    report = extract_shared_facts(db, settings, instance, SESSION)
    assert (report.outcome, len(report.memory_ids)) == ("completed", 2)
    rows = {r["content"]: r for r in memories(db, instance)}
    assert set(rows) == {DECISION, PREFERENCE}
    assert {(r["trust_class"], r["assertion_status"]) for r in rows.values()} == {
        ("assistant_inference", "candidate")}
    alice = AccessContext(instance, user_id="alice")
    assert PREFERENCE not in search(db, settings, alice, "short answers bullet points")


def test_rejected_model_facts_are_counted_and_the_rest_is_written(
        db, instance, module_database_url, openai_server):
    settings = http_settings(module_database_url, openai_server.base_url)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    openai_server.script_chat(content=answer(
        fact(DECISION, kind="decision"),
        fact("Alice prefers short answers.", excerpt="Alice prefers short answers."),
        fact(PREFERENCE, kind="preference", source="chat"),
        fact("The staging password is Hunter22!", excerpt=DECISION)))
    report = extract_shared_facts(db, settings, instance, SESSION, model=http_model(settings))
    assert [r["content"] for r in memories(db, instance)] == [DECISION]
    assert report.rejected == 3
    assert report.details()["rejectReasons"] == {
        "credential": 1, "excerpt_not_found": 1, "unknown_field": 1}


# --- a failing model -------------------------------------------------------------------------


@pytest.mark.parametrize("script", [
    {"status": 500, "json": {"error": {"message": "upstream down"}}},
    {"chat": "not json"},
], ids=["http-error", "malformed"])
def test_a_failed_model_call_leaves_the_run_pending_for_a_retry(
        db, instance, module_database_url, openai_server, script):
    settings = http_settings(module_database_url, openai_server.base_url)
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    add_run(db, instance, SESSION, PRIVATE_RUN, user_id="alice")
    if "chat" in script:
        openai_server.script_chat(content=script["chat"])
    else:
        openai_server.script("chat/completions", **script)
    model = http_model(settings)
    report = extract_shared_facts(db, settings, instance, SESSION, model=model)
    assert (report.outcome, report.runs_failed, report.runs_done) == ("failed", 1, 0)
    assert report.reason.startswith("model_") and report.error
    assert run_states(db, instance, SESSION) == ["pending", "pending"]
    assert memories(db, instance) == []
    # The next pass, with the provider back, does the work.
    openai_server.script_chat(content=answer(fact(DECISION, kind="decision")))
    openai_server.script_chat(content=answer())
    retried = extract_shared_facts(db, settings, instance, SESSION, model=model)
    assert (retried.outcome, retried.runs_done) == ("completed", 2)
    assert [r["content"] for r in memories(db, instance)] == [DECISION]


def test_an_unreachable_model_fails_without_touching_the_runs(db, instance,
                                                              module_database_url):
    settings = offline_settings(module_database_url, maintenance_model="gpt-unreachable")
    add_run(db, instance, SESSION, ALICE_RUN, user_id="alice")
    report = extract_shared_facts(db, settings, instance, SESSION)
    assert (report.outcome, report.reason) == ("failed", "model_unavailable")
    assert run_states(db, instance, SESSION) == ["pending"]


def test_a_private_request_without_a_user_is_not_written_at_all(db, settings, instance):
    add_run(db, instance, "slack:C7", PRIVATE_RUN + ALICE_RUN,
            channel_thread_key="slack:C7/3.0", channel_type="slack")
    report = extract_shared_facts(db, settings, instance, "slack:C7")
    assert PRIVATE not in {r["content"] for r in memories(db, instance)}
    assert report.details()["rejectReasons"] == {"private_without_user": 1}
    assert run_states(db, instance, "slack:C7") == ["done"]
