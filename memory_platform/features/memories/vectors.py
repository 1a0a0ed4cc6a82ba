"""Deferred write vectors (``settings.write_vectors = "deferred"``, docs/deferred-vectors.md).

A deferred write computes its vectors before its transaction exactly like a synchronous one,
but its transaction stores the chunks (and the fact's assertion) keyword-only, like a
provider failure does, and writes ONE outbox job (``memory_embedding``, idempotency key
``memory_embedding:<memory id>``) that carries the vectors. :func:`apply_vectors` puts them
in place later, for many jobs in one statement per table, so the HNSW inserts leave the
write's transaction and the write's latency.

Applying is idempotent and harmless after the fact: only chunks that still exist and still
have no vector get one (a re-embedding that got there first wins; an erased memory has no
chunks left), and an assertion gets its vector only while it is still active (a rejected,
retracted or erased one gets none).

The outbox handler (projection/memory_vectors.py) and the API's in-process worker
(api/vector_worker.py) both call :func:`apply_vectors`; :func:`subscribe` lets that worker
wake up when a write has enqueued a job instead of waiting for its next poll.
"""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.memories.write_rules import embedding_provenance
from memory_platform.foundation.text import content_hash
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.generations import Generation

MEMORY_VECTORS = "memory_embedding"      # the job type (allowed since migration 0003)

_listeners: set[threading.Event] = set()
_listeners_lock = threading.Lock()


def subscribe(event: threading.Event) -> None:
    """``event`` is set whenever a write of this process has enqueued vectors."""
    with _listeners_lock:
        _listeners.add(event)


def unsubscribe(event: threading.Event) -> None:
    with _listeners_lock:
        _listeners.discard(event)


def notify_written() -> None:
    with _listeners_lock:
        for event in _listeners:
            event.set()


def _encode(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _decode(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def enqueue_vectors(conn: psycopg.Connection, instance_key: str, memory_id: uuid.UUID,
                    vectors: np.ndarray, chunk_count: int, generation: Generation,
                    provider: EmbeddingProvider,
                    assertion: tuple[uuid.UUID, str] | None,
                    context_vector: np.ndarray | None = None) -> None:
    """The job that will give ``memory_id``'s chunks (the first ``chunk_count`` rows of
    ``vectors``; a conversation turn's first chunk also its ``context_vector``) and, when
    given, the assertion ``(id, text)`` (the last row) their vectors. Call it inside the
    write's transaction."""
    payload: dict[str, Any] = {
        "generationId": generation.id, "generationKey": generation.generation_key,
        "provenance": embedding_provenance(generation.generation_key, provider.strategy,
                                           provider.model),
        "chunks": [_encode(vectors[i]) for i in range(chunk_count)],
    }
    if context_vector is not None:
        payload["context"] = _encode(context_vector)
    if assertion is not None:
        payload["assertion"] = {"id": str(assertion[0]),
                                "contentHash": content_hash(assertion[1]),
                                "vector": _encode(vectors[-1])}
    conn.execute(
        "INSERT INTO agent_memory_ingestion_outbox"
        " (instance_key, job_type, subject_id, idempotency_key, payload)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (instance_key, idempotency_key) DO NOTHING",
        (instance_key, MEMORY_VECTORS, memory_id, f"{MEMORY_VECTORS}:{memory_id}",
         Jsonb(payload)),
    )


@dataclass(frozen=True)
class VectorJob:
    instance_key: str
    memory_id: uuid.UUID
    payload: dict[str, Any]


@dataclass
class Applied:
    chunks: int = 0
    assertions: int = 0


_CHUNKS = """
    UPDATE agent_memory_chunks c
       SET embedding = v.embedding, generation_id = v.generation_id,
           embedding_key = v.embedding_key,
           metadata = c.metadata || jsonb_build_object('embedding', v.provenance),
           context_embedding = CASE WHEN c.context IS NOT NULL THEN v.context_embedding END
      FROM unnest(%s::text[], %s::uuid[], %s::int[], %s::vector[], %s::bigint[], %s::text[],
                  %s::jsonb[], %s::vector[])
           AS v(instance_key, memory_id, chunk_index, embedding, generation_id, embedding_key,
                provenance, context_embedding)
     WHERE c.instance_key = v.instance_key AND c.memory_id = v.memory_id
       AND c.chunk_index = v.chunk_index AND c.embedding IS NULL
"""

_ASSERTIONS = """
    INSERT INTO agent_memory_assertion_embeddings
           (instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash)
    SELECT v.instance_key, v.assertion_id, v.generation_id, v.embedding_key, v.embedding,
           v.content_hash
      FROM unnest(%s::text[], %s::uuid[], %s::bigint[], %s::text[], %s::vector[], %s::text[])
           AS v(instance_key, assertion_id, generation_id, embedding_key, embedding,
                content_hash)
      JOIN agent_memory_assertions a
        ON a.instance_key = v.instance_key AND a.id = v.assertion_id AND a.status = 'active'
    ON CONFLICT (assertion_id, generation_id) DO NOTHING
"""


def apply_vectors(conn: psycopg.Connection, jobs: Sequence[VectorJob]) -> Applied:
    """Write the vectors of ``jobs``: one UPDATE for all their chunks, one INSERT for all
    their assertions, in the caller's transaction."""
    chunk_rows: list[list[Any]] = [[] for _ in range(8)]
    assertion_rows: list[list[Any]] = [[] for _ in range(6)]
    for job in jobs:
        p = job.payload
        for index, encoded in enumerate(p.get("chunks", [])):
            for column, value in zip(chunk_rows, (
                    job.instance_key, job.memory_id, index, _decode(encoded),
                    p["generationId"], p["generationKey"], Jsonb(p["provenance"]),
                    _decode(p["context"]) if index == 0 and "context" in p else None),
                    strict=True):
                column.append(value)
        if assertion := p.get("assertion"):
            for column, value in zip(assertion_rows, (
                    job.instance_key, uuid.UUID(assertion["id"]), p["generationId"],
                    p["generationKey"], _decode(assertion["vector"]),
                    assertion["contentHash"]), strict=True):
                column.append(value)
    applied = Applied()
    if chunk_rows[0]:
        applied.chunks = conn.execute(_CHUNKS, chunk_rows).rowcount
    if assertion_rows[0]:
        applied.assertions = conn.execute(_ASSERTIONS, assertion_rows).rowcount
    return applied
