"""Recall stamps (issue 32.6, seed:75, 89): a recall counts on the memory and is a durable
``retrieved`` event (memory, its assertion, user, session, count), written at once or by the
API's deferred stamper in one row per (memory, user, session) and interval; a person's
erasure is not undone by a stamp still buffered."""

from __future__ import annotations

from pathlib import Path

import pytest
from psycopg.rows import dict_row

from memory_platform.features.maintenance.erasure import erase_user
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.stamping import RetrievalStamper
from memory_platform.foundation.db.connection import open_pool
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path):
    return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")


@pytest.fixture
def stamper(settings):
    pool = open_pool(settings, autocommit=True, min_size=1)
    stamper = RetrievalStamper(pool, interval_seconds=3600)   # flushed by the test
    try:
        yield stamper
    finally:
        stamper.close()
        pool.close()


def events(db, memory_id) -> list[dict]:
    with db.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT user_id, session_key, assertion_id, details FROM"
            " agent_memory_retrieval_feedback WHERE memory_id = %s AND event_type = 'retrieved'"
            " ORDER BY user_id NULLS LAST, session_key NULLS LAST", (memory_id,)).fetchall()


def count(db, memory_id) -> int:
    return db.execute("SELECT retrieval_count FROM agent_memories WHERE id = %s",
                      (memory_id,)).fetchone()[0]


def test_a_recall_is_a_retrieved_event_of_who_recalled_it(db, settings, instance):
    ada = AccessContext(instance, user_id="ada", session_key="s-1")
    fact = store_memory(db, settings, ada, MemoryWrite(
        "The falcon budget is reviewed every quarter.", visibility="team"))

    [hit] = search_memories(db, settings, ada, "falcon budget")

    assert hit.memory_id == fact.id and count(db, fact.id) == 1
    assert events(db, fact.id) == [{"user_id": "ada", "session_key": "s-1",
                                    "assertion_id": fact.assertion_id,
                                    "details": {"count": 1}}]
    search_memories(db, settings, ada, "falcon budget", stamp=False)
    assert count(db, fact.id) == 1 and len(events(db, fact.id)) == 1


def test_the_deferred_stamper_writes_one_event_per_recaller_and_interval(db, settings,
                                                                         instance, stamper):
    ada = AccessContext(instance, user_id="ada", session_key="s-1")
    ben = AccessContext(instance, user_id="ben")
    fact = store_memory(db, settings, ada, MemoryWrite(
        "The falcon budget is reviewed every quarter.", visibility="team"))
    for ctx in (ada, ada, ben):
        search_memories(db, settings, ctx, "falcon budget", stamper=stamper)
    assert count(db, fact.id) == 0 and events(db, fact.id) == []    # buffered

    assert stamper.flush() == 2
    assert count(db, fact.id) == 3
    assert [(e["user_id"], e["session_key"], e["details"]) for e in events(db, fact.id)] == [
        ("ada", "s-1", {"count": 2}), ("ben", None, {"count": 1})]
    assert stamper.flush() == 0


def test_a_buffered_recall_of_an_erased_person_writes_no_event(db, settings, instance,
                                                               stamper):
    ada, cleo = AccessContext(instance, user_id="ada"), AccessContext(instance, user_id="cleo")
    fact = store_memory(db, settings, ada, MemoryWrite(
        "The falcon budget is reviewed every quarter.", visibility="team"))
    search_memories(db, settings, cleo, "falcon budget", stamper=stamper)
    search_memories(db, settings, ada, "falcon budget", stamper=stamper)

    erase_user(db, settings, instance, "cleo")
    stamper.flush()

    assert count(db, fact.id) == 2                      # the count holds no person
    assert [e["user_id"] for e in events(db, fact.id)] == ["ada"]
    assert db.execute("SELECT count(*) FROM agent_memory_retrieval_feedback"
                      " WHERE user_id = 'cleo'").fetchone()[0] == 0
