"""A session's items read back exactly and removed by their author (issue 33.3), over real
HTTP and the real database: ``GET /api/v1/sessions/{key}/items`` (the raw form kept as
written, paged from the newest or forward, THE history rule), ``DELETE .../items/last``
(pop the newest item of yours, refused once compacted) and ``DELETE .../items`` (clear
yours, with the summaries covering them and what was drawn from them; an otherwise empty
session goes entirely). Deletion really deletes: the rows, the derived memories, the quota.

The tests share one database and one app (module scope) and keep apart by user names and
session keys of their own."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg import sql
from starlette.testclient import TestClient

from memory_platform.features.sessions.compaction import compact_session
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from tests.api.conftest import (
    READ,
    WRITE,
    assert_error,
    bearer,
    key_maker,
    make_settings,
    open_client,
)
from tests.sessions.conversation import compaction_settings
from tests.sessions.test_reads import add_summary

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
RAW_MAX = 4096

# An agent framework's items (the OpenAI Agents SDK's shapes): text with line breaks and
# non-ASCII, content parts, a function call and its output, a reasoning item, numbers.
RAW_ITEMS = [
    {"role": "user", "content": "Hallo!\nWie spät ist es in Zürich?\tBitte kurz."},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text",
                                                     "text": "Look up the time."}]},
    {"type": "function_call", "call_id": "call_7", "name": "clock",
     "arguments": "{\"city\": \"Zürich\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_7", "output": "09:41"},
    {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Es ist 09:41.\n", "annotations": [],
                  "logprobs": [{"token": "Es", "logprob": -0.0001, "bytes": [69, 115]}]}]},
    {"role": "user", "content": [{"type": "input_text", "text": "Danke 🙏"}],
     "z": None, "a": 1.5e-7, "big": 12345678901234567890, "flag": False},
]


@pytest.fixture(scope="module")
def url(shared_database_url: str) -> str:
    return shared_database_url


@pytest.fixture(scope="module")
def api(url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = make_settings(url, tmp_path_factory.mktemp("state"),
                             session_item_raw_max_bytes=RAW_MAX)
    with open_client(settings) as client:
        yield client


@pytest.fixture
def tag() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def user_key(url: str) -> Callable[..., dict[str, str]]:
    make = key_maker(url)
    return lambda user, agent=False: bearer(make(user, (READ, WRITE), agent=agent))


@pytest.fixture(scope="module")
def runtime(url: str) -> dict[str, str]:
    return bearer(key_maker(url)(None, (READ, WRITE), runtime=True))


def path(session: str, tail: str = "items") -> str:
    return f"/api/v1/sessions/{session}/{tail}"


def append(api: TestClient, headers: dict[str, str], session: str, *items: dict[str, Any],
           expect: int = 201, **body: Any) -> dict[str, Any]:
    response = api.post(path(session), json={"items": list(items), **body}, headers=headers)
    assert response.status_code == expect, response.text
    return response.json()


def said(content: str, role: str = "user", **fields: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **fields}


def read(api: TestClient, headers: dict[str, str], session: str,
         **params: Any) -> dict[str, Any]:
    response = api.get(path(session), params=params, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def contents(page: dict[str, Any]) -> list[str]:
    return [i["content"] for i in page["items"]]


def query(url: str, statement: str | sql.Composed, *params: Any) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(statement, params).fetchall()


def count(url: str, table: str, session: str) -> int:
    return query(url, sql.SQL("SELECT count(*) FROM {} WHERE session_key = %s").format(
        sql.Identifier(table)), session)[0][0]


def usage(url: str, user: str) -> int:
    rows = query(url, "SELECT bytes FROM agent_storage_usage WHERE instance_key = 'default'"
               " AND user_id = %s", user)
    return rows[0][0] if rows else 0


# --- reading it back exactly -------------------------------------------------------------------
def test_raw_items_come_back_exactly_as_written_in_order(api, user_key, url, tag):
    alice, session = user_key(f"alice-{tag}"), f"chat:{tag}"
    items = [said(f"text {n}", "assistant" if n % 2 else "user", raw=raw,
                  clientItemId=f"c{n}") for n, raw in enumerate(RAW_ITEMS)]
    append(api, alice, session, *items, said("no raw form"))

    page = read(api, alice, session)
    assert [i["raw"] for i in page["items"]] == [*RAW_ITEMS, None]
    assert [list(i["raw"]) for i in page["items"][:-1]] == [list(r) for r in RAW_ITEMS]
    assert [i["seq"] for i in page["items"]] == list(range(len(RAW_ITEMS) + 1))
    first = page["items"][0]
    assert first["clientItemId"] == "c0" and first["userId"] == f"alice-{tag}"
    assert first["compacted"] is False and first["id"].startswith("message:")
    assert page["nextBeforeSeq"] is None and page["nextAfterSeq"] is None
    # Stored as the text it was given (json, not jsonb): key order and numbers as written.
    stored = query(url, "SELECT raw::text FROM agent_context_messages WHERE session_key = %s"
                 " ORDER BY seq", session)
    assert [json.loads(r[0]) for r in stored[:-1]] == RAW_ITEMS and stored[-1][0] is None
    assert '"big":12345678901234567890' in stored[-2][0]


def test_pages_are_in_order_newest_first_by_default_and_forward_with_after_seq(
        api, user_key, tag):
    alice, session = user_key(f"alice-{tag}"), f"chat:{tag}"
    append(api, alice, session, *[said(f"turn {n}") for n in range(7)])

    newest = read(api, alice, session, limit=3)
    assert contents(newest) == ["turn 4", "turn 5", "turn 6"]
    assert newest["nextBeforeSeq"] == 4 and newest["nextAfterSeq"] is None
    older = read(api, alice, session, limit=3, beforeSeq=newest["nextBeforeSeq"])
    assert contents(older) == ["turn 1", "turn 2", "turn 3"] and older["nextBeforeSeq"] == 1
    oldest = read(api, alice, session, limit=3, beforeSeq=1)
    assert contents(oldest) == ["turn 0"] and oldest["nextBeforeSeq"] is None

    forward, after = [], -1
    while after is not None:
        page = read(api, alice, session, limit=3, afterSeq=after)
        forward += contents(page)
        assert page["nextBeforeSeq"] is None
        after = page["nextAfterSeq"]
    assert forward == [f"turn {n}" for n in range(7)]
    assert_error(api.get(path(session), params={"afterSeq": 0, "beforeSeq": 5},
                         headers=alice), 400, "invalid_seq")
    assert_error(api.get(path(session), params={"limit": 201}, headers=alice), 400)


def test_only_participants_and_the_runtime_acting_for_one_read_the_items(
        api, user_key, runtime, tag):
    alice, bob, carol = (user_key(f"{n}-{tag}") for n in ("alice", "bob", "carol"))
    session = f"shared:{tag}"
    # The runtime records a conversation of alice and bob: both take part.
    append(api, runtime, session, said("from alice", authorUserId=f"alice-{tag}"),
           said("from bob", authorUserId=f"bob-{tag}"),
           context={"userId": f"alice-{tag}"})
    assert contents(read(api, alice, session)) == ["from alice", "from bob"]
    assert contents(read(api, bob, session)) == ["from alice", "from bob"]
    assert contents(read(api, runtime, session, userId=f"bob-{tag}")) == [
        "from alice", "from bob"]
    # Someone else's key is refused before anything is read; the runtime for nobody, or for
    # a user who takes no part, reads nobody's items.
    assert_error(api.get(path(session), headers=carol), 403, "foreign_session")
    assert read(api, runtime, session)["items"] == []
    assert read(api, runtime, session, userId=f"carol-{tag}")["items"] == []
    assert_error(api.get(path(session), params={"sessionKey": "other"}, headers=alice), 400,
                 "session_key_mismatch")


def test_a_raw_form_is_checked_like_the_content(api, user_key, url, tag):
    alice, session = user_key(f"alice-{tag}"), f"chat:{tag}"

    def refused(raw: Any, status: int, code: str) -> None:
        response = api.post(path(session), headers=alice,
                            json={"items": [said("text", raw=raw)]})
        assert_error(response, status, code)
        assert count(url, "agent_context_messages", session) == 0

    refused({"content": [{"text": f"my key is {SECRET}"}]}, 422, "credential_detected")
    refused({"arguments": {"password": "Sommer2024!"}}, 422, "credential_detected")
    refused({"content": "x" * RAW_MAX}, 400, "raw_too_large")
    refused({"content": [{"text": "bell \x07"}]}, 400, "invalid_characters")
    refused({"bad\nkey": "v"}, 400, "invalid_characters")
    refused(["not", "an", "object"], 400, "validation_error")
    # Line breaks and tabs anywhere below raw are text, in lists too.
    append(api, alice, session, said("ok", raw={"content": [{"text": "a\nb\tc"}]}))


def test_the_quota_counts_the_raw_form_and_a_removal_gives_it_back(api, user_key, url, tag):
    user = f"alice-{tag}"
    alice, session = user_key(user), f"chat:{tag}"
    raw = {"role": "user", "content": "Grüße"}
    append(api, alice, session, said("Grüße", raw=raw))
    stored = len("Grüße".encode()) + len(json.dumps(raw, ensure_ascii=False,
                                                    separators=(",", ":")).encode())
    assert usage(url, user) == stored
    assert api.delete(path(session, "items/last"), headers=alice).status_code == 200
    assert usage(url, user) == 0


# --- pop ----------------------------------------------------------------------------------------
def test_pop_removes_the_newest_item_of_yours_and_answers_it(api, user_key, url, tag):
    user = f"alice-{tag}"
    alice, session = user_key(user), f"chat:{tag}"
    append(api, alice, session, said("first", raw={"n": 1}), said("second", raw={"n": 2}),
           runId="run-1")

    popped = api.delete(path(session, "items/last"), headers=alice)
    assert popped.status_code == 200, popped.text
    body = popped.json()
    assert body["item"]["content"] == "second" and body["item"]["raw"] == {"n": 2}
    # The item, its place in the assembly and the turn it was recalled as (its memory, the
    # memory's chunk, its creation event and its words' count).
    assert body["sessionRemoved"] is False and body["removed"] == {
        "agent_context_messages": 1, "agent_context_items": 1, "agent_memories": 1,
        "agent_memory_chunks": 1, "agent_memory_events": 1, "agent_memory_lexemes": 1}
    assert contents(read(api, alice, session)) == ["first"]
    assert query(url, "SELECT item_count FROM agent_session_runs WHERE session_key = %s",
               session) == [(1,)]
    report = query(url, "SELECT subject_kind, total_removed FROM agent_memory_erasures"
                 " WHERE id = %s", body["erasureId"])
    assert report == [("session_items", 6)]
    # The report and the events name neither the person nor the session.
    assert query(url, "SELECT count(*) FROM agent_memory_erasures e WHERE to_jsonb(e)::text"
               " LIKE %s OR to_jsonb(e)::text LIKE %s", f"%{tag}%", f"%{session}%") == [(0,)]
    assert query(url, "SELECT count(*) FROM agent_memory_events WHERE erasure_id = %s",
               body["erasureId"]) == [(0,)]

    # Popping the last item leaves nothing of anyone: the session goes as if never used.
    last = api.delete(path(session, "items/last"), headers=alice).json()
    assert last["item"]["content"] == "first" and last["sessionRemoved"] is True
    for table in ("agent_context_messages", "agent_session_runs", "agent_session_state",
                  "agent_session_participants"):
        assert count(url, table, session) == 0, table
    assert_error(api.delete(path(session, "items/last"), headers=alice), 404, "no_items")
    again = append(api, alice, session, said("fresh start"))
    assert again["items"][0]["seq"] == 0


def test_pop_takes_what_was_drawn_from_the_item_with_it(api, user_key, url, tag, tmp_path):
    user = f"alice-{tag}"
    alice, session = user_key(user), f"chat:{tag}"
    append(api, alice, session, said("Hello there."))
    append(api, alice, session, said(f"Remember that my locker number is 4471{tag[:2]}."))
    settings = make_settings(url, tmp_path, maintenance_default_model="extractive",
                             maintenance_model=None)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        assert extract_shared_facts(conn, settings, "default", session).outcome == "completed"
    facts = query(url, "SELECT id FROM agent_memories WHERE session_key = %s"
                " AND metadata ? 'sourceMessageId' AND source_type = 'fact'", session)
    assert facts, "the shared-fact pass drew nothing from the turn"

    body = api.delete(path(session, "items/last"), headers=alice).json()
    assert "locker" in body["item"]["content"] and body["removed"]["agent_memories"] >= 1
    assert query(url, "SELECT count(*) FROM agent_memories WHERE id = ANY(%s)",
               [f[0] for f in facts]) == [(0,)]
    assert query(url, "SELECT count(*) FROM agent_memories WHERE content LIKE %s",
               f"%4471{tag[:2]}%") == [(0,)]
    assert contents(read(api, alice, session)) == ["Hello there."]


def test_pop_is_refused_for_a_compacted_item_for_an_agent_and_for_nobody(
        api, user_key, runtime, url, tag):
    user = f"alice-{tag}"
    alice, session = user_key(user), f"chat:{tag}"
    done = append(api, alice, session, said("summarised turn"))
    with psycopg.connect(url, autocommit=True) as conn:
        add_summary(conn, "default", session, "a summary", messages=[done["items"][0]["id"]],
                    user_id=user)
    assert read(api, alice, session)["items"][0]["compacted"] is True
    assert_error(api.delete(path(session, "items/last"), headers=alice), 409,
                 "item_compacted")
    assert_error(api.delete(path(session, "items/last"), headers=user_key(user, agent=True)),
                 403, "person_required")
    assert_error(api.delete(path(session, "items/last"), headers=runtime), 403,
                 "user_required")
    assert_error(api.delete(path(session, "items/last"), headers=user_key(f"bob-{tag}")),
                 403, "foreign_session")
    assert_error(api.delete(path(session), headers=user_key(f"bob-{tag}")), 403,
                 "foreign_session")
    assert count(url, "agent_context_messages", session) == 1


def test_the_runtime_pops_for_the_author_it_names(api, user_key, runtime, tag):
    session = f"shared:{tag}"
    append(api, runtime, session, said("alice speaks", authorUserId=f"alice-{tag}"),
           said("bob answers", authorUserId=f"bob-{tag}"),
           context={"userId": f"alice-{tag}"})
    popped = api.delete(path(session, "items/last"), headers=runtime,
                        params={"userId": f"alice-{tag}"})
    assert popped.json()["item"]["content"] == "alice speaks"   # hers, not the newest item
    assert contents(read(api, user_key(f"bob-{tag}"), session)) == ["bob answers"]


# --- clear --------------------------------------------------------------------------------------
def test_clear_removes_your_items_their_summaries_and_memories_and_keeps_the_others(
        api, user_key, runtime, url, tag):
    alice_id, bob_id = f"alice-{tag}", f"bob-{tag}"
    alice, bob, session = user_key(alice_id), user_key(bob_id), f"shared:{tag}"
    for n in range(8):
        append(api, runtime, session,
               said(f"Alice says sentence number {n} about the harbour project.",
                    authorUserId=alice_id),
               said(f"Bob replies to sentence {n} about the budget.", authorUserId=bob_id),
               context={"userId": alice_id})
    settings = compaction_settings(url)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        report = compact_session(conn, settings, "default", session, force=True)
    assert report.outcome == "completed", report
    summary_memories = query(url, "SELECT s.memory_id FROM agent_context_summaries s"
                           " WHERE s.session_key = %s AND s.memory_id IS NOT NULL", session)
    assert summary_memories and any(i["compacted"] for i in read(api, bob, session)["items"])

    cleared = api.delete(path(session), headers=alice)
    assert cleared.status_code == 200, cleared.text
    body = cleared.json()
    assert body["itemsRemoved"] == 8 and body["sessionRemoved"] is False
    assert body["removed"]["agent_context_summaries"] >= 1
    assert body["removed"]["agent_memories"] >= len(summary_memories)

    left = read(api, bob, session, limit=200)["items"]
    assert [i["userId"] for i in left] == [bob_id] * 8
    assert not any(i["compacted"] for i in left)       # the summaries over alice's turns went
    assert query(url, "SELECT count(*) FROM agent_context_summaries WHERE session_key = %s",
               session) == [(0,)]
    assert query(url, "SELECT count(*) FROM agent_memories WHERE id = ANY(%s)",
               [m[0] for m in summary_memories]) == [(0,)]
    assert query(url, "SELECT count(*) FROM agent_memories WHERE content LIKE %s",
               "%Alice says%") == [(0,)]
    # bob's turns stand in the assembly again, in order
    assembly = query(url, "SELECT m.seq FROM agent_context_items i JOIN agent_context_messages m"
                   " ON m.id = i.message_id WHERE i.session_key = %s ORDER BY i.position",
                   session)
    assert [r[0] for r in assembly] == [i["seq"] for i in left]
    compaction = query(url, "SELECT state_json -> 'compaction' ->> 'compactedThroughSeq'"
                     " FROM agent_session_state WHERE session_key = %s", session)[0][0]
    assert compaction is None or int(compaction) <= left[-1]["seq"]

    # Nothing of alice's is left to clear; once bob clears too, the session is gone.
    again = api.delete(path(session), headers=alice).json()
    assert (again["itemsRemoved"], again["erasureId"], again["sessionRemoved"]) == (0, None,
                                                                                      False)
    last = api.delete(path(session), headers=bob).json()
    assert last["itemsRemoved"] == 8 and last["sessionRemoved"] is True
    for table in ("agent_context_messages", "agent_context_items", "agent_session_runs",
                  "agent_session_state", "agent_session_participants",
                  "agent_session_maintenance_events"):
        assert count(url, table, session) == 0, table


def test_clearing_an_unused_session_changes_nothing(api, user_key, url, tag):
    body = api.delete(path(f"never:{tag}"), headers=user_key(f"alice-{tag}")).json()
    assert body == {"sessionKey": f"never:{tag}", "itemsRemoved": 0, "sessionRemoved": False,
                    "erasureId": None, "removed": {}, "totalRemoved": 0}
