"""Outbox side of deferred write vectors (memories/vectors.py): the ``memory_embedding``
handler, and :func:`drain`, which claims many such jobs and applies them in one transaction
(one UPDATE of all their chunks, one INSERT of all their assertion vectors, one mark-done).

``process_outbox`` (the Dagster outbox job: the safety net) runs the handler job by job; the
API's in-process worker (api/vector_worker.py) calls :func:`drain` every few hundred
milliseconds, which is what makes a deferred write vector-searchable within a second.
"""

from __future__ import annotations

import logging

import psycopg

from memory_platform.features.memories.vectors import MEMORY_VECTORS, VectorJob, apply_vectors
from memory_platform.features.projection.outbox import (
    HANDLERS,
    Job,
    JobOutcome,
    claim,
    mark_done,
    mark_failed,
)
from memory_platform.foundation.db.units import commit_if_idle, rollback_if_open
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider

log = logging.getLogger(__name__)


def _vector_job(job: Job) -> VectorJob:
    return VectorJob(job.instance_key, job.subject_id, job.payload)


def apply_memory_vectors(conn: psycopg.Connection, settings: Settings, job: Job,
                         embedder: EmbeddingProvider | None) -> JobOutcome:
    with conn.transaction():
        applied = apply_vectors(conn, [_vector_job(job)])
        mark_done(conn, job)
    outcome = "updated" if applied.chunks or applied.assertions else "absent"
    return JobOutcome(job.id, job.job_type, job.subject_id, outcome)


def drain(conn: psycopg.Connection, settings: Settings, limit: int = 200) -> int:
    """Claim up to ``limit`` due ``memory_embedding`` jobs and apply them in one committed
    transaction; how many were claimed. A failing batch marks each of its jobs failed (the
    outbox retries them with backoff, one by one)."""
    jobs = claim(conn, settings, limit, types=[MEMORY_VECTORS])
    if not jobs:
        return 0
    try:
        with conn.transaction():
            apply_vectors(conn, [_vector_job(job) for job in jobs])
            conn.execute(
                "UPDATE agent_memory_ingestion_outbox"
                " SET status = 'done', completed_at = clock_timestamp(), locked_at = NULL,"
                " last_error = NULL WHERE id = ANY(%s)", ([job.id for job in jobs],))
        commit_if_idle(conn)
    except Exception as exc:  # recorded on the jobs, retried by the outbox
        rollback_if_open(conn)
        log.warning("memory vector batch of %d jobs failed: %s", len(jobs), exc)
        for job in jobs:
            mark_failed(conn, settings, job, f"{type(exc).__name__}: {exc}")
    return len(jobs)


HANDLERS[MEMORY_VECTORS] = apply_memory_vectors
