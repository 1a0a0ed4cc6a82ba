"""Switching the embedding model on a live instance: the new generation, its indexes, active.

:func:`switch_generation` is the first half of a model switch (``memory-platform embeddings
switch``); the second half is the re-embedding backlog (:mod:`.reembed`, the graph's share
in ``graph/embed.py``, both driven by ``maintenance/reembedding.py``).

The switch never blocks a write (invariant 6):

1. The new generation key's partial HNSW indexes are built with ``CREATE INDEX
   CONCURRENTLY`` before the generation is registered. A plain ``CREATE INDEX`` holds a
   SHARE lock on the whole table while it scans it (every chunk row, even though none
   matches the new key's predicate yet), and that lock stops every insert and update for the
   scan's duration. A concurrent build waits for running transactions instead of stopping
   new ones. A build that failed half way leaves an INVALID index behind; it is dropped and
   built again.
2. The generation is registered and made the instance's active one
   (:func:`~memory_platform.shared.embeddings.generations.register_generation`: one short
   transaction under its advisory lock; its ``CREATE INDEX IF NOT EXISTS`` finds the indexes
   already there).

From then on searches embed their query with the new model and compare it only with rows of
the new key; rows still carrying the old key (or none) answer through the keyword arm until
the backlog converts them. Old vectors stay in their generation (assertion, entity and claim
vectors of the old generation keep their rows) and are never compared with the new ones.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from memory_platform.foundation.db.units import require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider, key_of
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import (
    VECTOR_INDEXES,
    Generation,
    register_generation,
)

_VALID = """
    SELECT i.indisvalid
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace
"""


def build_indexes_concurrently(conn: psycopg.Connection, key: str, dimensions: int) -> list[str]:
    """Build the partial HNSW indexes of generation ``key`` without blocking writes (see the
    module text). Idempotent: a valid index is kept, an invalid one (an interrupted build) is
    rebuilt. Needs an idle connection; answers the names of the indexes it built."""
    require_idle(conn, "build_indexes_concurrently")
    built: list[str] = []
    autocommit = conn.autocommit
    conn.autocommit = True  # CONCURRENTLY cannot run inside a transaction block
    try:
        for index in VECTOR_INDEXES:
            name = index.name(key)
            row = conn.execute(_VALID, (name,)).fetchone()
            if row is not None and row[0]:
                continue
            if row is not None:
                conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                    sql.Identifier(name)))
            conn.execute(index.create(key, dimensions, concurrently=True))
            built.append(name)
    finally:
        conn.autocommit = autocommit
    return built


def switch_generation(conn: psycopg.Connection, settings: Settings,
                      provider: EmbeddingProvider | str, *,
                      instance_key: str | None = None) -> Generation:
    """Make ``provider``'s generation the active one of ``instance_key`` (default the
    settings' instance): its indexes built concurrently, then registered and activated (the
    previous active generation is retired; its vectors stay). ``provider`` is a provider or
    the name of one ('hash', 'local', 'openai': configured by ``settings``). Idempotent:
    switching to the active generation changes nothing. Needs an idle connection (the index
    builds run outside a transaction)."""
    if isinstance(provider, str):
        provider = get_provider(settings.model_copy(update={"embedding_provider": provider}))
    instance_key = instance_key or settings.instance_key
    build_indexes_concurrently(conn, key_of(provider), provider.dimensions)
    return register_generation(conn, instance_key, provider.provider, provider.model,
                               provider.dimensions, provider.preprocessing, activate=True)
