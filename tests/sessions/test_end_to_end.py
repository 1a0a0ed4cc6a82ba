"""Conversations in, memory out, end to end (issue 13's "must show").

A realistic week of conversations is posted through the HTTP API by the agent runtime: a
direct session of alice, a team room of alice and bob, an unlinked Slack thread, and the
agent's own heartbeat session. Then the background work runs exactly as the Dagster job runs
it (``run_due_sessions``, the function its op calls), then Dreaming over the partitions, and
the results are read back through the API as each user would.

The maintenance model is the offline ``extractive`` one (the dev profile's default), so the
whole path runs without a provider.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.sessions.maintenance import run_due_sessions
from memory_platform.foundation.db.connection import connect
from memory_platform.foundation.settings import Settings
from tests.api.conftest import (
    READ,
    WRITE,
    add_member,
    assert_error,
    bearer,
    key_maker,
    make_settings,
    open_client,
)

INSTANCE = "default"
ALICE_SESSION = "web:alice:week-48"
ROOM, ROOM_SESSION = "room:team", "room:team:standup"
THREAD = "slack:C9:1701"
HEARTBEAT = "heartbeat:nightly"
START = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)

# Small talk around the facts: long enough that the recent runs pass the flush and
# compaction thresholds (about 18,000 transcript bytes over the last 8 runs).
SMALL_TALK = (
    "Thanks, that helps a lot. The weather in Hamburg was grey again this morning and the "
    "train was a little late, but the coffee at the office made up for it. We talked about "
    "the football results for a while and then went through the usual inbox. Nothing urgent "
    "came up, so I used the time to tidy my notes from last week and to read two articles "
    "about team rituals that someone had shared in the chat. ") * 4

ALICE_FACTS = [
    "I prefer phone calls before 10:00 in the morning.",
    "Our release train is every second Tuesday at 15:00.",
    "The customer Nordwind GmbH has 240 seats on the Enterprise plan.",
    "Ich bevorzuge Rückrufe am Vormittag, am liebsten vor 10 Uhr.",
]
ASSISTANT_CONFIRMATION = "I booked the design review for Friday at 14:00 in room Elbe."
PRIVATE_NOTE = "Privately: my dentist appointment is on 14 December at 08:30."


@pytest.fixture
def settings(database_url: str, tmp_path) -> Settings:
    return make_settings(database_url, tmp_path, maintenance_default_model="extractive",
                         maintenance_model=None, dream_min_inputs=2)


@pytest.fixture
def api(settings: Settings) -> Iterator[TestClient]:
    with open_client(settings) as client:
        yield client


@pytest.fixture
def keys(database_url: str) -> dict[str, dict[str, str]]:
    make = key_maker(database_url)
    return {"runtime": bearer(make(None, (READ, WRITE), runtime=True)),
            "alice": bearer(make("alice", (READ, WRITE))),
            "bob": bearer(make("bob", (READ, WRITE))),
            "carol": bearer(make("carol", (READ, WRITE)))}


def _turn(api: TestClient, headers: dict[str, str], session: str, context: dict[str, Any],
          run: int, user_text: str, assistant_text: str) -> None:
    """One completed run: the user's turn and the assistant's answer, with event times."""
    when = START + timedelta(hours=run)
    run_id = f"run-{session}-{run}"
    items = [
        {"role": "user", "content": user_text, "clientItemId": f"{run_id}-u",
         "occurredAt": when.isoformat()},
        {"role": "assistant", "content": assistant_text, "clientItemId": f"{run_id}-a",
         "occurredAt": (when + timedelta(seconds=20)).isoformat()},
    ]
    answer = api.post(f"/api/v1/sessions/{session}/items",
                      json={"items": items, "runId": run_id, "context": context},
                      headers=headers)
    assert answer.status_code == 201, answer.text
    done = api.post(f"/api/v1/sessions/{session}/runs/{run_id}/complete",
                    json={"context": context}, headers=headers)
    assert done.status_code == 200, done.text


def _post_the_week(api: TestClient, keys: dict[str, dict[str, str]]) -> None:
    runtime = keys["runtime"]
    alice = {"userId": "alice"}
    for run in range(10):
        fact = ALICE_FACTS[run] if run < len(ALICE_FACTS) else ""
        answer = ASSISTANT_CONFIRMATION if run == 5 else "Noted, thank you. " + SMALL_TALK
        _turn(api, runtime, ALICE_SESSION, alice, run, f"{fact} {SMALL_TALK}".strip(), answer)
    _turn(api, runtime, ALICE_SESSION, alice, 10, PRIVATE_NOTE,
          "Understood, I will keep that between us. " + SMALL_TALK)

    for run in range(9):
        speaker = "bob" if run % 2 else "alice"
        said = ("The analytics cluster runs on PostgreSQL 18 since November. " if run == 1
                else "") + SMALL_TALK
        _turn(api, runtime, ROOM_SESSION, {"userId": speaker, "groupRoomId": ROOM}, run,
              said, "Thanks for the update. " + SMALL_TALK)

    slack = {"channelThreadKey": THREAD, "channelType": "slack"}
    for run in range(3):
        _turn(api, runtime, THREAD, slack, run,
              "The Berlin office uses the Nordlicht VPN gateway since March 2026. " + SMALL_TALK,
              "Good to know.")
    for run in range(9):
        _turn(api, runtime, HEARTBEAT, {}, run,
              f"Heartbeat OK: 42 jobs processed, queue depth {run}. " + SMALL_TALK,
              "Status recorded. " + SMALL_TALK)


def _maintain(conn: psycopg.Connection, settings: Settings) -> list[Any]:
    """What the sensor and job do, until no session is due (bounded)."""
    passes = []
    for _ in range(10):
        batch = run_due_sessions(conn, settings)
        passes.extend(batch.passes)
        if not batch.passes:
            return passes
    raise AssertionError("sessions stayed due after ten maintenance runs")


def _memories(conn: psycopg.Connection, session: str, source_type: str) -> list[tuple]:
    return conn.execute(
        "SELECT content, visibility_scope, audience_key, user_id FROM agent_memories"
        " WHERE session_key = %s AND source_type = %s ORDER BY created_at",
        (session, source_type)).fetchall()


def _context_search(api: TestClient, headers: dict[str, str], query: str,
                    **context: Any) -> list[dict[str, Any]]:
    answer = api.post("/api/v1/context/search",
                      json={"query": query, "limit": 10, **({"context": context} if context
                                                            else {})},
                      headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def _grep(api: TestClient, headers: dict[str, str], pattern: str, **params: Any) -> list[dict]:
    answer = api.get("/api/v1/sessions/grep",
                     params={"pattern": pattern, "allSessions": "true", **params},
                     headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


def _expand_all(api: TestClient, headers: dict[str, str], summary_id: str,
                context: dict[str, str]) -> list[str]:
    """Every raw item under a summary, page by page."""
    seen: list[str] = []
    after: int | None = None
    while True:
        params = {"limit": 7, **context, **({"afterSeq": after} if after is not None else {})}
        page = api.get(f"/api/v1/sessions/nodes/{summary_id}/expand", params=params,
                       headers=headers)
        assert page.status_code == 200, page.text
        body = page.json()
        seen.extend(m["id"] for m in body["messages"])
        after = body["nextAfterSeq"]
        if after is None:
            return seen


def test_an_appended_item_is_found_by_its_owner_at_once_and_by_nobody_else(
        api: TestClient, keys: dict[str, dict[str, str]], database_url: str) -> None:
    phrase = f"Zebra-{uuid.uuid4().hex[:6]} quarterly numbers are due on Monday."
    answer = api.post(f"/api/v1/sessions/{ALICE_SESSION}/items",
                      json={"items": [{"role": "user", "content": phrase}]},
                      headers=keys["alice"])
    assert answer.status_code == 201, answer.text
    word = phrase.split()[0]

    found = _context_search(api, keys["alice"], f"{word} quarterly numbers",
                            sessionKey=ALICE_SESSION)
    item_id = answer.json()["items"][0]["id"]               # message:<uuid>
    # One result, the item, found as the turn it is recalled as.
    assert [(r["id"], r["foundBy"]) for r in found if r["content"] == phrase] == [
        (item_id, ["memories"])], found
    assert [hit["snippet"] for hit in _grep(api, keys["alice"], word)] == [phrase]
    recalled = api.get("/api/v1/memory", params={"query": f"{word} quarterly numbers"},
                       headers=keys["alice"]).json()["results"]
    assert [(r["id"], r["sourceType"]) for r in recalled if r["content"] == phrase] == [
        (item_id.removeprefix("message:"), "message")]

    assert _grep(api, keys["bob"], word) == []
    assert not any(phrase == r["content"] for r in _context_search(api, keys["bob"], word))
    assert not any(phrase == r["content"] for r in api.get(
        "/api/v1/memory", params={"query": word}, headers=keys["bob"]).json()["results"])
    refused = api.get("/api/v1/sessions/grep",
                      params={"pattern": word, "sessionKey": ALICE_SESSION},
                      headers=keys["bob"])
    assert_error(refused, 403, "foreign_session")
    appended = api.post(f"/api/v1/sessions/{ALICE_SESSION}/items",
                        json={"items": [{"role": "user", "content": "bob was here"}]},
                        headers=keys["bob"])
    assert_error(appended, 403, "foreign_session")
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM agent_context_messages"
                            " WHERE content = 'bob was here'").fetchone()[0] == 0


def test_a_week_of_conversations_becomes_cited_memory(
        api: TestClient, keys: dict[str, dict[str, str]], settings: Settings,
        database_url: str) -> None:
    add_member(database_url, ROOM, "alice", "bob")
    add_member(database_url, THREAD, "carol")
    with psycopg.connect(database_url) as conn:  # alice's profile: sharing on (the default)
        conn.execute("INSERT INTO agent_user_preferences (instance_key, user_id)"
                     " VALUES (%s, 'alice')", (INSTANCE,))
    _post_the_week(api, keys)

    with connect(settings, autocommit=True) as conn:  # pgvector registered, as in the job
        passes = _maintain(conn, settings)
        failed = [(p.session_key, o) for p in passes for o in p.operations
                  if o.outcome == "failed"]
        assert passes and not failed, failed
        assert _maintain(conn, settings) == []  # a second pass has nothing to do

        # Summaries of the long sessions, as memory rows Dreaming reads.
        for session in (ALICE_SESSION, ROOM_SESSION, HEARTBEAT):
            leaves = conn.execute(
                "SELECT count(*) FROM agent_context_summaries WHERE session_key = %s",
                (session,)).fetchone()[0]
            assert leaves >= 1, session
        summary_rows = _memories(conn, ALICE_SESSION, "summary")
        assert summary_rows and {r[3] for r in summary_rows} == {"alice"}
        assert _memories(conn, HEARTBEAT, "summary") == []  # automation chatter stays out

        # Flush rows: durable facts of the recent turns, the assistant's confirmation too.
        flushed = [r[0] for r in _memories(conn, ALICE_SESSION, "flush")]
        assert ASSISTANT_CONFIRMATION in flushed, flushed
        assert _memories(conn, HEARTBEAT, "flush") == []
        state = conn.execute("SELECT state_json FROM agent_session_state"
                             " WHERE session_key = %s", (HEARTBEAT,)).fetchone()[0]
        assert state["memoryFlush"]["lastSkipReason"] == "automation_session"

        # Shared facts, by the sharing rules: alice shares with the team (her profile's
        # default; without a readable profile a write stays private), the
        # private note stays hers, the room is the team's, the unlinked thread its channel's.
        facts = {r[0]: r for r in _memories(conn, ALICE_SESSION, "fact")}
        assert facts.get(ALICE_FACTS[1], ())[1:3] == ("team", INSTANCE), list(facts)
        private = [r for r in facts.values() if "dentist" in r[0]]
        assert private and private[0][1:3] == ("private", "alice")
        room = {r[0]: r for r in _memories(conn, ROOM_SESSION, "fact")}
        cluster = "The analytics cluster runs on PostgreSQL 18 since November."
        assert room[cluster][1:4] == ("team", INSTANCE, "bob")
        thread = _memories(conn, THREAD, "fact")
        assert thread and {r[1:3] for r in thread} == {("channel", THREAD)}
        assert _memories(conn, HEARTBEAT, "fact") == []

        # Metrics and audit: one event per operation and pass.
        events = dict(conn.execute(
            "SELECT event_type, count(*) FROM agent_session_maintenance_events"
            " GROUP BY event_type").fetchall())
        assert events.get("session.maintenance.history_compaction.completed", 0) >= 3
        assert events.get("session.maintenance.memory_flush.completed", 0) >= 1

        # A Dream over the team partition turns the episodic rows into cited assertions.
        dream = run_dream_partition(conn, settings, Partition(INSTANCE, "team", INSTANCE))
        assert dream.status in ("completed", "partial"), dream
        cited = conn.execute(
            "SELECT count(*) FROM agent_memory_assertions a"
            "  JOIN agent_memory_assertion_evidence e ON e.assertion_id = a.id"
            "  JOIN agent_memory_sources s ON s.id = e.source_id"
            "  JOIN agent_memories m ON m.id = s.memory_id"
            " WHERE a.origin = 'dream' AND m.source_type IN ('summary', 'flush', 'fact')"
            "   AND m.session_key IN (%s, %s)", (ALICE_SESSION, ROOM_SESSION)).fetchone()[0]
        assert cited >= 1

    # context_search finds the right items for each user, and only theirs.
    release = _context_search(api, keys["bob"], "When does the release train leave?")
    assert any("release train" in r["content"] for r in release[:3]), release
    assert not any("dentist" in r["content"]
                   for r in _context_search(api, keys["bob"], "dentist appointment"))
    dentist = _context_search(api, keys["alice"], "When is my dentist appointment?")
    assert any("dentist" in r["content"] for r in dentist[:3]), dentist
    vpn = _context_search(api, keys["carol"], "Which VPN gateway does Berlin use?",
                          channelThreadKey=THREAD)
    assert any("Nordlicht" in r["content"] for r in vpn[:3]), vpn
    assert not any("Nordlicht" in r["content"]
                   for r in _context_search(api, keys["alice"], "Nordlicht VPN gateway"))

    # memory_expand reaches every raw item: the summaries in the assembly expand to exactly
    # the compacted items, the rest are still raw in the assembly.
    with psycopg.connect(database_url, autocommit=True) as conn:
        for session, headers, context in (
                (ALICE_SESSION, keys["alice"], {"sessionKey": ALICE_SESSION}),
                (ROOM_SESSION, keys["bob"], {"sessionKey": ROOM_SESSION,
                                             "groupRoomId": ROOM})):
            every = {f"message:{r[0]}" for r in conn.execute(
                "SELECT id FROM agent_context_messages WHERE session_key = %s", (session,))}
            assembly = conn.execute(
                "SELECT item_kind, message_id, summary_id FROM agent_context_items"
                " WHERE session_key = %s ORDER BY position", (session,)).fetchall()
            assert any(kind == "summary" for kind, _, _ in assembly)
            reached = [f"message:{m}" for kind, m, _ in assembly if kind == "message"]
            for kind, _, summary in assembly:
                if kind == "summary":
                    reached += _expand_all(api, headers, f"summary:{summary}", context)
            assert sorted(reached) == sorted(every), session  # each exactly once

    # grep never returns another user's raw item.
    assert _grep(api, keys["alice"], "dentist")
    assert _grep(api, keys["bob"], "dentist") == []
    assert _grep(api, keys["carol"], "release train") == []
    assert _grep(api, keys["alice"], "Nordlicht") == []
    assert _grep(api, keys["carol"], "Nordlicht", channelThreadKey=THREAD)
    # bob reads his room and the user-less system transcript (instance-visible by the rule),
    # never alice's direct session.
    sessions = {hit["sessionKey"] for hit in _grep(api, keys["bob"], "Hamburg", limit=100)}
    assert ROOM_SESSION in sessions and ALICE_SESSION not in sessions, sessions
