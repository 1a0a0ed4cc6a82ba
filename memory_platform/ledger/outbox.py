"""The idempotent projection outbox: ledger changes become recall state through here.

``enqueue`` writes a job once per ``(instance_key, idempotency_key)``; ``process_outbox``
claims due jobs with ``FOR UPDATE SKIP LOCKED`` (so any number of workers can run), handles
each in its own transaction and marks it done there, or records the error and retries it with
exponential backoff until ``outbox_max_attempts``. A job claimed by a worker that died is
claimable again after ``outbox_processing_timeout_seconds``.

``assertion_projection`` (subject: an assertion id) reconciles an assertion's recall state
with its ledger state, so re-running a job is harmless:

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

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.embeddings import EmbeddingError, EmbeddingProvider, get_provider
from memory_platform.embeddings.generations import ensure_generation, generation_key
from memory_platform.ledger.assertions import store_assertion_vectors
from memory_platform.memories.chunk_rows import insert_chunks
from memory_platform.memories.chunking import chunk_text
from memory_platform.memories.rules import subject_key
from memory_platform.settings import Settings
from memory_platform.text import content_hash

log = logging.getLogger(__name__)

ASSERTION_PROJECTION = "assertion_projection"
EMBEDDING_DEFERRED = "assertion_embedding_deferred"


@dataclass(frozen=True)
class Job:
    id: int
    instance_key: str
    job_type: str
    subject_id: UUID
    payload: dict[str, Any]
    attempts: int


@dataclass
class JobOutcome:
    job_id: int
    job_type: str
    subject_id: UUID
    outcome: str                 # projected | updated | unchanged | removed | absent | failed
    diagnostics: list[str] = field(default_factory=list)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"jobId": self.job_id, "jobType": self.job_type,
                "subjectId": str(self.subject_id), "outcome": self.outcome,
                "diagnostics": self.diagnostics, "error": self.error}


@dataclass
class OutboxResult:
    claimed: int = 0
    done: int = 0
    failed: int = 0
    outcomes: list[JobOutcome] = field(default_factory=list)

    @property
    def deferred_embeddings(self) -> list[UUID]:
        return [o.subject_id for o in self.outcomes if EMBEDDING_DEFERRED in o.diagnostics]

    def summary(self) -> dict[str, Any]:
        return {"claimed": self.claimed, "done": self.done, "failed": self.failed,
                "deferredEmbeddings": len(self.deferred_embeddings)}


Handler = Callable[[psycopg.Connection, Settings, Job, EmbeddingProvider | None], JobOutcome]
HANDLERS: dict[str, Handler] = {}


def enqueue(
    conn: psycopg.Connection,
    instance_key: str,
    job_type: str,
    subject_id: UUID,
    idempotency_key: str,
    payload: dict[str, Any] | None = None,
) -> int:
    """The id of the job with this idempotency key, created if new (never duplicated)."""
    row = conn.execute(
        """
        INSERT INTO agent_memory_ingestion_outbox
               (instance_key, job_type, subject_id, idempotency_key, payload)
        VALUES (%s, %s, %s, %s, %s)
        ON CONFLICT (instance_key, idempotency_key) DO NOTHING
        RETURNING id
        """,
        (instance_key, job_type, subject_id, idempotency_key, Jsonb(payload or {})),
    ).fetchone()
    if row:
        return row[0]
    return conn.execute(
        "SELECT id FROM agent_memory_ingestion_outbox"
        " WHERE instance_key = %s AND idempotency_key = %s",
        (instance_key, idempotency_key),
    ).fetchone()[0]


def enqueue_assertion_projection(
    conn: psycopg.Connection,
    instance_key: str,
    assertion_id: UUID,
    payload: dict[str, Any] | None = None,
) -> int:
    """Projection work for the assertion's current state: the key carries the assertion's
    ``updated_at``, so each state change gets one job and repeating it gets none."""
    version = conn.execute(
        "SELECT updated_at FROM agent_memory_assertions WHERE instance_key = %s AND id = %s",
        (instance_key, assertion_id),
    ).fetchone()
    stamp = version[0].isoformat() if version else "missing"
    return enqueue(conn, instance_key, ASSERTION_PROJECTION, assertion_id,
                   f"{ASSERTION_PROJECTION}:{assertion_id}:{stamp}", payload)


def _commit_if_idle(conn: psycopg.Connection) -> None:
    """Outside a caller's transaction, a non-autocommit connection commits its own work."""
    if not conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
        conn.commit()


# A job is due: a known type with attempts left, pending (or failed) and available, or
# left in processing by a worker that stopped answering.
_DUE = sql.SQL("""
    job_type = ANY(%(types)s)
    AND attempts < %(max_attempts)s
    AND ((status IN ('pending', 'failed') AND available_at <= now())
         OR (status = 'processing' AND locked_at < now() - make_interval(secs => %(stale)s)))
""")
_CLAIM = sql.SQL("""
    UPDATE agent_memory_ingestion_outbox o
       SET status = 'processing', attempts = o.attempts + 1, locked_at = now(),
           locked_by = %(worker)s
     WHERE o.id IN (
        SELECT id
          FROM agent_memory_ingestion_outbox
         WHERE {due}
           AND (%(instance)s::text IS NULL OR instance_key = %(instance)s::text)
           AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s::bigint[]))
         ORDER BY available_at, id
         LIMIT %(limit)s
         FOR UPDATE SKIP LOCKED)
    RETURNING o.id, o.instance_key, o.job_type, o.subject_id, o.payload, o.attempts
""").format(due=_DUE)


_DUE_JOB = sql.SQL("SELECT id, attempts FROM agent_memory_ingestion_outbox WHERE {due}"
                   " ORDER BY available_at, id LIMIT 1").format(due=_DUE)


def _due_params(settings: Settings) -> dict:
    return {"types": list(HANDLERS), "max_attempts": settings.outbox_max_attempts,
            "stale": settings.outbox_processing_timeout_seconds}


def due_outbox_job(conn: psycopg.Connection, settings: Settings) -> tuple[int, int] | None:
    """(id, attempts) of the first job ``process_outbox`` would claim now, or None."""
    row = conn.execute(_DUE_JOB, _due_params(settings)).fetchone()
    return (row[0], row[1]) if row else None


def _claim(conn, settings: Settings, limit: int, instance_key: str | None,
           job_ids: list[int] | None) -> list[Job]:
    with conn.transaction():
        rows = conn.execute(_CLAIM, {
            **_due_params(settings), "worker": f"{socket.gethostname()}:{os.getpid()}",
            "instance": instance_key, "ids": job_ids, "limit": limit}).fetchall()
    _commit_if_idle(conn)
    return sorted((Job(*r) for r in rows), key=lambda j: j.id)


def mark_done(conn: psycopg.Connection, job: Job) -> None:
    """Called by a handler inside the transaction that wrote the job's effects."""
    conn.execute(
        "UPDATE agent_memory_ingestion_outbox"
        " SET status = 'done', completed_at = now(), locked_at = NULL, last_error = NULL"
        " WHERE id = %s",
        (job.id,),
    )


def _mark_failed(conn, settings: Settings, job: Job, error: str) -> None:
    delay = settings.outbox_retry_backoff_seconds * (2 ** max(0, job.attempts - 1))
    with conn.transaction():
        conn.execute(
            "UPDATE agent_memory_ingestion_outbox"
            " SET status = 'failed', last_error = %s, locked_at = NULL,"
            "     available_at = now() + make_interval(secs => %s)"
            " WHERE id = %s",
            (error[:1000], delay, job.id),
        )
    _commit_if_idle(conn)


def process_outbox(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    limit: int = 100,
    embedder: EmbeddingProvider | None = None,
    instance_key: str | None = None,
    job_ids: list[int] | None = None,
) -> OutboxResult:
    """Claim and run up to ``limit`` due jobs (optionally of one instance, or exactly
    ``job_ids``). Each job commits on its own; a failing job is retried later."""
    result = OutboxResult()
    if job_ids is not None and not job_ids:
        return result
    if not conn.autocommit and \
            conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        raise RuntimeError("process_outbox commits each job: call it outside a transaction")
    jobs = _claim(conn, settings, limit, instance_key, job_ids)
    result.claimed = len(jobs)
    for job in jobs:
        try:
            outcome = HANDLERS[job.job_type](conn, settings, job, embedder)
            _commit_if_idle(conn)
            result.done += 1
        except Exception as exc:  # any failure is recorded and retried
            if not conn.autocommit and conn.info.transaction_status != \
                    psycopg.pq.TransactionStatus.IDLE:
                conn.rollback()
            log.warning("outbox job %s (%s %s) failed: %s", job.id, job.job_type,
                        job.subject_id, exc)
            error = f"{type(exc).__name__}: {exc}"
            _mark_failed(conn, settings, job, error)
            outcome = JobOutcome(job.id, job.job_type, job.subject_id, "failed", error=error)
            result.failed += 1
        result.outcomes.append(outcome)
    return result


# --- assertion projection ------------------------------------------------------------------

_ASSERTION = """
    SELECT a.status, a.review_state, a.assertion_text, a.assertion_type, a.origin,
           a.audience_kind, a.audience_key, a.owner_user_id, a.subject_refs, a.dream_id,
           (a.status = 'active'
            AND a.review_state IN ('policy_approved', 'human_approved')
            AND (a.valid_from IS NULL OR a.valid_from <= now())
            AND (a.valid_to IS NULL OR a.valid_to > now())) AS recallable
      FROM agent_memory_assertions a
     WHERE a.instance_key = %s AND a.id = %s
"""

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
    scope = {"private": "user", "channel": "channel"}.get(a.audience_kind, "workspace")
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


def _embed(provider: EmbeddingProvider, texts: list[str]) -> np.ndarray | None:
    try:
        return provider.embed_documents(texts)
    except EmbeddingError as exc:
        log.warning("assertion embedding deferred: %s", exc)
        return None


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
    vectors = None if has_vector else _embed(provider, [assertion.text])
    _commit_if_idle(conn)
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
    key = generation_key(provider.provider, provider.model, provider.dimensions,
                         provider.preprocessing)
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
        texts = [c.content for c in chunks] + ([assertion.text] if len(chunks) > 1 else [])
        vectors = _embed(provider, texts)
        _commit_if_idle(conn)  # no transaction stays open while a provider is called

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
