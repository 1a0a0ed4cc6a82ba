"""access.py: the audience envelope of a write, and the visibility predicates executed
against real rows (agent_memories shape and ledger shape) for each branch of the rule."""

from __future__ import annotations

import uuid

import pytest
from psycopg import sql

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.shared.access import (
    AccessContext,
    AccessError,
    Audience,
    audience_for,
    audience_predicate,
    visibility_predicate,
)
from tests.support.settings import hash_embedding_settings

A, B = "acme", "globex"


# --- audience_for ------------------------------------------------------------------------


def test_private_audience_is_keyed_by_the_user():
    assert audience_for("private", AccessContext(A, user_id="ada")) == Audience("private", "ada")


def test_private_audience_needs_a_user():
    with pytest.raises(AccessError):
        audience_for("private", AccessContext(A, group_room_id="room-g", channel_type="slack"))


@pytest.mark.parametrize("kind", ["team", "workspace"])
def test_team_and_workspace_audiences_are_keyed_by_the_instance(kind):
    ctx = AccessContext(A, user_id="ada", channel_thread_key="slack:T")
    assert audience_for(kind, ctx) == Audience(kind, A)


def test_channel_audience_is_keyed_by_the_thread_before_the_group_room():
    ctx = AccessContext(A, channel_thread_key="slack:T", group_room_id="room-g")
    assert audience_for("channel", ctx) == Audience("channel", "slack:T")


def test_channel_audience_falls_back_to_the_group_room():
    assert audience_for("channel", AccessContext(A, group_room_id="room-g")) == Audience(
        "channel", "room-g")


def test_channel_audience_needs_a_thread_or_group_room():
    with pytest.raises(AccessError):
        audience_for("channel", AccessContext(A, user_id="ada", channel_type="slack"))


def test_an_unknown_visibility_is_refused():
    with pytest.raises(AccessError):
        audience_for("public", AccessContext(A, user_id="ada"))  # type: ignore[arg-type]


def test_an_access_context_needs_an_instance():
    with pytest.raises(AccessError):
        AccessContext("", user_id="ada")


# --- the predicates, executed ------------------------------------------------------------

# label -> (instance, visibility, audience key, user id, channel thread, group room)
ROWS = {
    "workspace": (A, "workspace", A, None, None, None),
    "private-ada": (A, "private", "ada", "ada", None, None),
    "private-bob": (A, "private", "bob", "bob", None, None),
    "team": (A, "team", A, "ada", None, None),
    "channel-thread": (A, "channel", "slack:T", None, "slack:T", None),
    "channel-room": (A, "channel", "room-g", None, None, "room-g"),
    "channel-linked": (A, "channel", "slack:L", "ada", "slack:L", None),
    "other-workspace": (B, "workspace", B, None, None, None),
    "other-private-ada": (B, "private", "ada", "ada", None, None),
    "other-team": (B, "team", B, "ada", None, None),
    "other-channel-thread": (B, "channel", "slack:T", None, "slack:T", None),
}

# The rule of DESIGN.md invariant 2, spelled out per context.
CASES = [
    pytest.param(AccessContext(A), {"workspace"}, id="empty"),
    pytest.param(AccessContext(A, session_key="web:s1"), {"workspace"}, id="session-only"),
    pytest.param(AccessContext(A, user_id="ada"),
                 {"workspace", "private-ada", "team", "channel-linked"}, id="ada"),
    pytest.param(AccessContext(A, user_id="bob"), {"workspace", "private-bob", "team"},
                 id="bob"),
    pytest.param(AccessContext(A, channel_thread_key="slack:T", channel_type="slack"),
                 {"workspace", "team", "channel-thread"}, id="thread"),
    pytest.param(AccessContext(A, group_room_id="room-g"),
                 {"workspace", "team", "channel-room"}, id="group-room"),
    pytest.param(AccessContext(A, channel_type="slack"), {"workspace", "team"},
                 id="channel-type-only"),
    pytest.param(AccessContext(A, user_id="ada", channel_thread_key="slack:T"),
                 {"workspace", "private-ada", "team", "channel-thread", "channel-linked"},
                 id="ada-in-thread"),
    pytest.param(AccessContext(A, user_id="bob", group_room_id="room-g"),
                 {"workspace", "private-bob", "team", "channel-room"}, id="bob-in-room"),
    pytest.param(AccessContext(B, user_id="ada"),
                 {"other-workspace", "other-private-ada", "other-team"}, id="ada-elsewhere"),
    pytest.param(AccessContext(A, user_id="x' OR '1'='1"), {"workspace", "team"},
                 id="quoted-user"),
]


@pytest.fixture(scope="module")
def memory_rows(db) -> dict[uuid.UUID, str]:
    labels = {}
    for label, (instance, scope, key, user, thread, room) in ROWS.items():
        memory_id = db.execute(
            """
            INSERT INTO agent_memories
                   (instance_key, memory_scope, visibility_scope, audience_key, user_id,
                    channel_thread_key, group_room_id, source_type, content, content_hash)
            VALUES (%s, 'workspace', %s, %s, %s, %s, %s, 'manual', %s, %s)
            RETURNING id
            """,
            (instance, scope, key, user, thread, room, label, uuid.uuid4().hex),
        ).fetchone()[0]
        labels[memory_id] = label
    return labels


@pytest.fixture(scope="module")
def assertion_rows(db) -> dict[uuid.UUID, str]:
    labels = {}
    for label, (instance, scope, key, user, _thread, _room) in ROWS.items():
        owner = user if scope in ("private", "channel") else None
        assertion_id = db.execute(
            """
            INSERT INTO agent_memory_assertions
                   (instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
                    assertion_type, assertion_text, origin)
            VALUES (%s, %s, %s, %s, %s, 'fact', %s, 'explicit')
            RETURNING id
            """,
            (instance, scope, key, owner, uuid.uuid4().hex, label),
        ).fetchone()[0]
        labels[assertion_id] = label
    return labels


def _visible(db, table: str, predicate: sql.Composable, alias: str, labels) -> set[str]:
    query = sql.SQL("SELECT {a}.id FROM {t} {a} WHERE {p}").format(
        a=sql.Identifier(alias), t=sql.Identifier(table), p=predicate)
    return {labels[row[0]] for row in db.execute(query) if row[0] in labels}


@pytest.mark.parametrize(("ctx", "expected"), CASES)
def test_visibility_predicate_selects_exactly_the_rows_the_rule_allows(
        db, memory_rows, ctx, expected):
    visible = _visible(db, "agent_memories", visibility_predicate(ctx, "m"), "m", memory_rows)
    assert visible == expected


@pytest.mark.parametrize(("ctx", "expected"), CASES)
def test_audience_predicate_selects_exactly_the_rows_the_rule_allows(
        db, assertion_rows, ctx, expected):
    visible = _visible(db, "agent_memory_assertions", audience_predicate(ctx, "a"), "a",
                       assertion_rows)
    assert visible == expected


def test_predicates_bind_values_as_literals_not_sql(db):
    text = visibility_predicate(AccessContext(A, user_id="x' OR '1'='1"), "m").as_string(db)
    assert "'x'' OR ''1''=''1'" in text


# --- a memory and its ledger rows agree -------------------------------------------------

WRITERS = [
    pytest.param(AccessContext(A, user_id="ada", channel_thread_key="slack:L"), "channel",
                 id="linked-channel"),
    pytest.param(AccessContext(A, channel_thread_key="slack:T", group_room_id="room-g"),
                 "channel", id="thread-in-room"),
    pytest.param(AccessContext(A, user_id="ada"), "private", id="private"),
    pytest.param(AccessContext(A, group_room_id="room-g"), "team", id="team"),
]
READERS = [ctx.values[0] for ctx in CASES]


@pytest.mark.parametrize(("writer", "visibility"), WRITERS)
def test_a_stored_memory_and_its_assertion_are_visible_to_the_same_contexts(
        db, module_database_url, writer, visibility):
    instance = f"agree-{uuid.uuid4().hex[:10]}"
    writer = AccessContext(instance, **{k: getattr(writer, k) for k in (
        "user_id", "group_room_id", "channel_thread_key", "channel_type")})
    settings = hash_embedding_settings(module_database_url)
    stored = store_memory(db, settings, writer, MemoryWrite(
        "The standup moves to 9:30 on Mondays.", visibility=visibility))
    disagreements = []
    for reader in READERS:
        reader = AccessContext(instance, **{k: getattr(reader, k) for k in (
            "user_id", "session_key", "group_room_id", "channel_thread_key", "channel_type")})
        memory = db.execute(sql.SQL("SELECT count(*) FROM agent_memories m"
                                    " WHERE m.id = %s AND {}").format(
            visibility_predicate(reader, "m")), (stored.id,)).fetchone()[0]
        assertion = db.execute(sql.SQL("SELECT count(*) FROM agent_memory_assertions a"
                                       " WHERE a.id = %s AND {}").format(
            audience_predicate(reader, "a")), (stored.assertion_id,)).fetchone()[0]
        if memory != assertion:
            disagreements.append((reader, bool(memory), bool(assertion)))
    assert disagreements == []
