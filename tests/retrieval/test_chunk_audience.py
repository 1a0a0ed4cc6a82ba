"""The audience copy on chunks (migration 0008) follows its memory and assertion.

Search filters chunks by these columns before it joins anything, so a stale copy would
lose rows from search (the final statement re-applies the full rule, so it can never
reveal one). Every change that moves a memory in or out of recall is checked here against
the memory rows themselves.
"""

from __future__ import annotations

import uuid

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings

_DRIFT = """
    SELECT c.id, c.visibility_scope, c.audience_key, c.owner_user_id, c.recallable,
           m.visibility_scope, m.audience_key, m.user_id,
           m.memory_state = 'active'
             AND (m.assertion_id IS NULL
                  OR (a.status = 'active'
                      AND a.review_state IN ('policy_approved', 'human_approved')))
      FROM agent_memory_chunks c
      JOIN agent_memories m ON m.instance_key = c.instance_key AND m.id = c.memory_id
      LEFT JOIN agent_memory_assertions a
             ON a.instance_key = m.instance_key AND a.id = m.assertion_id
     WHERE c.instance_key = %s
       AND (c.visibility_scope, c.audience_key, c.owner_user_id, c.recallable)
           IS DISTINCT FROM
           (m.visibility_scope, m.audience_key, m.user_id,
            m.memory_state = 'active'
              AND (m.assertion_id IS NULL
                   OR (a.status IS NOT DISTINCT FROM 'active'
                       AND a.review_state IN ('policy_approved', 'human_approved'))))
"""


@pytest.fixture
def settings(module_database_url: str, tmp_path) -> Settings:
    return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"chunk-aud-{uuid.uuid4().hex[:10]}", user_id="ada",
                         channel_thread_key="C42/1700000000.1")


def _store(db, settings, ctx, content, **kwargs):
    kwargs.setdefault("source_type", "manual")
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs)).id


def _drift(db, ctx) -> list[tuple]:
    return db.execute(_DRIFT, (ctx.instance_key,)).fetchall()


def _chunk_state(db, ctx, memory_id) -> set[tuple]:
    return set(db.execute(
        "SELECT visibility_scope, audience_key, owner_user_id, recallable"
        " FROM agent_memory_chunks WHERE instance_key = %s AND memory_id = %s",
        (ctx.instance_key, memory_id)).fetchall())


def _assertion_of(db, ctx, memory_id):
    return db.execute("SELECT assertion_id FROM agent_memories WHERE instance_key = %s"
                      " AND id = %s", (ctx.instance_key, memory_id)).fetchone()[0]


def test_new_chunks_copy_their_memory_audience(db, settings, ctx):
    long_text = ("The payroll run for Mandant Ost closes on the 25th. " * 40).strip()
    private = _store(db, settings, ctx, "Ada prefers the quarterly summary as a PDF.",
                     visibility="private")
    team = _store(db, settings, ctx, long_text, visibility="team")
    channel = _store(db, settings, ctx, "The deploy freeze starts Thursday.",
                     visibility="channel")
    assert _chunk_state(db, ctx, private) <= {("private", "ada", "ada", True),
                                             ("private", "ada", "ada", False)}
    assert {row[:3] for row in _chunk_state(db, ctx, team)} == {
        ("team", ctx.instance_key, "ada")}
    assert db.execute("SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s",
                      (team,)).fetchone()[0] > 1
    assert {row[:3] for row in _chunk_state(db, ctx, channel)} == {
        ("channel", "C42/1700000000.1", "ada")}
    assert _drift(db, ctx) == []


def test_archiving_a_memory_takes_its_chunks_out_of_recall(db, settings, ctx):
    memory = _store(db, settings, ctx, "Mandant Nord files its VAT return monthly.",
                    visibility="team")
    query = "VAT return Mandant Nord"
    assert memory in {h.memory_id for h in search_memories(db, settings, ctx, query)}
    db.execute("UPDATE agent_memories SET memory_state = 'archived' WHERE id = %s", (memory,))
    assert {row[3] for row in _chunk_state(db, ctx, memory)} == {False}
    assert memory not in {h.memory_id for h in search_memories(db, settings, ctx, query)}
    db.execute("UPDATE agent_memories SET memory_state = 'active' WHERE id = %s", (memory,))
    assert memory in {h.memory_id for h in search_memories(db, settings, ctx, query)}
    assert _drift(db, ctx) == []


def test_assertion_status_and_review_reach_the_chunks(db, settings, ctx):
    memory = _store(db, settings, ctx, "I prefer invoices as PDF attachments.",
                    visibility="private", source_type="fact", assertion_type="preference")
    assertion = _assertion_of(db, ctx, memory)
    assert assertion is not None, "a fact write creates a canonical assertion"
    for status, review in (("rejected", "human_rejected"), ("active", "human_approved"),
                           ("candidate", "pending"), ("active", "policy_approved")):
        db.execute("UPDATE agent_memory_assertions SET status = %s, review_state = %s"
                   " WHERE id = %s", (status, review, assertion))
        expected = status == "active"
        assert {row[3] for row in _chunk_state(db, ctx, memory)} == {expected}
        assert _drift(db, ctx) == []


def test_unlinking_the_assertion_brings_the_memory_back(db, settings, ctx):
    # What ON DELETE SET NULL (assertion_id) does when an assertion row goes away.
    memory = _store(db, settings, ctx, "Die Lohnabrechnung für Mandant Süd macht Bob.",
                    visibility="team", source_type="fact")
    assertion = _assertion_of(db, ctx, memory)
    assert assertion is not None, "a fact write creates a canonical assertion"
    db.execute("UPDATE agent_memory_assertions SET status = 'rejected',"
               " review_state = 'human_rejected' WHERE id = %s", (assertion,))
    assert {row[3] for row in _chunk_state(db, ctx, memory)} == {False}
    db.execute("UPDATE agent_memories SET assertion_id = NULL WHERE id = %s", (memory,))
    assert {row[3] for row in _chunk_state(db, ctx, memory)} == {True}
    assert _drift(db, ctx) == []


def test_supplied_audience_values_on_a_chunk_are_ignored(db, settings, ctx):
    memory = _store(db, settings, ctx, "Only Ada may read this note.", visibility="private")
    db.execute(
        "INSERT INTO agent_memory_chunks (instance_key, memory_id, chunk_index, content,"
        " visibility_scope, audience_key, owner_user_id, recallable)"
        " VALUES (%s, %s, 99, 'forged', 'workspace', %s, NULL, true)",
        (ctx.instance_key, memory, ctx.instance_key))
    forged = db.execute("SELECT visibility_scope, audience_key FROM agent_memory_chunks"
                        " WHERE memory_id = %s AND chunk_index = 99", (memory,)).fetchone()
    assert forged == ("private", "ada")
    stranger = AccessContext(ctx.instance_key, user_id="eve")
    assert memory not in {h.memory_id for h in search_memories(db, settings, stranger,
                                                               "forged note")}
    assert _drift(db, ctx) == []
