"""/api/v1/sessions over real HTTP (the app in the test client) and the real database:
appending turn items (idempotent, numbered, per the trust model), completing runs, and
reading back with grep / describe / expand. Every refusal is a specific 4xx in the one error
shape and leaves every row count unchanged.

The tests share one database and one app (module scope) and keep apart by user names and
session keys of their own."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from starlette.testclient import TestClient

from memory_platform.features.memories.sharing import set_share_with_team
from memory_platform.features.sessions.assembly import replace_messages
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from tests.api.conftest import (
    ALL_SCOPES,
    READ,
    WRITE,
    WRITTEN_TABLES,
    add_member,
    assert_error,
    bearer,
    key_maker,
    make_settings,
    open_client,
)
from tests.sessions.test_reads import add_summary

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
SESSION_TABLES = ("agent_context_messages", "agent_context_items", "agent_session_runs",
                  "agent_session_state", "agent_session_participants",
                  "agent_context_summaries")
MAX_ITEMS, MAX_CHARS, APPEND_BYTES = 20, 5000, 200_000


@pytest.fixture(scope="module")
def url(shared_database_url: str) -> str:
    return shared_database_url


@pytest.fixture(scope="module")
def api(url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(url, tmp_path_factory.mktemp("state"),
                             session_append_max_items=MAX_ITEMS,
                             session_item_max_chars=MAX_CHARS,
                             session_append_max_body_bytes=APPEND_BYTES)
    assert settings.api_max_body_bytes < APPEND_BYTES
    with open_client(settings) as client:
        yield client


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def user_key(url: str) -> Callable[..., dict[str, str]]:
    make = key_maker(url)
    return lambda user, scopes=ALL_SCOPES: bearer(make(user, tuple(scopes)))


@pytest.fixture(scope="module")
def runtime(url: str) -> dict[str, str]:
    return bearer(key_maker(url)(None, (READ, WRITE), runtime=True))


def counts(url: str) -> dict[str, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {table: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                    sql.Identifier(table))).fetchone()[0]
                for table in (*WRITTEN_TABLES, *SESSION_TABLES)}


def items_path(session: str) -> str:
    return f"/api/v1/sessions/{session}/items"


def say(content: str, role: str = "user", **fields: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **fields}


def append(api: TestClient, headers: dict[str, str], session: str, *items: dict[str, Any],
           expect: int = 201, **body: Any) -> dict[str, Any]:
    response = api.post(items_path(session), json={"items": list(items), **body},
                        headers=headers)
    assert response.status_code == expect, response.text
    return response.json()


def grep(api: TestClient, headers: dict[str, str], pattern: str,
         **params: Any) -> list[dict[str, Any]]:
    response = api.get("/api/v1/sessions/grep", params={"pattern": pattern, **params},
                       headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["results"]


@pytest.fixture
def refused(api: TestClient, url: str) -> Callable[..., dict[str, Any]]:
    """``refused(method, path, status, code, **request)``: the error object; no row of any
    table a write touches changed."""

    def check(method: str, path: str, status: int, code: str, **request: Any) -> dict:
        before = counts(url)
        error = assert_error(api.request(method, path, **request), status, code)
        assert counts(url) == before
        return error

    return check


# --- appending -------------------------------------------------------------------------------
def test_a_single_item_and_a_batch_are_appended_in_order(api, user_key, tag):
    alice = user_key(f"alice-{tag}")
    session = f"agent:main:{tag}3f2a"
    single = append(api, alice, session, say("Our release train leaves every second Tuesday.",
                                             clientItemId="m-1",
                                             occurredAt="2026-11-30T09:12:00+01:00"))
    assert single["sessionKey"] == session and single["runStatus"] == "completed"
    assert (single["appended"], single["duplicates"], single["runIndex"]) == (1, 0, 0)
    [item] = single["items"]
    assert single["runId"] == "append:" + item["id"].removeprefix("message:")
    assert item["id"].startswith("message:") and item["seq"] == 0
    assert (item["clientItemId"], item["duplicate"]) == ("m-1", False)

    batch = append(api, alice, session,
                   say("Noted:\n- every second Tuesday\n\t(train)", "assistant"),
                   say('{"ok": true}', "tool",
                       metadata={"tool": "calendar.lookup", "toolCallId": "call-7",
                                 "attachments": [{"name": "plan.pdf", "mediaType":
                                                  "application/pdf", "sizeBytes": 2048,
                                                  "uri": "s3://bucket/plan.pdf"}]}),
                   runId="run-42")
    assert [i["seq"] for i in batch["items"]] == [1, 2]
    assert (batch["runId"], batch["runIndex"], batch["runStatus"]) == ("run-42", 1, "open")
    node = api.get(f"/api/v1/sessions/nodes/{batch['items'][1]['id']}", headers=alice).json()
    assert node["metadata"]["attachments"][0]["mediaType"] == "application/pdf"
    assert node["trust"] == "untrusted-data" and node["runId"] == "run-42"
    first = api.get(f"/api/v1/sessions/nodes/{item['id']}", headers=alice).json()
    assert first["occurredAt"] == "2026-11-30T08:12:00+00:00"
    text = api.get(f"/api/v1/sessions/nodes/{batch['items'][0]['id']}", headers=alice).json()
    assert text["content"] == "Noted:\n- every second Tuesday\n\t(train)"


def test_a_repeated_client_item_id_is_one_row_answered_200(api, user_key, url, tag):
    alice = user_key(f"alice-{tag}")
    session = f"s-{tag}"
    first = append(api, alice, session, say("remember the blue door", clientItemId="c-1"))
    before = counts(url)
    again = append(api, alice, session, say("remember the blue door", clientItemId="c-1"),
                   expect=200)
    assert (again["appended"], again["duplicates"]) == (0, 1)
    assert again["items"] == [{**first["items"][0], "duplicate": True}]
    assert again["runId"] == first["runId"]
    assert counts(url) == before


def test_session_keys_with_colons_and_slashes_work_in_the_path(api, user_key, tag):
    alice = user_key(f"alice-{tag}")
    for session in (f"agent:main:{tag}:x", f"team/{tag}:room"):
        path = f"/api/v1/sessions/{session.replace('/', '%2F')}/items"
        response = api.post(path, json={"items": [say(f"hello {tag}")]}, headers=alice)
        assert response.status_code == 201, response.text
        assert response.json()["sessionKey"] == session
        hits = grep(api, alice, f"hello {tag}", sessionKey=session)
        assert [h["sessionKey"] for h in hits] == [session]


def test_concurrent_appends_through_the_api_number_without_gaps(api, user_key, url, tag):
    alice = user_key(f"alice-{tag}")
    session = f"busy-{tag}"
    append(api, alice, session, say("start"))  # the session is alice's before the race
    failures: list[str] = []

    def writer(name: str) -> None:
        for n in range(8):
            response = api.post(items_path(session), json={"items": [
                say(f"{name}{n}a"), say(f"{name}{n}b", "assistant")]}, headers=alice)
            if response.status_code != 201:
                failures.append(response.text)

    threads = [threading.Thread(target=writer, args=(name,)) for name in "xy"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with psycopg.connect(url, autocommit=True) as conn:
        seqs = [r[0] for r in conn.execute(
            "SELECT seq FROM agent_context_messages WHERE session_key = %s ORDER BY seq",
            (session,))]
        places = [r[0] for r in conn.execute(
            "SELECT position FROM agent_context_items WHERE session_key = %s ORDER BY position",
            (session,))]
        runs = [r[0] for r in conn.execute(
            "SELECT run_index FROM agent_session_runs WHERE session_key = %s ORDER BY 1",
            (session,))]
    assert seqs == places == list(range(33)) and runs == list(range(17))


def test_the_runtime_appends_for_two_users_of_a_room_session(api, runtime, user_key, url, tag):
    alice, bob = f"alice-{tag}", f"bob-{tag}"
    room, session = f"room:{tag}", f"room-session-{tag}"
    add_member(url, room, alice, bob)
    body = append(api, runtime, session,
                  say(f"Alice: the offsite is in Lisbon {tag}"),
                  say(f"Bob: Lisbon {tag} works for me", authorUserId=bob),
                  context={"userId": alice, "groupRoomId": room})
    assert body["appended"] == 2
    with psycopg.connect(url, autocommit=True) as conn:
        taking_part = conn.execute(
            "SELECT user_id, role FROM agent_session_participants WHERE session_key = %s"
            " ORDER BY user_id", (session,)).fetchall()
        authors = conn.execute(
            "SELECT user_id, channel_thread_key FROM agent_context_messages"
            " WHERE session_key = %s ORDER BY seq", (session,)).fetchall()
    assert taking_part == [(alice, "owner"), (bob, "participant")]
    assert authors == [(alice, room), (bob, room)]
    # Bob reads the whole room session (he takes part), and his key may name it.
    assert len(grep(api, user_key(bob), f"lisbon {tag}", sessionKey=session,
                    groupRoomId=room)) == 2
    assert len(grep(api, user_key(bob), f"lisbon {tag}", allSessions="true")) == 2
    # The runtime acting for bob sees the same; for a stranger nothing.
    assert len(grep(api, runtime, f"lisbon {tag}", allSessions="true", userId=bob)) == 2
    assert grep(api, runtime, f"lisbon {tag}", allSessions="true", userId=f"eve-{tag}") == []


def test_a_user_key_naming_another_users_session_is_403_and_writes_nothing(
        api, user_key, refused, tag):
    alice, mallory = user_key(f"alice-{tag}"), user_key(f"mallory-{tag}")
    session = f"alice-only-{tag}"
    append(api, alice, session, say(f"private plan {tag}"))
    error = refused("POST", items_path(session), 403, "foreign_session", headers=mallory,
                    json={"items": [say("let me in")]})
    assert error["details"] == {"field": "sessionKey"}
    refused("POST", f"/api/v1/sessions/{session}/runs/any/complete", 403, "foreign_session",
            headers=mallory, json={})
    refused("GET", "/api/v1/sessions/grep", 403, "foreign_session", headers=mallory,
            params={"pattern": f"private plan {tag}", "sessionKey": session})
    refused("POST", items_path(f"other-{tag}"), 403, "foreign_author", headers=mallory,
            json={"items": [say("as alice", authorUserId=f"alice-{tag}")]})


def test_an_appended_item_is_found_at_once_by_its_owner_and_never_by_another_user(
        api, user_key, tag):
    alice, bob = user_key(f"alice-{tag}"), user_key(f"bob-{tag}")
    session = f"agent:main:{tag}"
    text = f"The quarterly audit {tag} moves to the Zurich office in March."
    [item] = append(api, alice, session, say(text))["items"]

    found = api.post("/api/v1/context/search",
                     json={"query": f"quarterly audit {tag} Zurich",
                           "context": {"sessionKey": session}}, headers=alice)
    assert found.status_code == 200, found.text
    hits = {r["id"]: r for r in found.json()["results"]}
    assert hits[item["id"]]["trust"] == "untrusted-data"
    assert hits[item["id"]]["content"] == text
    [hit] = grep(api, alice, f"AUDIT {tag}", sessionKey=session)
    assert hit["id"] == item["id"] and hit["trust"] == "untrusted-data"
    assert hit["snippet"] == text and hit["seq"] == 0 and hit["role"] == "user"

    assert grep(api, bob, f"audit {tag}", allSessions="true") == []
    other = api.post("/api/v1/context/search", json={"query": f"quarterly audit {tag} Zurich"},
                     headers=bob)
    assert other.status_code == 200 and item["id"] not in other.text
    assert_error(api.get(f"/api/v1/sessions/nodes/{item['id']}", headers=bob), 404,
                 "not_found")


def test_user_less_channel_items_are_read_only_by_channel_members(api, runtime, user_key,
                                                                  url, tag):
    alice, bob = f"alice-{tag}", f"bob-{tag}"
    channel = f"C{tag}/1700000000.1"
    add_member(url, channel, alice)
    [item] = append(api, runtime, f"slack:{tag}",
                    say(f"incident {tag} resolved by rollback", "system"),
                    context={"channelThreadKey": channel})["items"]
    hits = grep(api, user_key(alice), f"incident {tag}", allSessions="true",
                channelThreadKey=channel)
    assert [h["id"] for h in hits] == [item["id"]] and hits[0]["userId"] is None
    assert grep(api, user_key(alice), f"incident {tag}", allSessions="true") == []
    assert grep(api, user_key(bob), f"incident {tag}", allSessions="true") == []
    assert_error(api.get("/api/v1/sessions/grep", headers=user_key(bob),
                         params={"pattern": f"incident {tag}", "allSessions": "true",
                                 "channelThreadKey": channel}), 403, "not_a_member")


def test_grep_matches_percent_and_underscore_literally(api, user_key, tag):
    alice = user_key(f"alice-{tag}")
    session = f"s-{tag}"
    ids = [i["id"] for i in append(api, alice, session, say(f"{tag} is 100% done"),
                                   say(f"{tag} is 1000 done"), say(f"{tag} max_conn"),
                                   say(f"{tag} maxXconn"))["items"]]
    assert [h["id"] for h in grep(api, alice, "0% d", sessionKey=session)] == [ids[0]]
    assert [h["id"] for h in grep(api, alice, "x_c", sessionKey=session)] == [ids[2]]
    error = assert_error(api.get("/api/v1/sessions/grep", headers=alice,
                                 params={"pattern": "ab", "sessionKey": session}),
                         400, "pattern_too_short")
    assert "trigram" in error["message"]
    assert_error(api.get("/api/v1/sessions/grep", headers=alice, params={"pattern": "abc"}),
                 400, "session_required")
    assert_error(api.get("/api/v1/sessions/grep", headers=alice,
                         params={"pattern": "abc", "allSessions": "true", "roles": "owner"}),
                 400, "invalid_role")


def test_grep_pages_with_its_cursor(api, user_key, tag):
    alice = user_key(f"alice-{tag}")
    ids = [i["id"] for i in append(api, alice, f"s-{tag}",
                                   *(say(f"ticket {tag}-{n}") for n in range(7)))["items"]]
    seen, before = [], None
    for _ in range(5):
        params = {"pattern": f"ticket {tag}", "allSessions": "true", "limit": 3}
        if before:
            params["before"] = before
        page = api.get("/api/v1/sessions/grep", params=params, headers=alice).json()
        seen += [h["id"] for h in page["results"]]
        before = page["nextBefore"]
        if before is None:
            break
    assert seen == list(reversed(ids))


# --- describe / expand -----------------------------------------------------------------------
def test_describe_and_expand_reach_every_raw_item_under_summaries(api, user_key, url, tag):
    alice, bob = user_key(f"alice-{tag}"), user_key(f"bob-{tag}")
    session = f"long-{tag}"
    ids = [i["id"] for i in append(api, alice, session,
                                   *(say(f"turn {n}") for n in range(9)))["items"]]
    with psycopg.connect(url, autocommit=True) as conn:
        leaves = [add_summary(conn, "default", session, f"leaf {k}",
                              messages=ids[3 * k:3 * k + 3], user_id=f"alice-{tag}")
                  for k in range(3)]
        root = add_summary(conn, "default", session, "everything", children=leaves,
                           user_id=f"alice-{tag}")
    node = api.get(f"/api/v1/sessions/nodes/{root}", headers=alice)
    assert node.status_code == 200, node.text
    body = node.json()
    assert (body["kind"], body["summaryKind"], body["depth"], body["firstSeq"],
            body["lastSeq"], body["childCount"]) == ("summary", "condensed", 1, 0, 8, 3)
    assert body["children"] == leaves and body["trust"] == "untrusted-data"
    message = api.get(f"/api/v1/sessions/nodes/{ids[4]}", headers=alice).json()
    assert [s["id"] for s in message["summaries"]] == [leaves[1], root]

    seen, after = [], None
    for _ in range(6):
        params = {"limit": 4, **({"afterSeq": after} if after is not None else {})}
        page = api.get(f"/api/v1/sessions/nodes/{root}/expand", params=params, headers=alice)
        assert page.status_code == 200, page.text
        data = page.json()
        assert [c["id"] for c in data["childSummaries"]] == leaves
        assert all(m["trust"] == "untrusted-data" for m in data["messages"])
        seen += [m["id"] for m in data["messages"]]
        after = data["nextAfterSeq"]
        if after is None:
            break
    assert seen == ids
    for path in (f"/api/v1/sessions/nodes/{root}", f"/api/v1/sessions/nodes/{root}/expand",
                 f"/api/v1/sessions/nodes/summary:{uuid.uuid4()}", "/api/v1/sessions/nodes/x"):
        assert_error(api.get(path, headers=bob), 404, "not_found")
    assert_error(api.get(f"/api/v1/sessions/nodes/{ids[0]}/expand", headers=alice), 400,
                 "not_a_summary")


# --- runs --------------------------------------------------------------------------------------
def test_completing_a_run_is_idempotent_and_closes_it(api, user_key, url, tag, refused):
    alice = user_key(f"alice-{tag}")
    session = f"runs-{tag}"
    append(api, alice, session, say("question"), say("answer", "assistant"), runId="r-1")
    path = f"/api/v1/sessions/{session}/runs/r-1/complete"
    done = api.post(path, json={"promptTokens": 1200, "contextBudgetTokens": 8000},
                    headers=alice)
    assert done.status_code == 200, done.text
    first = done.json()
    assert (first["sessionKey"], first["runId"], first["runIndex"], first["status"],
            first["alreadyCompleted"]) == (session, "r-1", 0, "completed", False)
    again = api.post(path, json={}, headers=alice).json()
    assert again["alreadyCompleted"] is True and again["completedAt"] == first["completedAt"]
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT prompt_tokens, context_budget_tokens, item_count"
                           " FROM agent_session_runs WHERE session_key = %s",
                           (session,)).fetchone()
        due = conn.execute("SELECT maintenance_requested_at FROM agent_session_state"
                           " WHERE session_key = %s", (session,)).fetchone()[0]
    assert row == (1200, 8000, 2) and due is not None
    refused("POST", items_path(session), 409, "run_completed", headers=alice,
            json={"items": [say("late")], "runId": "r-1"})
    refused("POST", f"/api/v1/sessions/{session}/runs/nope/complete", 404, "not_found",
            headers=alice, json={})
    refused("POST", path, 400, "validation_error", headers=alice,
            json={"contextBudgetTokens": 0})


# --- who wrote it: an agent's turns are not a person's statements ----------------------------
TEA = "I prefer tea over coffee."


@pytest.fixture(scope="module")
def agent_key(url: str) -> Callable[[str], dict[str, str]]:
    make = key_maker(url)
    return lambda user: bearer(make(user, (READ, WRITE), agent=True))


def run_flags(url: str, session: str) -> dict[str, bool]:
    with psycopg.connect(url, autocommit=True) as conn:
        return dict(conn.execute("SELECT run_id, agent_written FROM agent_session_runs"
                                 " WHERE session_key = %s", (session,)).fetchall())


def shared_facts(url: str, data_dir: Path, session: str) -> dict[str, tuple[str, str, str]]:
    """Run the shared-fact pass of ``session`` (offline model) as maintenance does; its facts
    with (trust class, assertion status, review state)."""
    settings = make_settings(url, data_dir, maintenance_default_model="extractive",
                             maintenance_model=None)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        report = extract_shared_facts(conn, settings, "default", session)
        assert report.outcome == "completed", report
        rows = conn.execute(
            "SELECT m.content, s.trust_class, a.status, a.review_state FROM agent_memories m"
            "  JOIN agent_memory_sources s ON s.id = m.source_id"
            "  JOIN agent_memory_assertions a ON a.id = m.assertion_id"
            " WHERE m.session_key = %s AND m.source_type = 'fact'", (session,)).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_an_agent_keys_user_turn_waits_for_review_and_a_user_keys_is_the_persons_word(
        api, user_key, agent_key, url, tag, tmp_path):
    by_agent, by_person = f"agent:main:{tag}/agent", f"agent:main:{tag}/person"
    # Both keep their facts private (with the team default the two same-text facts would be
    # one team assertion, first stated by the agent: not what this test is about).
    with psycopg.connect(url) as conn:
        for user in (f"alice-{tag}", f"bob-{tag}"):
            set_share_with_team(conn, "default", user, False, changed_by="test")
        conn.commit()
    agent = append(api, agent_key(f"alice-{tag}"), by_agent, say(TEA))
    person = append(api, user_key(f"bob-{tag}"), by_person, say(TEA))
    assert run_flags(url, by_agent) == {agent["runId"]: True}
    assert run_flags(url, by_person) == {person["runId"]: False}
    assert shared_facts(url, tmp_path, by_agent) == {
        TEA: ("assistant_inference", "candidate", "pending")}
    assert shared_facts(url, tmp_path, by_person) == {
        TEA: ("human_direct", "active", "policy_approved")}


def test_the_agent_writer_header_marks_the_run_and_the_mark_stays(api, user_key, runtime, url,
                                                                  tag, refused, tmp_path):
    alice = user_key(f"alice-{tag}")
    session = f"agent:main:{tag}/header"
    append(api, alice, session, say("Can you find a slot for the review?"), runId="r-1")
    assert run_flags(url, session) == {"r-1": False}
    append(api, {**alice, "X-Memory-Writer": "agent"}, session,
           say("I booked the review for Friday at 14:00.", "assistant"), runId="r-1")
    append(api, alice, session, say(TEA), runId="r-1")  # the person's key, later
    assert run_flags(url, session) == {"r-1": True}
    assert api.post(f"/api/v1/sessions/{session}/runs/r-1/complete", json={},
                    headers=alice).status_code == 200
    assert shared_facts(url, tmp_path, session) == {
        TEA: ("assistant_inference", "candidate", "pending")}

    # The runtime's marked append is the agent's too; the header only lowers trust.
    other = f"agent:main:{tag}/runtime"
    marked = append(api, {**runtime, "X-Memory-Writer": " Agent "}, other, say(TEA),
                    context={"userId": f"carol-{tag}"})
    assert run_flags(url, other) == {marked["runId"]: True}
    refused("POST", items_path(other), 400, "validation_error",
            headers={**alice, "X-Memory-Writer": "human"}, json={"items": [say("x")]})
    refused("POST", items_path(other), 400, "validation_error",
            headers={**runtime, "X-Memory-Writer": "user"},
            json={"items": [say("x")], "context": {"userId": f"carol-{tag}"}})


# --- bad input: a specific 4xx, nothing written ----------------------------------------------
def _raw(body: bytes) -> dict[str, Any]:
    return {"content": body, "headers": {"Content-Type": "application/json"}}


BAD_BODIES = [
    ("malformed", _raw(b'{"items": [ '), 400, "malformed_json"),
    ("not-an-object", _raw(b'[{"role": "user"}]'), 400, "malformed_json"),
    ("wrong-type", {"json": {"items": [say(5)]}}, 400, "validation_error"),
    ("items-not-a-list", {"json": {"items": say("x")}}, 400, "validation_error"),
    ("unknown-item-field", {"json": {"items": [say("x", mood="happy")]}}, 400,
     "validation_error"),
    ("unknown-field", {"json": {"items": [say("x")], "sessionKey": "s"}}, 400,
     "validation_error"),
    ("unknown-metadata-field", {"json": {"items": [say("x", metadata={"secret": "y"})]}}, 400,
     "validation_error"),
    ("no-items", {"json": {"items": []}}, 400, "validation_error"),
    ("too-many-items", {"json": {"items": [say(f"n{n}") for n in range(MAX_ITEMS + 1)]}},
     400, "too_many_items"),
    ("oversized-item", {"json": {"items": [say("x" * (MAX_CHARS + 1))]}}, 400,
     "item_too_large"),
    ("oversized-body", {"json": {"items": [say("x" * 1000, clientItemId=f"b{n}")
                                           for n in range(MAX_ITEMS)],
                                 "runId": "y" * 200, "context": {"channelType": "z" * 60},
                                 "pad": "p" * APPEND_BYTES}}, 413, "body_too_large"),
    ("control-character", {"json": {"items": [say("ring \x07 ring")]}}, 400,
     "invalid_characters"),
    ("nul", {"json": {"items": [say("a\x00b")]}}, 400, "invalid_characters"),
    ("credential", {"json": {"items": [say("a"), say("b"), say("c"),
                                       say(f"the key is {SECRET}")]}}, 422,
     "credential_detected"),
    ("credential-in-metadata", {"json": {"items": [say("x", metadata={"attachments": [
        {"name": "creds", "uri": "https://admin:hunter22@example.com/"}]})]}}, 422,
     "credential_detected"),
    ("credential-in-client-id", {"json": {"items": [say("x", clientItemId=SECRET)]}}, 422,
     "credential_detected"),
    ("naive-occurred-at", {"json": {"items": [say("x", occurredAt="2026-01-01T09:00:00")]}},
     400, "validation_error"),
    ("future-occurred-at", {"json": {"items": [say("x", occurredAt="2999-01-01T09:00:00Z")]}},
     400, "occurred_at_in_future"),
    ("bad-role", {"json": {"items": [say("x", "developer")]}}, 400, "validation_error"),
    ("duplicate-client-id", {"json": {"items": [say("a", clientItemId="k"),
                                                say("b", clientItemId="k")]}}, 400,
     "duplicate_client_item_id"),
    ("session-mismatch", {"json": {"items": [say("x")], "context": {"sessionKey": "other"}}},
     400, "session_key_mismatch"),
    ("too-many-attachments", {"json": {"items": [say("x", metadata={"attachments": [
        {"name": f"f{n}"} for n in range(33)]})]}}, 400, "validation_error"),
]


@pytest.mark.parametrize(("request_", "status", "code"), [case[1:] for case in BAD_BODIES],
                         ids=[case[0] for case in BAD_BODIES])
def test_a_bad_append_is_a_specific_4xx_and_writes_nothing(refused, user_key, tag, request_,
                                                           status, code):
    headers = user_key(f"alice-{tag}")
    request_ = {**request_, "headers": {**headers, **request_.get("headers", {})}}
    error = refused("POST", items_path(f"agent:main:{tag}"), status, code, **request_)
    if code == "credential_detected" and "items" in str(request_.get("json", "")):
        assert error["details"]["field"].startswith("items[")
    if status == 413:
        assert error["details"] == {"limit": APPEND_BYTES}


def test_the_credential_refusal_names_the_item(refused, user_key, tag):
    error = refused("POST", items_path(f"s-{tag}"), 422, "credential_detected",
                    headers=user_key(f"alice-{tag}"),
                    json={"items": [say("a"), say("b"), say("c"), say(f"use {SECRET}")]})
    assert error["details"]["field"] == "items[3].content"


def test_the_append_limit_is_its_own_other_routes_keep_theirs(api, user_key, tag):
    alice = user_key(f"alice-{tag}")
    big = [say("y" * 4000) for _ in range(MAX_ITEMS)]  # ~80 KB: over api_max_body_bytes
    body = append(api, alice, f"big-{tag}", *big, *big[:10], expect=400)
    assert body["error"]["code"] == "too_many_items"  # read whole, then refused
    assert append(api, alice, f"big-{tag}", *big)["appended"] == MAX_ITEMS
    response = api.post("/api/v1/memory", json={"content": "z" * 70_000}, headers=alice)
    assert_error(response, 413, "body_too_large")


@pytest.mark.parametrize(("session", "status", "code"), [
    ("a%01b", 400, "invalid_characters"),
    ("a%E2%80%8Bb", 400, "invalid_characters"),
    ("x" * 201, 400, "invalid_path_key"),
    ("%20%20", 400, "invalid_path_key"),
    ("", 400, "invalid_path_key"),
    (SECRET, 422, "credential_detected"),
], ids=["control", "zero-width", "too-long", "blank", "empty", "credential"])
def test_a_hostile_session_key_in_the_path_is_refused(refused, user_key, tag, session, status,
                                                      code):
    headers = user_key(f"alice-{tag}")
    refused("POST", f"/api/v1/sessions/{session}/items", status, code, headers=headers,
            json={"items": [say("x")]})
    refused("POST", f"/api/v1/sessions/{session}/runs/r/complete", status, code,
            headers=headers, json={})


def test_a_hostile_run_id_in_the_path_is_refused(refused, user_key, tag):
    refused("POST", f"/api/v1/sessions/s-{tag}/runs/r%09x/complete", 400, "invalid_characters",
            headers=user_key(f"alice-{tag}"), json={})


def test_scopes_writes_need_write_and_reads_need_read(refused, user_key, tag):
    reader, writer = user_key(f"r-{tag}", (READ,)), user_key(f"w-{tag}", (WRITE,))
    refused("POST", items_path(f"s-{tag}"), 403, "missing_scope", headers=reader,
            json={"items": [say("x")]})
    refused("GET", "/api/v1/sessions/grep", 403, "missing_scope", headers=writer,
            params={"pattern": "abc", "allSessions": "true"})
    refused("GET", f"/api/v1/sessions/nodes/summary:{uuid.uuid4()}", 401, "unauthorized")


# --- replay ----------------------------------------------------------------------------------
def test_a_replay_is_the_latest_summary_then_the_newest_turns_within_the_budget(
        api, user_key, runtime, url, tag):
    """Issue 32.3: what a runtime sends the model: the summary standing for the compacted
    past, then the newest turns that fit, in order; for the session's participants and the
    runtime only."""
    session = f"web:replay-{tag}"
    alice = user_key(f"alice-{tag}")
    turns = [say(f"Turn {n}: " + "we talk about the release plan at length. " * 4)
             for n in range(8)]
    body = append(api, alice, session, *turns)
    first_four = [item["id"] for item in body["items"][:4]]
    with psycopg.connect(url, autocommit=True) as conn:
        summary = add_summary(conn, "default", session,
                              "Summary: the first four turns planned the release.",
                              messages=first_four, user_id=f"alice-{tag}")
        replace_messages(conn, "default", session, first_seq=0, last_seq=3,
                         summary_id=uuid.UUID(summary.split(":")[1]))

    path = f"/api/v1/sessions/{session}/replay"
    whole = api.get(path, headers=alice).json()
    assert [s["id"] for s in whole["summaries"]] == [summary]
    assert [t["content"][:7] for t in whole["turns"]] == ["Turn 4:", "Turn 5:", "Turn 6:",
                                                          "Turn 7:"]
    assert whole["omittedTurns"] == 0 and whole["omittedSummaries"] == 0
    assert whole["tokens"] == sum(i["tokens"] for i in whole["summaries"] + whole["turns"])
    assert all(i["trust"] == "untrusted-data" for i in whole["summaries"] + whole["turns"])

    one_turn = whole["summaries"][0]["tokens"] + whole["turns"][-1]["tokens"]
    tight = api.get(path, headers=alice, params={"budgetTokens": max(64, one_turn)}).json()
    assert [t["content"][:7] for t in tight["turns"]] == ["Turn 7:"]
    assert tight["omittedTurns"] == 3 and tight["tokens"] <= max(64, one_turn)

    assert api.get(path, headers=runtime).status_code == 200       # the runtime
    assert_error(api.get(path, headers=user_key(f"mallory-{tag}")), 403)  # not a participant
    assert_error(api.get(path, headers=alice, params={"budgetTokens": 10}), 400)
    assert_error(api.get(path, headers=alice, params={"sessionKey": "other"}), 400)
