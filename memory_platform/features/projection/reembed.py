"""The re-embedding backlog: bring vectors to the instance's target generation.

A write never waits for a vector (invariant 6): when the provider fails, the row is stored
keyword-only; when the model changes, old vectors stay in their own generation and are never
compared with the new one. This module works the backlog off in small batches:

* chunks whose ``embedding`` is missing or belongs to another generation key get a vector of
  the target generation, and ``metadata.embedding`` records who made it {key, strategy, model};
* active, approved assertions without an ``agent_memory_assertion_embeddings`` row of the
  target generation get one (older generations' rows stay: they are never compared).

Each batch is one committed unit (``db/units.py``) that locks its rows with ``SKIP LOCKED``
before calling the provider, so concurrent workers (Dagster runs, CLI, the API) split the
backlog instead of colliding; a batch's rows are locked only for that batch's provider call
and its conversions are visible to everyone once it returns. A run touches only the instance
it is given. A provider failure rolls the batch back (rows untouched) and ends the call with
the error.
Converted rows leave the backlog, so running it again is a no-op. :func:`reembed_backfill` is
one bounded run; :func:`reembed_until_done` repeats runs until the backlog is empty.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from memory_platform.features.memories.turns import context_passage
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingError, EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import Generation, ensure_generation
from memory_platform.shared.ledger.assertions import store_assertion_vectors
from memory_platform.shared.ledger.recall import APPROVED_REVIEW_STATES

log = logging.getLogger(__name__)

# Backlog counts stop here: an estimate for progress output, not a full scan of a huge table.
BACKLOG_COUNT_CAP = 1_000_000
_NIL = uuid.UUID(int=0)


@dataclass
class ReembedResult:
    instance_key: str
    generation_key: str
    chunks_converted: int = 0
    assertions_embedded: int = 0
    remaining_chunks: int = 0  # counted up to BACKLOG_COUNT_CAP
    remaining_assertions: int = 0
    batches: int = 0
    error: str | None = None

    @property
    def converted(self) -> int:
        return self.chunks_converted + self.assertions_embedded

    @property
    def remaining(self) -> int:
        return self.remaining_chunks + self.remaining_assertions

    def followed_by(self, later: ReembedResult) -> ReembedResult:
        """This run and a ``later`` one as one: counts summed; the backlog, generation and
        error are the later run's."""
        return ReembedResult(
            later.instance_key, later.generation_key,
            chunks_converted=self.chunks_converted + later.chunks_converted,
            assertions_embedded=self.assertions_embedded + later.assertions_embedded,
            remaining_chunks=later.remaining_chunks,
            remaining_assertions=later.remaining_assertions,
            batches=self.batches + later.batches, error=later.error)

    def as_dict(self) -> dict[str, object]:
        return {"instance_key": self.instance_key, "generation_key": self.generation_key,
                "chunks_converted": self.chunks_converted,
                "assertions_embedded": self.assertions_embedded,
                "remaining_chunks": self.remaining_chunks,
                "remaining_assertions": self.remaining_assertions,
                "batches": self.batches, "error": self.error}


# A chunk waits for a vector of the target key; a conversation turn's first chunk also for its
# context vector (memories/turns.py; turns written before migration 0032 get theirs here).
_CHUNK_BACKLOG = """
    FROM agent_memory_chunks c
   WHERE c.instance_key = %(instance)s
     AND (c.embedding IS NULL OR c.embedding_key IS DISTINCT FROM %(key)s
          OR (c.context IS NOT NULL AND c.context_embedding IS NULL AND c.chunk_index = 0
              AND EXISTS (SELECT 1 FROM agent_memories t
                           WHERE t.instance_key = c.instance_key AND t.id = c.memory_id
                             AND t.previous_memory_id IS NOT NULL)))
"""
# The turn before a turn's first chunk (its context vector embeds it); NULL for other chunks.
_PREVIOUS_TURN = """
    (SELECT p.content FROM agent_memories t
       JOIN agent_memories p ON p.instance_key = t.instance_key AND p.id = t.previous_memory_id
      WHERE c.context IS NOT NULL AND c.chunk_index = 0
        AND t.instance_key = c.instance_key AND t.id = c.memory_id)
"""

_ASSERTION_BACKLOG = """
    FROM agent_memory_assertions a
   WHERE a.instance_key = %(instance)s
     AND a.status = 'active'
     AND a.review_state = ANY(%(approved)s)
     AND NOT EXISTS (SELECT 1
                       FROM agent_memory_assertion_embeddings e
                      WHERE e.assertion_id = a.id
                        AND e.generation_id = %(generation)s)
"""


def _params(generation: Generation, **extra: object) -> dict[str, object]:
    return {"instance": generation.instance_key, "key": generation.generation_key,
            "generation": generation.id, "approved": list(APPROVED_REVIEW_STATES), **extra}


def backlog(conn: psycopg.Connection, generation: Generation,
            cap: int = BACKLOG_COUNT_CAP) -> tuple[int, int]:
    """(chunks, assertions) still waiting for a vector of ``generation``, each counted to
    ``cap``."""
    params = _params(generation, cap=cap)
    chunks = conn.execute(f"SELECT count(*) FROM (SELECT 1 {_CHUNK_BACKLOG} LIMIT %(cap)s) s",  # noqa: S608
                          params).fetchone()[0]
    assertions = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 {_ASSERTION_BACKLOG} LIMIT %(cap)s) s",  # noqa: S608
        params).fetchone()[0]
    return chunks, assertions


def _embed_chunks(conn: psycopg.Connection, provider: EmbeddingProvider,
                  generation: Generation, size: int, after: int) -> tuple[int, int]:
    """One committed unit: lock up to ``size`` backlog chunks after id ``after`` (skipping
    rows another worker holds), embed, update. Answers (converted, last id)."""
    with committed_unit(conn), conn.cursor() as cur:
        rows = cur.execute(
            f"SELECT c.id, c.content, {_PREVIOUS_TURN} {_CHUNK_BACKLOG}"
            " AND c.id > %(after)s ORDER BY c.id LIMIT %(size)s FOR UPDATE OF c SKIP LOCKED",
            _params(generation, after=after, size=size),
        ).fetchall()
        if not rows:
            return 0, after
        passages = {chunk_id: context_passage(previous, content)
                    for chunk_id, content, previous in rows if previous is not None}
        vectors = provider.embed_documents([content for _, content, _ in rows]
                                           + list(passages.values()))
        context_vectors = dict(zip(passages, vectors[len(rows):], strict=True))
        provenance = Jsonb({"key": generation.generation_key, "strategy": provider.strategy,
                            "model": provider.model})
        cur.executemany(
            "UPDATE agent_memory_chunks"
            "   SET embedding = %s, generation_id = %s, embedding_key = %s,"
            "       metadata = metadata || jsonb_build_object('embedding', %s::jsonb),"
            "       context_embedding = %s"
            " WHERE id = %s",
            [(vectors[i], generation.id, generation.generation_key, provenance,
              context_vectors.get(chunk_id), chunk_id)
             for i, (chunk_id, _, _) in enumerate(rows)],
        )
    return len(rows), rows[-1][0]


def _embed_assertions(conn: psycopg.Connection, provider: EmbeddingProvider,
                      generation: Generation, size: int, after: uuid.UUID
                      ) -> tuple[int, uuid.UUID]:
    """Like :func:`_embed_chunks` for assertions. ``FOR NO KEY UPDATE`` is the weakest lock
    two workers conflict on; it does not block the key-share locks of new evidence rows."""
    with committed_unit(conn), conn.cursor() as cur:
        rows = cur.execute(
            f"SELECT a.id, a.assertion_text {_ASSERTION_BACKLOG} AND a.id > %(after)s"
            " ORDER BY a.id LIMIT %(size)s FOR NO KEY UPDATE OF a SKIP LOCKED",
            _params(generation, after=after, size=size),
        ).fetchall()
        if not rows:
            return 0, after
        vectors = provider.embed_documents([text for _, text in rows])
        store_assertion_vectors(conn, generation.instance_key, generation,
                                [(assertion_id, text, vectors[i])
                                 for i, (assertion_id, text) in enumerate(rows)])
    return len(rows), rows[-1][0]


def reembed_backfill(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
    instance_key: str | None = None,
    batch_size: int | None = None,
    progress: Callable[[ReembedResult], None] | None = None,
) -> ReembedResult:
    """Convert up to ``limit`` (default ``settings.reembed_run_limit``) backlog rows of
    ``instance_key`` (the caller's instance: an API key's own; only the CLI falls back to
    the settings' instance) to the configured provider's generation, assertions first (few,
    and each is a recallable fact), then chunks, in batches of ``batch_size`` (default
    ``settings.reembed_batch_size``). Rows of other instances are never read or written.
    Needs a connection outside a transaction (autocommit or idle): every batch commits on
    its own, and nothing stays open between batches or after the run. ``progress`` sees the
    result so far after every committed batch."""
    require_idle(conn, "reembed_backfill")
    provider = embedder or get_provider(settings)
    instance = instance_key or settings.instance_key
    size = batch_size or settings.reembed_batch_size
    register_vector(conn)
    commit_if_idle(conn)
    with committed_unit(conn):
        generation = ensure_generation(conn, instance, provider)
    result = ReembedResult(instance, generation.generation_key)
    budget = max(0, settings.reembed_run_limit if limit is None else limit)
    try:
        after_assertion = _NIL
        while budget > 0:
            done, after_assertion = _embed_assertions(conn, provider, generation,
                                                      min(size, budget), after_assertion)
            if not done:
                break
            result.assertions_embedded += done
            result.batches += 1
            budget -= done
            if progress:
                progress(result)
        after_chunk = 0
        while budget > 0:
            done, after_chunk = _embed_chunks(conn, provider, generation, min(size, budget),
                                              after_chunk)
            if not done:
                break
            result.chunks_converted += done
            result.batches += 1
            budget -= done
            if progress:
                progress(result)
    except EmbeddingError as exc:
        log.warning("re-embedding stopped, the batch is untouched: %s", exc)
        result.error = str(exc)
    result.remaining_chunks, result.remaining_assertions = backlog(conn, generation)
    commit_if_idle(conn)
    return result


def _totals_after(before: ReembedResult, progress: Callable[[ReembedResult], None] | None
                  ) -> Callable[[ReembedResult], None] | None:
    """A run's progress callback that reports the totals of the earlier runs plus this one."""
    if progress is None:
        return None
    return lambda current: progress(before.followed_by(current))


def reembed_until_done(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
    instance_key: str | None = None,
    progress: Callable[[ReembedResult], None] | None = None,
) -> ReembedResult:
    """Repeat :func:`reembed_backfill` runs of ``limit`` rows (default
    ``settings.reembed_run_limit``) until the backlog is empty, a run converts nothing (the
    rest is held by other workers) or the provider fails. Answers the totals of all runs with
    the last run's backlog and error; ``progress`` sees the totals after every batch. Needs a
    connection outside a transaction, like :func:`reembed_backfill`."""
    provider = embedder or get_provider(settings)
    totals = ReembedResult(instance_key or settings.instance_key, generation_key="")
    while True:
        last = reembed_backfill(conn, settings, limit=limit, embedder=provider,
                                instance_key=instance_key,
                                progress=_totals_after(totals, progress))
        totals = totals.followed_by(last)
        if last.error or not last.converted or not last.remaining:
            return totals
