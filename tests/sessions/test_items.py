"""Appending turn items and completing runs (memory_platform.features.sessions.items), against the
real database: numbering under the session lock, idempotency, runs, authors, and every
refusal changing nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memory_platform.features.sessions.items import TurnItem, append_items, complete_run
from memory_platform.features.sessions.runs import get_run
from memory_platform.foundation.errors import (
    AccessDenied,
    Conflict,
    CredentialDetected,
    InvalidInput,
    NotFound,
)
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
SESSION_TABLES = ("agent_context_messages", "agent_context_items", "agent_session_runs",
                  "agent_session_state", "agent_session_participants")


@pytest.fixture(scope="module")
def settings(module_database_url: str) -> Settings:
    return hash_embedding_settings(module_database_url, session_item_max_chars=1000,
                                   session_append_max_items=10,
                                   session_item_metadata_max_bytes=512)


def ctx_of(instance: str, user: str | None = "alice", session: str | None = "agent:main:s1",
           **fields: Any) -> AccessContext:
    return AccessContext(instance_key=instance, user_id=user, session_key=session, **fields)


def say(content: str, role: str = "user", **fields: Any) -> TurnItem:
    return TurnItem(role=role, content=content, **fields)


def counts(db: psycopg.Connection, instance: str) -> dict[str, Any]:
    found: dict[str, Any] = {
        table: db.execute(sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s").format(
            sql.Identifier(table)), (instance,)).fetchone()[0] for table in SESSION_TABLES}
    found["requested"] = db.execute(
        "SELECT array_agg(maintenance_requested_at ORDER BY session_key)"
        " FROM agent_session_state WHERE instance_key = %s", (instance,)).fetchone()[0]
    return found


def messages(db: psycopg.Connection, instance: str, session: str = "agent:main:s1") -> list:
    return db.execute(
        "SELECT seq, role, content, user_id, channel_thread_key, run_id, client_item_id,"
        "       token_count, occurred_at, metadata"
        "  FROM agent_context_messages WHERE instance_key = %s AND session_key = %s"
        " ORDER BY seq", (instance, session)).fetchall()


def positions(db: psycopg.Connection, instance: str, session: str = "agent:main:s1") -> list:
    return db.execute(
        "SELECT i.position, m.seq FROM agent_context_items i"
        "  JOIN agent_context_messages m ON m.id = i.message_id"
        " WHERE i.instance_key = %s AND i.session_key = %s ORDER BY i.position",
        (instance, session)).fetchall()


def run_row(db: psycopg.Connection, instance: str, run_id: str,
            session: str = "agent:main:s1") -> dict[str, Any]:
    row = db.execute(
        "SELECT run_index, status, item_count, transcript_bytes, user_id, group_room_id,"
        "       prompt_tokens, context_budget_tokens, completed_at"
        "  FROM agent_session_runs WHERE instance_key = %s AND session_key = %s AND run_id = %s",
        (instance, session, run_id)).fetchone()
    keys = ("run_index", "status", "item_count", "transcript_bytes", "user_id",
            "group_room_id", "prompt_tokens", "context_budget_tokens", "completed_at")
    return dict(zip(keys, row, strict=True)) if row else {}


def requested_at(db: psycopg.Connection, instance: str,
                 session: str = "agent:main:s1") -> datetime | None:
    row = db.execute("SELECT maintenance_requested_at FROM agent_session_state"
                     " WHERE instance_key = %s AND session_key = %s",
                     (instance, session)).fetchone()
    return row[0] if row else None


# --- appending -----------------------------------------------------------------------------
def test_an_append_without_a_run_is_a_completed_run_of_its_own(db, settings, instance):
    when = datetime(2026, 11, 30, 9, 12, tzinfo=timezone(timedelta(hours=1)))
    result = append_items(db, settings, ctx_of(instance), [
        say("Our release train leaves every second Tuesday.", occurred_at=when,
            client_item_id="m-1", metadata={"tool": "calendar.lookup"})])
    assert (result.appended, result.duplicates, result.run_status) == (1, 0, "completed")
    item = result.items[0]
    assert (item.seq, item.duplicate, item.client_item_id) == (0, False, "m-1")
    assert result.run_id == f"append:{item.id}" and result.run_index == 0
    [row] = messages(db, instance)
    assert row[:8] == (0, "user", "Our release train leaves every second Tuesday.", "alice",
                       None, result.run_id, "m-1", 12)
    assert row[8] == when and row[9] == {"tool": "calendar.lookup"}
    assert positions(db, instance) == [(0, 0)]
    run = run_row(db, instance, result.run_id)
    assert run["status"] == "completed" and run["completed_at"] is not None
    assert (run["item_count"], run["transcript_bytes"], run["user_id"]) == (1, 46, "alice")
    assert requested_at(db, instance) is not None
    owner = db.execute("SELECT user_id FROM agent_session_state WHERE instance_key = %s",
                       (instance,)).fetchone()[0]
    assert owner == "alice"


def test_a_batch_is_numbered_contiguously_after_what_the_session_holds(db, settings, instance):
    ctx = ctx_of(instance)
    append_items(db, settings, ctx, [say("first"), say("second", "assistant")])
    result = append_items(db, settings, ctx, [say(f"item {n}", "tool") for n in range(5)],
                          run_id="run-7")
    assert [i.seq for i in result.items] == [2, 3, 4, 5, 6]
    assert (result.run_id, result.run_index, result.run_status) == ("run-7", 1, "open")
    assert [seq for seq, *_ in messages(db, instance)] == list(range(7))
    assert positions(db, instance) == [(n, n) for n in range(7)]


def test_an_open_run_grows_until_completed_and_then_refuses_items(db, settings, instance):
    ctx = ctx_of(instance, group_room_id="room:team", channel_type="web")
    before = datetime.now(UTC)
    append_items(db, settings, ctx, [say("Grüße aus München")], run_id="r1")
    assert requested_at(db, instance) is None  # an open run asks for nothing yet
    append_items(db, settings, ctx, [say("ok", "assistant")], run_id="r1")
    run = run_row(db, instance, "r1")
    assert (run["status"], run["item_count"], run["group_room_id"]) == ("open", 2, "room:team")
    assert run["transcript_bytes"] == len("Grüße aus München".encode()) + 2

    done = complete_run(db, settings, ctx, "r1", prompt_tokens=900,
                        context_budget_tokens=8000)
    assert (done.status, done.already_completed, done.run_index) == ("completed", False, 0)
    run = run_row(db, instance, "r1")
    assert (run["prompt_tokens"], run["context_budget_tokens"]) == (900, 8000)
    first_request = requested_at(db, instance)
    assert first_request is not None and first_request >= before

    again = complete_run(db, settings, ctx, "r1", prompt_tokens=5)
    assert again.already_completed and again.completed_at == done.completed_at
    assert run_row(db, instance, "r1")["prompt_tokens"] == 900
    assert requested_at(db, instance) == first_request

    unchanged = counts(db, instance)
    with pytest.raises(Conflict) as refused:
        append_items(db, settings, ctx, [say("too late")], run_id="r1")
    assert refused.value.code == "run_completed"
    assert counts(db, instance) == unchanged


def test_completing_a_run_the_session_does_not_have_is_not_found(db, settings, instance):
    append_items(db, settings, ctx_of(instance, session="other"), [say("x")], run_id="r9")
    with pytest.raises(NotFound):
        complete_run(db, settings, ctx_of(instance), "r9")
    with pytest.raises(NotFound):
        complete_run(db, settings, ctx_of(instance, session="other"), "nope")
    assert run_row(db, instance, "r9", session="other")["status"] == "open"


def test_a_repeated_client_item_id_returns_the_stored_message_and_adds_nothing(
        db, settings, instance):
    ctx = ctx_of(instance)
    first = append_items(db, settings, ctx, [say("alpha", client_item_id="c-1"),
                                             say("beta", client_item_id="c-2")])
    unchanged = counts(db, instance)
    again = append_items(db, settings, ctx, [say("alpha", client_item_id="c-1"),
                                             say("beta", client_item_id="c-2")])
    assert (again.appended, again.duplicates) == (0, 2)
    assert [(i.id, i.seq, i.duplicate) for i in again.items] == \
        [(i.id, i.seq, True) for i in first.items]
    assert again.run_id == first.run_id and again.run_status == "completed"
    assert counts(db, instance) == unchanged  # no run, no maintenance request

    mixed = append_items(db, settings, ctx, [say("beta", client_item_id="c-2"),
                                             say("gamma", client_item_id="c-3"), say("delta")])
    assert [(i.seq, i.duplicate) for i in mixed.items] == [(1, True), (2, False), (3, False)]
    assert (mixed.appended, mixed.duplicates) == (2, 1)
    assert run_row(db, instance, mixed.run_id)["item_count"] == 2


def test_duplicates_of_a_completed_run_are_answered_not_refused(db, settings, instance):
    ctx = ctx_of(instance)
    append_items(db, settings, ctx, [say("one", client_item_id="x-1")], run_id="r")
    complete_run(db, settings, ctx, "r")
    retried = append_items(db, settings, ctx, [say("one", client_item_id="x-1")], run_id="r")
    assert (retried.appended, retried.duplicates, retried.run_status) == (0, 1, "completed")
    elsewhere = append_items(db, settings, ctx, [say("one", client_item_id="x-1")],
                             run_id="never-opened")
    assert (elsewhere.run_id, elsewhere.run_index, elsewhere.appended) == ("r", 0, 0)
    assert run_row(db, instance, "never-opened") == {}


def agent_written(db: psycopg.Connection, instance: str, run_id: str,
                  session: str = "agent:main:s1") -> bool:
    return db.execute("SELECT agent_written FROM agent_session_runs WHERE instance_key = %s"
                      " AND session_key = %s AND run_id = %s",
                      (instance, session, run_id)).fetchone()[0]


def test_an_agents_append_marks_its_run_and_the_mark_stays(db, settings, instance):
    ctx = ctx_of(instance)
    plain = append_items(db, settings, ctx, [say("I prefer tea over coffee.")])
    assert agent_written(db, instance, plain.run_id) is False
    assert get_run(db, instance, "agent:main:s1", plain.run_id).agent_written is False

    by_agent = append_items(db, settings, ctx, [say("I prefer tea over coffee.")],
                            written_by_agent=True)
    assert agent_written(db, instance, by_agent.run_id) is True

    # A run an agent wrote to stays agent-written, whoever appends to it later.
    append_items(db, settings, ctx, [say("Hello", client_item_id="h-1")], run_id="mixed")
    assert agent_written(db, instance, "mixed") is False
    append_items(db, settings, ctx, [say("I booked it.", "assistant")], run_id="mixed",
                 written_by_agent=True)
    append_items(db, settings, ctx, [say("Thanks")], run_id="mixed")
    assert agent_written(db, instance, "mixed") is True
    assert get_run(db, instance, "agent:main:s1", "mixed").agent_written is True
    # Only duplicates add nothing, so they mark nothing either.
    append_items(db, settings, ctx, [say("Hello", client_item_id="h-1")], run_id="other",
                 written_by_agent=True)
    assert run_row(db, instance, "other") == {}


def test_concurrent_appends_to_one_session_number_without_gaps(module_database_url, settings,
                                                                 instance):
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            with psycopg.connect(module_database_url, autocommit=True) as conn:
                for n in range(15):
                    append_items(conn, settings, ctx_of(instance),
                                 [say(f"{name} {n}.{k}") for k in range(4)],
                                 run_id=f"{name}-{n % 3}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with psycopg.connect(module_database_url, autocommit=True) as db:
        assert [seq for seq, *_ in messages(db, instance)] == list(range(120))
        assert positions(db, instance) == [(n, n) for n in range(120)]
        indexes = db.execute("SELECT run_index, item_count FROM agent_session_runs"
                             " WHERE instance_key = %s ORDER BY run_index",
                             (instance,)).fetchall()
    assert [i for i, _ in indexes] == list(range(6))
    assert sum(c for _, c in indexes) == 120


def test_the_runtime_may_write_for_several_users_who_then_take_part(db, settings, instance):
    ctx = ctx_of(instance, user="alice", session="room-session", group_room_id="room:team")
    result = append_items(db, settings, ctx, [
        say("Alice: let's ship Friday."), say("Bob: fine by me.", author_user_id="bob"),
        say("Carol: agreed.", author_user_id="carol")], author_may_differ=True)
    assert result.appended == 3
    rows = messages(db, instance, "room-session")
    assert [(r[3], r[4]) for r in rows] == [("alice", "room:team"), ("bob", "room:team"),
                                            ("carol", "room:team")]
    taking_part = db.execute("SELECT user_id, role FROM agent_session_participants"
                             " WHERE instance_key = %s ORDER BY user_id", (instance,)).fetchall()
    assert taking_part == [("alice", "owner"), ("bob", "participant"), ("carol", "participant")]


def test_user_less_items_of_a_channel_are_bound_to_it(db, settings, instance):
    ctx = ctx_of(instance, user=None, session="slack:C42", channel_thread_key="C42/1")
    append_items(db, settings, ctx, [say("deploy window is 22:00", "system")])
    [row] = messages(db, instance, "slack:C42")
    assert (row[3], row[4]) == (None, "C42/1")


# --- refusals: the whole batch, nothing written ----------------------------------------------
BAD_BATCHES = [
    ([], InvalidInput, "no_items", "items"),
    ([say(f"n{n}") for n in range(11)], InvalidInput, "too_many_items", "items"),
    ([say("ok"), say("x" * 1001)], InvalidInput, "item_too_large", "items[1].content"),
    ([say("bell \x07 rings")], InvalidInput, "invalid_characters", "items[0].content"),
    ([say("nul \x00")], InvalidInput, "invalid_characters", "items[0].content"),
    ([say("a"), say("b"), say("c"), say(f"my key is {SECRET}")], CredentialDetected,
     "credential_detected", "items[3].content"),
    ([say("a", metadata={"tool": "curl", "attachments": [
        {"name": "env", "uri": "https://admin:hunter22@example.com/x"}]})],
     CredentialDetected, "credential_detected", "items[0].metadata.attachments[0].uri"),
    ([say("a", metadata={"tool": "x" * 600})], InvalidInput, "metadata_too_large",
     "items[0].metadata"),
    ([say("a", metadata={"tool": "line\nbreak"})], InvalidInput, "invalid_characters",
     "items[0].metadata.tool"),
    ([say("a", occurred_at=datetime(2026, 1, 1, 9, 0))], InvalidInput, "naive_occurred_at",
     "items[0].occurredAt"),
    ([say("a", occurred_at=datetime.now(UTC) + timedelta(days=2))], InvalidInput,
     "occurred_at_in_future", "items[0].occurredAt"),
    ([say("a", role="developer")], InvalidInput, "invalid_role", "items[0].role"),
    ([say("a", client_item_id="same"), say("b", client_item_id="same")], InvalidInput,
     "duplicate_client_item_id", "items[1].clientItemId"),
    ([say("a", client_item_id="x" * 201)], InvalidInput, "invalid_client_item_id",
     "items[0].clientItemId"),
    ([say("a", client_item_id="  ")], InvalidInput, "invalid_client_item_id",
     "items[0].clientItemId"),
    ([say("a", author_user_id="bob")], AccessDenied, "foreign_author", "items[0].authorUserId"),
]


@pytest.mark.parametrize(("batch", "error", "code", "field"), BAD_BATCHES,
                         ids=[case[2] + "-" + case[3] for case in BAD_BATCHES])
def test_a_bad_item_refuses_the_whole_batch_and_changes_nothing(db, settings, instance, batch,
                                                                error, code, field):
    ctx = ctx_of(instance)
    append_items(db, settings, ctx, [say("already here", client_item_id="k")], run_id="r")
    before = counts(db, instance)
    with pytest.raises(error) as refused:
        append_items(db, settings, ctx, batch, run_id="r")
    assert refused.value.code == code
    assert refused.value.details["field"] == field
    assert counts(db, instance) == before


def test_a_run_id_or_session_that_cannot_be_stored_is_refused(db, settings, instance):
    with pytest.raises(InvalidInput) as refused:
        append_items(db, settings, ctx_of(instance), [say("a")], run_id="x\ty")
    assert refused.value.code == "invalid_characters"
    with pytest.raises(InvalidInput) as refused:
        append_items(db, settings, ctx_of(instance, session=None), [say("a")])
    assert refused.value.code == "session_required"
    with pytest.raises(InvalidInput) as refused:
        complete_run(db, settings, ctx_of(instance), "r", context_budget_tokens=0)
    assert refused.value.code == "invalid_token_count"
    assert counts(db, instance)["agent_context_messages"] == 0


@pytest.fixture
def tx_conn(module_database_url: str) -> Iterator[psycopg.Connection]:
    """A connection that is not autocommit (like the API's pool connections)."""
    with psycopg.connect(module_database_url) as conn:
        yield conn


def test_inside_a_callers_transaction_a_refusal_rolls_back_with_it(tx_conn, db, settings,
                                                                   instance):
    append_items(tx_conn, settings, ctx_of(instance), [say("kept")])
    tx_conn.commit()
    with pytest.raises(CredentialDetected):
        append_items(tx_conn, settings, ctx_of(instance), [say(f"token {SECRET}")])
    tx_conn.rollback()
    assert [r[2] for r in messages(db, instance)] == ["kept"]
