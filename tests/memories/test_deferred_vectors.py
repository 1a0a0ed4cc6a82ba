"""Deferred write vectors (``write_vectors = "deferred"``): keyword-searchable at once, vectors
from one outbox job (idempotent, harmless after an erasure), drained by the API within a
second."""

from __future__ import annotations

import time

import psycopg

from memory_platform.features.maintenance.erasure import erase_user
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.vectors import MEMORY_VECTORS
from memory_platform.features.projection.outbox import process_outbox
from memory_platform.features.retrieval.search import search_memories
from memory_platform.shared.access import AccessContext
from tests.api.conftest import READ, WRITE, bearer, key_maker, make_settings, open_client

FACT = "The VAT filing for Mandant Nord is due on the tenth of each month."
QUERY = "VAT filing Mandant Nord tenth"


def _deferred(settings):
    return settings.model_copy(update={"write_vectors": "deferred"})


def _vector_state(db, memory_id, assertion_id):
    chunks = db.execute("SELECT count(*) FILTER (WHERE embedding IS NOT NULL), count(*)"
                        " FROM agent_memory_chunks WHERE memory_id = %s",
                        (memory_id,)).fetchone()
    assertion = db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                           " WHERE assertion_id = %s", (assertion_id,)).fetchone()[0]
    return chunks, assertion


def _jobs(db, instance):
    return db.execute("SELECT status, count(*) FROM agent_memory_ingestion_outbox"
                      " WHERE instance_key = %s AND job_type = %s GROUP BY status",
                      (instance, MEMORY_VECTORS)).fetchall()


def test_keyword_at_once_vectors_after_the_job_idempotent_and_dedup_enqueues_nothing(
        db, hash_settings, instance):
    settings = _deferred(hash_settings)
    ctx = AccessContext(instance, user_id="ada")
    stored = store_memory(db, settings, ctx, MemoryWrite(FACT))
    assert stored.vectors_deferred and stored.assertion_status == "active"
    assert _vector_state(db, stored.id, stored.assertion_id) == ((0, 1), 0)
    [hit] = search_memories(db, settings, ctx, QUERY, stamp=False)
    assert hit.memory_id == stored.id and hit.vector_score is None
    assert _jobs(db, instance) == [("pending", 1)]

    again = store_memory(db, settings, ctx, MemoryWrite(FACT))
    assert again.deduplicated and _jobs(db, instance) == [("pending", 1)]

    result = process_outbox(db, settings, instance_key=instance)
    assert (result.done, result.failed) == (1, 0)
    assert _vector_state(db, stored.id, stored.assertion_id) == ((1, 1), 1)
    before = db.execute("SELECT id, embedding::text, updated_at FROM agent_memory_chunks"
                        " WHERE memory_id = %s", (stored.id,)).fetchall()
    [hit] = search_memories(db, settings, ctx, QUERY, stamp=False)
    assert hit.memory_id == stored.id and hit.vector_score is not None

    # The same job once more (a worker that died after committing): nothing changes.
    db.execute("UPDATE agent_memory_ingestion_outbox SET status = 'pending'"
               " WHERE instance_key = %s", (instance,))
    assert process_outbox(db, settings, instance_key=instance).done == 1
    after = db.execute("SELECT id, embedding::text, updated_at FROM agent_memory_chunks"
                       " WHERE memory_id = %s", (stored.id,)).fetchall()
    assert after == before
    assert _vector_state(db, stored.id, stored.assertion_id) == ((1, 1), 1)


def test_a_job_after_the_erasure_of_its_memory_writes_nothing(db, hash_settings, instance):
    settings = _deferred(hash_settings)
    ctx = AccessContext(instance, user_id="ada")
    stored = store_memory(db, settings, ctx, MemoryWrite(FACT, visibility="private"))
    erase_user(db, settings, instance, "ada", requested_by="test")
    result = process_outbox(db, settings, instance_key=instance)
    assert result.failed == 0
    assert _vector_state(db, stored.id, stored.assertion_id) == ((0, 0), 0)
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                      " WHERE instance_key = %s", (instance,)).fetchone()[0] == 0


def test_the_api_worker_makes_a_write_vector_searchable_within_a_second(database_url,
                                                                        tmp_path):
    settings = make_settings(database_url, tmp_path / "state", write_vectors="deferred")
    headers = bearer(key_maker(database_url)("alice", (READ, WRITE)))
    with open_client(settings) as client:
        written = client.post("/api/v1/memory", json={"content": FACT}, headers=headers)
        assert written.status_code == 201, written.text
        memory_id = written.json()["id"]
        deadline = time.monotonic() + 1.0
        with psycopg.connect(database_url, autocommit=True) as conn:
            while True:
                embedded = conn.execute(
                    "SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s"
                    " AND embedding IS NOT NULL", (memory_id,)).fetchone()[0]
                if embedded or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            assert embedded == 1
            assert conn.execute("SELECT status FROM agent_memory_ingestion_outbox"
                                " WHERE subject_id = %s", (memory_id,)).fetchone()[0] == "done"
