"""The projection outbox: idempotent jobs, projections that follow the ledger state,
retries with backoff, and keyword-only projections when embedding is down."""

from __future__ import annotations

import psycopg
import pytest

from memory_platform.features.context import context_search
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.projection.outbox import (
    enqueue,
    enqueue_assertion_projection,
    process_outbox,
)
from memory_platform.features.projection.reembed import reembed_backfill
from memory_platform.shared.access import AccessContext
from memory_platform.shared.ledger.assertions import record_decision
from tests.dreaming.support import ScriptedModel, assertion, counts, payload, remember
from tests.memories.support import OutageEmbedder

TEXT = "The customer portal uses Keycloak for single sign-on."


def dreamed(db, settings, instance, **kwargs):
    ctx = AccessContext(instance, user_id="ada", session_key="teamchat:room-1")
    ids = [remember(db, settings, ctx, text, visibility="team").id
           for text in (TEXT, "Invoices are archived for ten years.", "We met on Monday.")]
    result = run_dream_partition(db, settings, Partition(instance, "team", instance),
                                 model=ScriptedModel(payload(assertion(TEXT, ids[0]))),
                                 **kwargs)
    return result, result.assertion_ids[0]


def projection(db, assertion_id):
    return db.execute("SELECT id, memory_state, archived_at FROM agent_memories"
                      " WHERE assertion_id = %s AND source_id IS NULL", (assertion_id,)).fetchone()


def found(db, settings, instance):
    hits = context_search(db, settings, AccessContext(instance, user_id="carol"),
                          "Which tool does the customer portal use for sign-on?")
    return any(TEXT == h.content and h.kind == "assertion" for h in hits)


def test_enqueue_is_idempotent_per_key(db, instance):
    subject = "7e1f3c2a-0000-4000-8000-000000000001"
    first = enqueue(db, instance, "assertion_projection", subject, "k1", {"a": 1})
    again = enqueue(db, instance, "assertion_projection", subject, "k1", {"a": 2})
    assert first == again
    assert counts(db, instance)["agent_memory_ingestion_outbox"] == 1


def test_reprocessing_a_projection_creates_nothing_new(db, settings, instance):
    _, assertion_id = dreamed(db, settings, instance)
    before = counts(db, instance)

    same_key = enqueue_assertion_projection(db, instance, assertion_id)
    assert process_outbox(db, settings, limit=10, instance_key=instance).claimed == 0
    forced = enqueue(db, instance, "assertion_projection", assertion_id, "forced-rerun")
    result = process_outbox(db, settings, limit=10, job_ids=[forced])

    assert same_key in [r[0] for r in db.execute(
        "SELECT id FROM agent_memory_ingestion_outbox WHERE status = 'done'")]
    assert result.outcomes[0].outcome == "unchanged"
    after = counts(db, instance)
    assert {t: after[t] - before[t] for t in after if after[t] != before[t]} == {
        "agent_memory_ingestion_outbox": 1}


def test_a_revoked_assertion_loses_its_projection_and_vectors(db, settings, instance):
    _, assertion_id = dreamed(db, settings, instance)
    assert found(db, settings, instance)

    record_decision(db, instance_key=instance, assertion_id=assertion_id, decision="revoke",
                    reviewer_kind="human", reviewer_id="ada", reason_code="outdated")
    job = enqueue_assertion_projection(db, instance, assertion_id)
    result = process_outbox(db, settings, limit=10, job_ids=[job])

    assert result.outcomes[0].outcome == "removed"
    memory_id, state, archived_at = projection(db, assertion_id)
    assert state == "archived" and archived_at is not None
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                      " WHERE assertion_id = %s", (assertion_id,)).fetchone()[0] == 0
    assert not found(db, settings, instance)

    record_decision(db, instance_key=instance, assertion_id=assertion_id, decision="approve",
                    reviewer_kind="human", reviewer_id="ada", reason_code="still_true")
    job = enqueue_assertion_projection(db, instance, assertion_id)
    assert process_outbox(db, settings, limit=10, job_ids=[job]).outcomes[0].outcome == "updated"
    assert projection(db, assertion_id)[:2] == (memory_id, "active")
    assert found(db, settings, instance)


class BrokenEmbedder(OutageEmbedder):
    """Fails with an unexpected error (not an outage): the job must be retried."""

    provider, model, dimensions, strategy = "hash", "hash-v1", 64, "hash"

    def embed_documents(self, texts):
        raise ValueError("provider answered garbage")


def test_a_failing_job_is_retried_with_backoff_until_the_attempts_run_out(
        db, settings, instance):
    _, assertion_id = dreamed(db, settings, instance)
    db.execute("DELETE FROM agent_memories WHERE assertion_id = %s AND source_id IS NULL",
               (assertion_id,))
    job = enqueue(db, instance, "assertion_projection", assertion_id, "retry-me")
    settings = settings.model_copy(update={"outbox_max_attempts": 2,
                                           "outbox_retry_backoff_seconds": 0.0})

    first = process_outbox(db, settings, limit=5, job_ids=[job], embedder=BrokenEmbedder())
    second = process_outbox(db, settings, limit=5, job_ids=[job], embedder=BrokenEmbedder())
    third = process_outbox(db, settings, limit=5, job_ids=[job], embedder=BrokenEmbedder())

    assert (first.failed, second.failed, third.claimed) == (1, 1, 0)
    status, attempts, error = db.execute(
        "SELECT status, attempts, last_error FROM agent_memory_ingestion_outbox WHERE id = %s",
        (job,)).fetchone()
    assert (status, attempts) == ("failed", 2) and "garbage" in error
    assert projection(db, assertion_id) is None


def test_backoff_delays_the_next_attempt(db, settings, instance):
    _, assertion_id = dreamed(db, settings, instance)
    db.execute("DELETE FROM agent_memories WHERE assertion_id = %s AND source_id IS NULL",
               (assertion_id,))
    job = enqueue(db, instance, "assertion_projection", assertion_id, "later")

    process_outbox(db, settings, limit=5, job_ids=[job], embedder=BrokenEmbedder())

    assert process_outbox(db, settings, limit=5, job_ids=[job]).claimed == 0
    delay = db.execute("SELECT extract(epoch FROM available_at - now())"
                       " FROM agent_memory_ingestion_outbox WHERE id = %s", (job,)).fetchone()[0]
    assert 20 < delay <= 30


def test_a_job_locked_by_another_worker_is_skipped(db, settings, instance, module_database_url):
    _, assertion_id = dreamed(db, settings, instance)
    job = enqueue(db, instance, "assertion_projection", assertion_id, "contended")
    with psycopg.connect(module_database_url) as other:
        other.execute("SELECT 1 FROM agent_memory_ingestion_outbox WHERE id = %s FOR UPDATE",
                      (job,))
        assert process_outbox(db, settings, limit=5, job_ids=[job]).claimed == 0
        other.rollback()
    assert process_outbox(db, settings, limit=5, job_ids=[job]).done == 1


def test_without_embeddings_the_projection_is_keyword_only_until_reembedded(
        db, settings, instance):
    result, assertion_id = dreamed(db, settings, instance, embedder=OutageEmbedder())

    assert result.status == "partial"
    assert result.stats["deferredEmbeddings"] == 1
    assert "assertion_embedding_deferred" in {d["code"] for d in result.diagnostics}
    assert projection(db, assertion_id)[1] == "active"
    assert db.execute("SELECT count(*) FROM agent_memory_chunks c JOIN agent_memories m"
                      " ON m.id = c.memory_id WHERE m.assertion_id = %s AND m.source_id IS NULL"
                      " AND c.embedding IS NULL", (assertion_id,)).fetchone()[0] == 1
    assert found(db, settings, instance)  # keyword path

    filled = reembed_backfill(db, settings, limit=100, instance_key=instance)

    assert filled.assertions_embedded >= 1 and filled.remaining == 0
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                      " WHERE assertion_id = %s", (assertion_id,)).fetchone()[0] == 1


@pytest.mark.parametrize("non_autocommit", [True])
def test_the_outbox_works_on_a_pooled_style_connection(module_database_url, settings, instance,
                                                       db, non_autocommit):
    _, assertion_id = dreamed(db, settings, instance)
    job = enqueue(db, instance, "assertion_projection", assertion_id, "pooled")
    with psycopg.connect(module_database_url, autocommit=not non_autocommit) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.commit()
        result = process_outbox(conn, settings, limit=5, job_ids=[job])
    assert result.done == 1
    assert db.execute("SELECT status FROM agent_memory_ingestion_outbox WHERE id = %s",
                      (job,)).fetchone()[0] == "done"
