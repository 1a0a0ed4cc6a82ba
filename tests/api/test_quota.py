"""Finding 12 (review of 7c85f33): a storage quota per user and per instance. A write past
it (a memory, a session append) is refused with 413 ``storage_quota_exceeded`` naming the
limit and the usage, and nothing of it is stored; another user is not affected; erasing
frees the quota. The bulk import refuses a batch past it, whole."""

from __future__ import annotations

import psycopg
import pytest

from memory_platform.features.memories.quota import usage
from memory_platform.foundation.errors import QuotaExceeded
from tests.api.conftest import (
    ALL_SCOPES,
    READ,
    WRITE,
    assert_error,
    bearer,
    make_settings,
    open_client,
    row_counts,
)
from tests.memories.bulk_support import run as run_import

LIMIT = 4000


@pytest.fixture
def quota_client(database_url, tmp_path):
    settings = make_settings(database_url, tmp_path / "state", quota_user_bytes=LIMIT,
                             quota_instance_bytes=3 * LIMIT)
    with open_client(settings) as client:
        yield client


def _stored(database_url: str, user: str) -> int:
    with psycopg.connect(database_url) as conn:
        return usage(conn, "default", user)[1]


def _counts(database_url: str) -> dict[str, int]:
    with psycopg.connect(database_url) as conn:
        counts = row_counts(conn)
        counts["messages"] = conn.execute(
            "SELECT count(*) FROM agent_context_messages").fetchone()[0]
        return counts


def _write(client, headers, text, **fields):
    return client.post("/api/v1/memory", json={"content": text, **fields}, headers=headers)


def _fill(client, headers, user_tag: str, until: int) -> int:
    """Write distinct memories of 900 bytes while they fit under ``until``; their count."""
    written = 0
    while (written + 1) * 900 <= until:
        text = (f"{user_tag} note {written:03d} " + "lorem ipsum dolor " * 60)[:899] + "."
        response = _write(client, headers, text, visibility="team")
        assert response.status_code == 201, response.text
        written += 1
    return written


def test_finding_12_a_write_past_the_user_quota_is_refused_and_nothing_stored(
        quota_client, database_url, make_key):
    alice = bearer(make_key("alice", (READ, WRITE)))
    bob = bearer(make_key("bob", (READ, WRITE)))
    count = _fill(quota_client, alice, "alice", LIMIT)
    assert _stored(database_url, "alice") == count * 900

    before = _counts(database_url)
    response = _write(quota_client, alice, "One more note about the quarterly offsite plan "
                      "and the catering order for forty people. " * 8)
    error = assert_error(response, 413, "storage_quota_exceeded")
    assert error["details"]["scope"] == "user"
    assert error["details"]["limitBytes"] == LIMIT
    assert error["details"]["usedBytesWithWrite"] > LIMIT
    assert "MEMORY_QUOTA_USER_BYTES" in error["message"]
    assert _counts(database_url) == before
    assert _stored(database_url, "alice") == count * 900

    appended = quota_client.post("/api/v1/sessions/alice-chat/items", headers=alice, json={
        "items": [{"role": "user", "content": "x" * 1200}]})
    assert_error(appended, 413, "storage_quota_exceeded")
    assert _counts(database_url) == before

    # another user is not affected
    assert _write(quota_client, bob, "Bob's standup moved to 9:30.").status_code == 201
    assert quota_client.post("/api/v1/sessions/bob-chat/items", headers=bob, json={
        "items": [{"role": "user", "content": "see you at the standup"}]}).status_code == 201


def test_finding_12_the_instance_quota_holds_across_users(quota_client, database_url,
                                                          make_key):
    users = [bearer(make_key(name, (READ, WRITE))) for name in ("ann", "ben", "cid", "dee")]
    for n, headers in enumerate(users[:3]):
        _fill(quota_client, headers, f"user{n}", LIMIT)
    before = _counts(database_url)
    error = assert_error(_write(quota_client, users[3], "x y z " * 250),
                         413, "storage_quota_exceeded")
    assert error["details"]["scope"] == "instance"
    assert error["details"]["limitBytes"] == 3 * LIMIT
    assert "MEMORY_QUOTA_INSTANCE_BYTES" in error["message"]
    assert _counts(database_url) == before


def test_finding_12_erasing_frees_the_quota(quota_client, database_url, make_key):
    alice = bearer(make_key("alice", (READ, WRITE)))
    admin = bearer(make_key("root", ALL_SCOPES))
    _fill(quota_client, alice, "alice", LIMIT)
    assert quota_client.post("/api/v1/sessions/alice-chat/items", headers=alice, json={
        "items": [{"role": "user", "content": "tiny"}]}).status_code == 201
    assert_error(_write(quota_client, alice, "a" * 1000), 413, "storage_quota_exceeded")

    erased = quota_client.post("/internal/memory/users/erase", json={"userId": "alice"},
                               headers=admin)
    assert erased.status_code == 200, erased.text
    assert _stored(database_url, "alice") == 0
    alice = bearer(make_key("alice", (READ, WRITE)))   # the erasure revoked her keys
    _fill(quota_client, alice, "alice again", LIMIT)


def test_the_counter_is_exact_after_writes_and_deletes(quota_client, database_url,
                                                       make_key):
    """The trigger-kept counter equals a recount of the stored text (a session item's turn
    memory, sessions/turn_recall.py, copies an item already counted: not counted again)."""
    alice = bearer(make_key("alice", (READ, WRITE)))
    _write(quota_client, alice, "Grüße aus München, the offsite is in Ötztal.",
           title="Offsite – Ötztal")
    quota_client.post("/api/v1/sessions/s1/items", headers=alice, json={
        "items": [{"role": "user", "content": "Straße ä ö ü ß"},
                  {"role": "assistant", "content": "noted"}]})
    _write(quota_client, alice, "Another one, with more words in it than the first.")

    def recount(conn) -> int:
        return conn.execute(
            "SELECT (SELECT coalesce(sum(octet_length(content)"
            " + coalesce(octet_length(title), 0)), 0) FROM agent_memories"
            " WHERE user_id = 'alice' AND source_type <> 'message')"
            " + (SELECT coalesce(sum(octet_length(content)), 0) FROM agent_context_messages"
            " WHERE user_id = 'alice')").fetchone()[0]

    with psycopg.connect(database_url, autocommit=True) as conn:
        assert usage(conn, "default", "alice")[1] == recount(conn) > 0
        steps = [
            "DELETE FROM agent_memories WHERE content LIKE 'Grüße%'",       # delete
            "UPDATE agent_memories SET title = 'Ä longer title' WHERE content LIKE 'Another%'",
            "UPDATE agent_context_messages SET content = 'redacted' WHERE content LIKE 'Str%'",
            "UPDATE agent_memories SET retrieval_count = retrieval_count + 1",  # not counted
            "TRUNCATE agent_context_messages CASCADE",                        # a recount
        ]
        for statement in steps:
            conn.execute(statement)
            assert usage(conn, "default", "alice")[1] == recount(conn) > 0, statement


def test_the_bulk_import_refuses_a_batch_past_the_quota(database_url, tmp_path):
    settings = make_settings(database_url, tmp_path / "state", quota_user_bytes=LIMIT,
                             quota_instance_bytes=0)
    rows = [{"content": f"Imported note {n:03d}: " + "the warehouse inventory list " * 10,
             "user_id": "imp", "visibility": "private"} for n in range(20)]
    with psycopg.connect(database_url, autocommit=True) as conn:
        before = row_counts(conn)
        with pytest.raises(QuotaExceeded):
            run_import(conn, settings, "default", rows, batch_size=100)
        assert row_counts(conn) == before
        assert usage(conn, "default", "imp")[1] == 0
