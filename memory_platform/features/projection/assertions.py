"""The ``assertion_projection`` handler: an assertion's recall state follows its ledger state.

A job's subject is an assertion id; the handler reconciles, so re-running a job is harmless:

* active, approved and valid: one ``agent_memories`` projection row (``source_type`` 'dream'
  for Dream assertions, else 'fact'; ``source_id`` NULL; the assertion's audience), its
  chunks with vectors in the instance's active generation, the assertion's own vector, and
  ``derives`` relations (``updates`` when the payload says so) to every cited source memory.
  If embedding fails the projection is written keyword-only and the outcome carries
  ``assertion_embedding_deferred``; re-embedding fills it later.
* anything else (rejected, revoked, tombstoned, superseded, expired): the projection is
  archived (``superseded`` for superseded assertions) and the assertion's vectors deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.memories.chunk_rows import insert_chunks
from memory_platform.features.memories.chunking import chunk_text
from memory_platform.features.memories.write_rules import (
    embedding_texts,
    projection_memory_scope,
    subject_key,
)
from memory_platform.features.projection.outbox import (
    ASSERTION_PROJECTION,
    EMBEDDING_DEFERRED,
    HANDLERS,
    Job,
    JobOutcome,
    mark_done,
)
from memory_platform.foundation.db.units import commit_if_idle
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.embeddings.base import EmbeddingProvider, embed_or_defer, key_of
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import ensure_generation
from memory_platform.shared.ledger.assertions import store_assertion_vectors
from memory_platform.shared.ledger.recall import TOLD

_ASSERTION = sql.SQL("""
    SELECT a.status, a.review_state, a.assertion_text, a.assertion_type, a.origin,
           a.audience_kind, a.audience_key, a.owner_user_id, a.subject_refs, a.dream_id,
           {told} AS recallable
      FROM agent_memory_assertions a
     WHERE a.instance_key = %s AND a.id = %s
""").format(told=TOLD)

_PROJECTION = """
    SELECT id, memory_state, content_hash
      FROM agent_memories
     WHERE instance_key = %s AND assertion_id = %s AND source_id IS NULL
"""


@dataclass(frozen=True)
class _Assertion:
    status: str
    review_state: str
    text: str
    assertion_type: str
    origin: str
    audience_kind: str
    audience_key: str
    owner_user_id: str | None
    subject_refs: dict[str, Any]
    dream_id: UUID | None
    recallable: bool


def _load(conn, instance_key: str, assertion_id: UUID) -> _Assertion | None:
    row = conn.execute(_ASSERTION, (instance_key, assertion_id)).fetchone()
    return _Assertion(*row) if row else None


def _embedded_in(conn, memory_id: UUID, key: str) -> bool:
    """Whether every chunk of the projection has a vector of generation ``key``."""
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE embedding_key = %s)"
        " FROM agent_memory_chunks WHERE memory_id = %s",
        (key, memory_id),
    ).fetchone()
    return row[0] > 0 and row[0] == row[1]


def _unproject(conn, job: Job, assertion: _Assertion | None) -> str:
    state = "superseded" if assertion and assertion.status == "superseded" else "archived"
    archived = conn.execute(
        """
        UPDATE agent_memories
           SET memory_state = %s, archived_at = now()
         WHERE instance_key = %s AND assertion_id = %s AND source_id IS NULL
           AND memory_state = 'active'
        RETURNING id
        """,
        (state, job.instance_key, job.subject_id),
    ).fetchall()
    deleted = conn.execute(
        "DELETE FROM agent_memory_assertion_embeddings"
        " WHERE instance_key = %s AND assertion_id = %s RETURNING 1",
        (job.instance_key, job.subject_id),
    ).fetchall()
    return "removed" if archived or deleted else "absent"


def _channel_keys(conn, instance_key: str, assertion_id: UUID,
                  audience_key: str) -> tuple[str | None, str | None]:
    """(channel_thread_key, group_room_id) of a channel projection, as its cited memories
    have them; both set to the audience key when no cited memory says which it is."""
    row = conn.execute(
        """
        SELECT m.channel_thread_key, m.group_room_id
          FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
          JOIN agent_memories m ON m.instance_key = s.instance_key AND m.id = s.memory_id
         WHERE e.instance_key = %s AND e.assertion_id = %s
           AND %s IN (m.channel_thread_key, m.group_room_id)
         LIMIT 1
        """,
        (instance_key, assertion_id, audience_key),
    ).fetchone()
    if row is None:
        return audience_key, audience_key
    thread, room = row
    return (thread if thread == audience_key else None,
            room if room == audience_key else None)


def _evidence_memories(conn, instance_key: str, assertion_id: UUID) -> list[tuple[UUID, UUID]]:
    return conn.execute(
        """
        SELECT DISTINCT s.id, s.memory_id
          FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
          JOIN agent_memories m ON m.instance_key = s.instance_key AND m.id = s.memory_id
         WHERE e.instance_key = %s AND e.assertion_id = %s AND e.stance = 'supports'
        """,
        (instance_key, assertion_id),
    ).fetchall()


def _insert_projection(conn, job: Job, a: _Assertion) -> UUID:
    memory_id = uuid4()
    scope = projection_memory_scope(a.audience_kind)
    thread = room = None
    if a.audience_kind == "channel":
        thread, room = _channel_keys(conn, job.instance_key, job.subject_id, a.audience_key)
    refs = {k: str(v) for k, v in (a.subject_refs or {}).items()}
    source_refs = [{"sourceId": str(s), "memoryId": str(m)}
                   for s, m in _evidence_memories(conn, job.instance_key, job.subject_id)]
    metadata = {"memoryClass": "projection", "assertionId": str(job.subject_id),
                "origin": a.origin, "assertionType": a.assertion_type}
    conn.execute(
        """
        INSERT INTO agent_memories
               (id, instance_key, memory_scope, visibility_scope, audience_key, user_id,
                group_room_id, channel_thread_key, subject_refs, source_type, content,
                content_hash, subject_key, metadata, assertion_id, source_id, dream_id,
                source_refs)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s)
        """,
        (memory_id, job.instance_key, scope, a.audience_kind, a.audience_key,
         a.owner_user_id if a.audience_kind == "private" else None, room, thread, Jsonb(refs),
         "dream" if a.origin == "dream" else "fact", a.text, content_hash(a.text),
         subject_key(refs), Jsonb(metadata), job.subject_id, a.dream_id, Jsonb(source_refs)),
    )
    return memory_id


def _write_chunks(conn, job: Job, memory_id: UUID, text: str, chunks, vectors, generation,
                  provider: EmbeddingProvider) -> None:
    conn.execute("DELETE FROM agent_memory_chunks WHERE memory_id = %s", (memory_id,))
    insert_chunks(conn, job.instance_key, memory_id, chunks, vectors, generation, provider)
    if generation is not None:
        store_assertion_vectors(conn, job.instance_key, generation,
                                [(job.subject_id, text, vectors[-1])], replace=True)


def _write_relations(conn, job: Job, memory_id: UUID, a: _Assertion) -> None:
    kinds: dict[str, str] = job.payload.get("relations") or {}
    dream_id = job.payload.get("dreamId") or a.dream_id
    rows = [(job.instance_key, memory_id, target,
             kinds.get(str(target), "derives"), dream_id)
            for _, target in _evidence_memories(conn, job.instance_key, job.subject_id)
            if target != memory_id]
    if rows:
        with conn.cursor() as cur:
            cur.executemany(
                """
                INSERT INTO agent_memory_relations
                       (instance_key, from_memory_id, to_memory_id, relation_type, dream_id)
                VALUES (%s, %s, %s, %s, %s)
                ON CONFLICT (from_memory_id, to_memory_id, relation_type) DO NOTHING
                """,
                rows,
            )


def _source_row(conn, job: Job) -> bool:
    """Whether a memory written from a source envelope (a stored fact) already recalls the
    assertion: then that row is its recall row and no second projection is made."""
    return conn.execute(
        "SELECT 1 FROM agent_memories WHERE instance_key = %s AND assertion_id = %s"
        " AND source_id IS NOT NULL AND memory_state = 'active' LIMIT 1",
        (job.instance_key, job.subject_id)).fetchone() is not None


def _vector_only(conn, job: Job, assertion: _Assertion, provider: EmbeddingProvider, key: str,
                 outcome: JobOutcome) -> JobOutcome:
    """A source-backed fact's assertion only needs its own vector in the active generation."""
    outcome.outcome = "source_row_recallable"
    has_vector = conn.execute(
        "SELECT 1 FROM agent_memory_assertion_embeddings"
        " WHERE instance_key = %s AND assertion_id = %s AND embedding_key = %s",
        (job.instance_key, job.subject_id, key)).fetchone()
    vectors = None if has_vector else embed_or_defer(provider, [assertion.text],
                                                     "assertion projection")
    commit_if_idle(conn)
    with conn.transaction():
        if vectors is not None:
            generation = ensure_generation(conn, job.instance_key, provider)
            store_assertion_vectors(conn, job.instance_key, generation,
                                    [(job.subject_id, assertion.text, vectors[0])])
        elif not has_vector:
            outcome.diagnostics.append(EMBEDDING_DEFERRED)
        mark_done(conn, job)
    return outcome


def project_assertion(conn: psycopg.Connection, settings: Settings, job: Job,
                      embedder: EmbeddingProvider | None) -> JobOutcome:
    outcome = JobOutcome(job.id, job.job_type, job.subject_id, "unchanged")
    assertion = _load(conn, job.instance_key, job.subject_id)
    if assertion is None or not assertion.recallable:
        with conn.transaction():
            outcome.outcome = _unproject(conn, job, assertion)
            mark_done(conn, job)
        return outcome

    provider = embedder or get_provider(settings)
    key = key_of(provider)
    if _source_row(conn, job):
        return _vector_only(conn, job, assertion, provider, key, outcome)
    existing = conn.execute(_PROJECTION, (job.instance_key, job.subject_id)).fetchone()
    digest = content_hash(assertion.text)
    current = (existing is not None and existing[1] == "active" and existing[2] == digest
               and _embedded_in(conn, existing[0], key))
    chunks = vectors = None
    if not current:
        chunks = chunk_text(assertion.text, settings.chunk_target_chars,
                            settings.chunk_overlap_chars)
        texts = embedding_texts(assertion.text, chunks, asserted=True)
        vectors = embed_or_defer(provider, texts, "assertion projection")
        commit_if_idle(conn)  # no transaction stays open while a provider is called

    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (f"assertion-projection:{job.instance_key}:{job.subject_id}",))
        assertion = _load(conn, job.instance_key, job.subject_id)
        if assertion is None or not assertion.recallable or content_hash(assertion.text) != digest:
            raise RuntimeError("the assertion changed while it was being projected; retry")
        existing = conn.execute(_PROJECTION, (job.instance_key, job.subject_id)).fetchone()
        if existing is None:
            memory_id = _insert_projection(conn, job, assertion)
            outcome.outcome = "projected"
        else:
            memory_id = existing[0]
            if not current:
                conn.execute(
                    "UPDATE agent_memories SET memory_state = 'active', archived_at = NULL,"
                    " content = %s, content_hash = %s WHERE id = %s",
                    (assertion.text, digest, memory_id))
                outcome.outcome = "updated"
        if chunks is not None:
            generation = (ensure_generation(conn, job.instance_key, provider)
                          if vectors is not None else None)
            _write_chunks(conn, job, memory_id, assertion.text, chunks, vectors, generation,
                          provider)
            if generation is None:
                outcome.diagnostics.append(EMBEDDING_DEFERRED)
        _write_relations(conn, job, memory_id, assertion)
        mark_done(conn, job)
    return outcome


HANDLERS[ASSERTION_PROJECTION] = project_assertion
