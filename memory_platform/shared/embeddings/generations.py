"""Embedding generations: which model made a vector, and the indexes that search them.

A generation is one (provider, model, dimensions, preprocessing) identity, registered per
instance; at most one is active per instance. Its ``generation_key`` is stamped on every
vector row, and vector search only compares rows with the query's key.

Vector indexes are partial HNSW expression indexes, one per generation key and embedding
table: ``((embedding::halfvec(N)) halfvec_cosine_ops) WHERE embedding_key = '<key>'``. They are
keyed by the model identity rather than the per-instance generation id, so a thousand
instances on one model share one index instead of building a thousand.

The index holds half-precision copies (the rows keep full precision, and every score a
search reports is computed from them): an HNSW walk is bound by the memory it reads, one
element page and one vector per visited neighbour, and half the bytes made the filtered
search arm ~17% cheaper at 1536 d with the same recall, halved the index (783 -> 391 MB per
100,000 chunks), and lifts the indexable dimensions from 2,000 to 4,000 (migration 0010).
Every provider here emits unit vectors, far inside half precision's range.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memory_platform.foundation.db.connection import database_identity
from memory_platform.shared.embeddings.base import generation_key, key_of

EMBEDDING_TABLES = (
    "agent_memory_chunks",
    "agent_memory_assertion_embeddings",
    "agent_knowledge_entity_embeddings",
    "agent_knowledge_claim_embeddings",
)


@dataclass(frozen=True)
class Generation:
    id: int
    instance_key: str
    provider: str
    model: str
    dimensions: int
    preprocessing: str
    generation_key: str
    status: str


def index_name(table: str, key: str, kind: str = "hnsw") -> str:
    return f"{table}_{kind}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _distance(column: str, vector: str, alias: str, dimensions: int,
              query: sql.Composable) -> sql.Composable:
    # ``column`` is one of this module's names, never input: written bare, as the indexes'
    # expressions are (a plan matches an index by its expression).
    return sql.SQL("({alias}.{column}::{vector}({d}) <=> {q}::{vector}({d}))").format(
        alias=sql.Identifier(alias), column=sql.SQL(column), vector=sql.SQL(vector),
        d=sql.Literal(dimensions), q=query)


def indexed_distance(alias: str, dimensions: int, query: sql.Composable,
                     column: str = "embedding") -> sql.Composable:
    """The cosine distance the HNSW indexes hold (half precision); ORDER BY it to use them.
    ``column``: ``embedding``, or a chunk's ``context_embedding`` (a turn's context vector)."""
    return _distance(column, "halfvec", alias, dimensions, query)


def exact_distance(alias: str, dimensions: int, query: sql.Composable,
                   column: str = "embedding") -> sql.Composable:
    """The cosine distance at the stored (full) precision: scores and exact scans."""
    return _distance(column, "vector", alias, dimensions, query)


@dataclass(frozen=True)
class VectorIndex:
    """One partial HNSW index per generation key: over ``column`` of ``table``, for the rows
    of that key (and ``only``). Every index of a key is built from this one definition
    (:func:`ensure_vector_indexes`, the concurrent build of a model switch,
    projection/switch.py), so ``IF NOT EXISTS`` recognises an index another path built."""

    table: str
    column: str = "embedding"
    kind: str = "hnsw"  # the name's middle part
    only: str = ""  # a further predicate (SQL text, no value)

    def name(self, key: str) -> str:
        return index_name(self.table, key, self.kind)

    def create(self, key: str, dimensions: int, *, concurrently: bool = False
               ) -> sql.Composable:
        return sql.SQL(
            "CREATE INDEX {how}IF NOT EXISTS {name} ON {table} USING hnsw "
            "(({column}::halfvec({dims})) halfvec_cosine_ops) WHERE embedding_key = {key}{only}"
        ).format(how=sql.SQL("CONCURRENTLY " if concurrently else ""),
                 name=sql.Identifier(self.name(key)), table=sql.Identifier(self.table),
                 column=sql.Identifier(self.column), dims=sql.Literal(dimensions),
                 key=sql.Literal(key), only=sql.SQL(self.only))


VECTOR_INDEXES = (
    *(VectorIndex(table) for table in EMBEDDING_TABLES),
    # Conversation turns' context vectors (memories/turns.py; migration 0032 built these for
    # the generations registered before it).
    VectorIndex("agent_memory_chunks", "context_embedding", "ctx_hnsw",
                " AND context_embedding IS NOT NULL"),
)


def ensure_vector_indexes(conn: psycopg.Connection, key: str, dimensions: int) -> None:
    """Create the partial HNSW indexes of one generation key (idempotent)."""
    for index in VECTOR_INDEXES:
        conn.execute(index.create(key, dimensions))


_FIND = """
    SELECT id, instance_key, provider, model, dimensions, preprocessing, generation_key, status
      FROM agent_memory_embedding_generations
     WHERE instance_key = %s AND generation_key = %s
"""
_FIND_ACTIVE = """
    SELECT id, instance_key, provider, model, dimensions, preprocessing, generation_key, status
      FROM agent_memory_embedding_generations
     WHERE instance_key = %s AND status = 'active'
"""
_INSERT = """
    INSERT INTO agent_memory_embedding_generations
           (instance_key, provider, model, dimensions, preprocessing, generation_key, status)
    VALUES (%s, %s, %s, %s, %s, %s, 'building')
    RETURNING id, instance_key, provider, model, dimensions, preprocessing, generation_key, status
"""
_RETIRE_ACTIVE = """
    UPDATE agent_memory_embedding_generations
       SET status = 'retired', retired_at = now()
     WHERE instance_key = %s AND status = 'active'
"""
_ACTIVATE = """
    UPDATE agent_memory_embedding_generations
       SET status = 'active', activated_at = now(), retired_at = NULL
     WHERE id = %s
    RETURNING id, instance_key, provider, model, dimensions, preprocessing, generation_key, status
"""


def register_generation(
    conn: psycopg.Connection,
    instance_key: str,
    provider: str,
    model: str,
    dimensions: int,
    preprocessing: str = "v1",
    *,
    activate: bool = True,
) -> Generation:
    """Register (or find) a generation; make it the instance's active one if asked.

    Runs in one transaction under one advisory lock, so concurrent writers agree on a single
    active generation and never race on index creation (registration is rare)."""
    key = generation_key(provider, model, dimensions, preprocessing)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('embedding-generations', 0))")
        row = conn.execute(_FIND, (instance_key, key)).fetchone()
        if row is None:
            row = conn.execute(
                _INSERT, (instance_key, provider, model, dimensions, preprocessing, key)
            ).fetchone()
        if activate and row[7] != "active":
            conn.execute(_RETIRE_ACTIVE, (instance_key,))
            row = conn.execute(_ACTIVATE, (row[0],)).fetchone()
        ensure_vector_indexes(conn, key, dimensions)
    forget_active_generations()
    return Generation(*row)


def ensure_generation(conn: psycopg.Connection, instance_key: str, provider) -> Generation:
    """The instance's generation for ``provider`` (an EmbeddingProvider), registered and
    activated if it is not the active one yet (a model switch)."""
    key = key_of(provider)
    active = active_generation(conn, instance_key)
    if active is not None and active.generation_key == key:
        return active
    return register_generation(conn, instance_key, provider.provider, provider.model,
                               provider.dimensions, provider.preprocessing)


def active_generation(conn: psycopg.Connection, instance_key: str) -> Generation | None:
    row = conn.execute(_FIND_ACTIVE, (instance_key,)).fetchone()
    return Generation(*row) if row else None


# The read path asks for the active generation on every search; it changes only when a
# re-embedding switches models. Searches may use a cached answer for a few seconds (a switch
# made by another process shows after at most ACTIVE_CACHE_SECONDS; one made by this process
# at once): during that window the old generation's vectors still match their old key.
ACTIVE_CACHE_SECONDS = 5.0
_active_cache: dict[tuple, tuple[float, Generation | None]] = {}
_active_lock = threading.Lock()


def cached_active_generation(conn: psycopg.Connection, instance_key: str) -> Generation | None:
    key = (*database_identity(conn), instance_key)
    now = time.monotonic()
    with _active_lock:
        hit = _active_cache.get(key)
    if hit is not None and now - hit[0] < ACTIVE_CACHE_SECONDS:
        return hit[1]
    generation = active_generation(conn, instance_key)
    with _active_lock:
        if len(_active_cache) > 10_000:
            _active_cache.clear()
        _active_cache[key] = (now, generation)
    return generation


def forget_active_generations() -> None:
    with _active_lock:
        _active_cache.clear()
