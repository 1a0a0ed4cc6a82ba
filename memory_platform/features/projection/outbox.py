"""The idempotent projection outbox: ledger changes become recall state through here.

``enqueue`` writes a job once per ``(instance_key, idempotency_key)``; ``process_outbox``
claims due jobs with ``FOR UPDATE SKIP LOCKED`` (so any number of workers can run), handles
each in its own transaction and marks it done there, or records the error and retries it with
exponential backoff until ``outbox_max_attempts``. A job claimed by a worker that died is
claimable again after ``outbox_processing_timeout_seconds``.

Handlers register themselves in :data:`HANDLERS` by job type (``projection.assertions`` for
``assertion_projection``); importing ``memory_platform.features.projection`` registers them all.
``graph_projection`` jobs (written by triggers on the assertion table, migration 0020) are
not handled one by one: the graph worker (``memory_platform.features.graph.build``) claims them with
:func:`claim` and works them off in batches per audience, so they are no handler here; the
due check (:func:`due_outbox_job`) counts them so the outbox sensor starts a run for them.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.foundation.db.units import commit_if_idle, require_idle, rollback_if_open
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider

log = logging.getLogger(__name__)

ASSERTION_PROJECTION = "assertion_projection"
GRAPH_PROJECTION = "graph_projection"
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

    def __add__(self, other: OutboxResult) -> OutboxResult:
        return OutboxResult(self.claimed + other.claimed, self.done + other.done,
                            self.failed + other.failed, self.outcomes + other.outcomes)


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


# A job is due: one of the asked types with attempts left, pending (or failed) and available,
# or left in processing by a worker that stopped answering.
_DUE = sql.SQL("""
    job_type = ANY(%(types)s)
    AND attempts < CASE WHEN job_type = 'graph_projection' THEN %(graph_max_attempts)s
                        ELSE %(max_attempts)s END
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
           AND (%(audience_kind)s::text IS NULL
                OR (payload ->> 'audienceKind' = %(audience_kind)s::text
                    AND payload ->> 'audienceKey' = %(audience_key)s::text))
         ORDER BY available_at, id
         LIMIT %(limit)s
         FOR UPDATE SKIP LOCKED)
    RETURNING o.id, o.instance_key, o.job_type, o.subject_id, o.payload, o.attempts
""").format(due=_DUE)


_DUE_JOB = sql.SQL("SELECT id, attempts FROM agent_memory_ingestion_outbox WHERE {due}"
                   " ORDER BY available_at, id LIMIT 1").format(due=_DUE)


def _due_params(settings: Settings, types: list[str] | None = None) -> dict:
    return {"types": types if types is not None else list(HANDLERS),
            "max_attempts": settings.outbox_max_attempts,
            "graph_max_attempts": settings.graph_max_attempts,
            "stale": settings.outbox_processing_timeout_seconds}


def due_outbox_job(conn: psycopg.Connection, settings: Settings) -> tuple[int, int] | None:
    """(id, attempts) of the first job an outbox run would claim now (a handled job or graph
    work), or None."""
    row = conn.execute(_DUE_JOB, _due_params(settings, [*HANDLERS, GRAPH_PROJECTION])
                       ).fetchone()
    return (row[0], row[1]) if row else None


def claim(conn: psycopg.Connection, settings: Settings, limit: int, *,
          types: list[str] | None = None, instance_key: str | None = None,
          job_ids: list[int] | None = None,
          audience: tuple[str, str] | None = None) -> list[Job]:
    """Claim up to ``limit`` due jobs of ``types`` (default: the handled ones), optionally of
    one instance, exactly ``job_ids``, or one audience (``(kind, key)`` as the payload names
    it), committed at once: another worker skips them until done, failed or stale."""
    kind, key = audience or (None, None)
    with conn.transaction():
        rows = conn.execute(_CLAIM, {
            **_due_params(settings, types), "worker": f"{socket.gethostname()}:{os.getpid()}",
            "instance": instance_key, "ids": job_ids, "limit": limit,
            "audience_kind": kind, "audience_key": key}).fetchall()
    commit_if_idle(conn)
    return sorted((Job(*r) for r in rows), key=lambda j: j.id)


def mark_done(conn: psycopg.Connection, job: Job) -> None:
    """Called by a handler inside the transaction that wrote the job's effects."""
    conn.execute(
        "UPDATE agent_memory_ingestion_outbox"
        " SET status = 'done', completed_at = now(), locked_at = NULL, last_error = NULL"
        " WHERE id = %s",
        (job.id,),
    )


def mark_failed(conn: psycopg.Connection, settings: Settings, job: Job, error: str) -> None:
    """Record ``error`` on the job and make it due again after exponential backoff (its own
    committed unit)."""
    delay = min(settings.outbox_retry_backoff_seconds * (2 ** min(max(0, job.attempts - 1), 30)),
                settings.outbox_retry_max_seconds)
    with conn.transaction():
        conn.execute(
            "UPDATE agent_memory_ingestion_outbox"
            " SET status = 'failed', last_error = %s, locked_at = NULL,"
            "     available_at = now() + make_interval(secs => %s)"
            " WHERE id = %s",
            (error[:1000], delay, job.id),
        )
    commit_if_idle(conn)


def requeue_exhausted(conn: psycopg.Connection, settings: Settings, job_type: str, *,
                      instance_key: str | None = None) -> int:
    """Make failed jobs of ``job_type`` that ran out of attempts due again, with a fresh
    attempt budget (an operator's decision once the cause is fixed); how many."""
    limit = (settings.graph_max_attempts if job_type == GRAPH_PROJECTION
             else settings.outbox_max_attempts)
    with conn.transaction():
        count = conn.execute(
            "UPDATE agent_memory_ingestion_outbox SET status = 'pending', attempts = 0,"
            " available_at = now() WHERE job_type = %s AND status = 'failed'"
            " AND attempts >= %s AND (%s::text IS NULL OR instance_key = %s::text)",
            (job_type, limit, instance_key, instance_key)).rowcount
    commit_if_idle(conn)
    return count


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
    if not conn.autocommit:
        require_idle(conn, "process_outbox")
    jobs = claim(conn, settings, limit, instance_key=instance_key, job_ids=job_ids)
    result.claimed = len(jobs)
    for job in jobs:
        try:
            outcome = HANDLERS[job.job_type](conn, settings, job, embedder)
            commit_if_idle(conn)
            result.done += 1
        except Exception as exc:  # any failure is recorded and retried
            rollback_if_open(conn)
            log.warning("outbox job %s (%s %s) failed: %s", job.id, job.job_type,
                        job.subject_id, exc)
            error = f"{type(exc).__name__}: {exc}"
            mark_failed(conn, settings, job, error)
            outcome = JobOutcome(job.id, job.job_type, job.subject_id, "failed", error=error)
            result.failed += 1
        result.outcomes.append(outcome)
    return result


def process_outbox_until_idle(conn: psycopg.Connection, settings: Settings, *,
                              batch: int = 100, max_batches: int = 20) -> OutboxResult:
    """Batches of :func:`process_outbox` until fewer than ``batch`` jobs are due, at most
    ``max_batches`` (bounded work per call: the caller comes back for the rest)."""
    total = OutboxResult()
    for _ in range(max_batches):
        result = process_outbox(conn, settings, limit=batch)
        total += result
        if result.claimed < batch:
            break
    return total
