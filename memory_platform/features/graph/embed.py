"""Vectors of graph entities and claims in the instance's active embedding generation.

Step 7 of the extraction (specification, "Knowledge graph"): new or changed entities and
claims are embedded in batches, skipping items whose vector of the generation was made from
the same text (``content_hash``: the hash of the embedded text), so re-running a build costs
no provider call. Edges are reached through neighbour expansion and have no vector.

:func:`embed_graph_items` commits its own units (``db/units.py``): the provider is called
with no transaction open, then each batch is written in a short transaction. A provider that
fails never fails the build: the items stay keyword-only (``deferred``) and
:func:`embedding_backlog` finds them for the re-embedding worker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import (
    EmbeddingProvider,
    embed_or_defer,
    key_of,
    prepare_text,
)
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import ensure_generation


def entity_text(label: str, entity_type: str, aliases: Sequence[str]) -> str:
    """What an entity's vector is made of: its label, its aliases, its type."""
    also = f" (also: {', '.join(aliases)})" if aliases else ""
    return prepare_text(f"{label}{also} [{entity_type}]")


def claim_text(assertion_text: str) -> str:
    """What a claim's vector is made of: the assertion text it states."""
    return prepare_text(assertion_text)


def text_hash(text: str) -> str:
    """The ``content_hash`` of an embedded text: exact (after preprocessing), so any change a
    provider could see re-embeds, and only such a change."""
    return hashlib.sha256(text.encode()).hexdigest()


# --- what to embed ------------------------------------------------------------------------

# (table of the items, its embedding table, the item column there, the text columns).
_KINDS = {
    "entity": ("agent_knowledge_entities", "agent_knowledge_entity_embeddings", "entity_id"),
    "claim": ("agent_knowledge_claims", "agent_knowledge_claim_embeddings", "claim_id"),
}

_ENTITIES = """
    SELECT e.id, e.label, e.entity_type, e.aliases, v.content_hash
      FROM agent_knowledge_entities e
      LEFT JOIN agent_knowledge_entity_embeddings v
        ON v.entity_id = e.id AND v.instance_key = e.instance_key AND v.embedding_key = %s
     WHERE e.instance_key = %s AND e.id = ANY(%s) AND e.status = 'active'
     ORDER BY e.id
"""
_CLAIMS = """
    SELECT c.id, c.assertion_text, v.content_hash
      FROM agent_knowledge_claims c
      LEFT JOIN agent_knowledge_claim_embeddings v
        ON v.claim_id = c.id AND v.instance_key = c.instance_key AND v.embedding_key = %s
     WHERE c.instance_key = %s AND c.id = ANY(%s) AND c.status = 'active'
     ORDER BY c.id
"""


def _pending(conn: psycopg.Connection, instance_key: str, key: str,
             entity_ids: Iterable[UUID], claim_ids: Iterable[UUID]
             ) -> tuple[list[tuple[str, UUID, str]], int]:
    """(kind, id, text) of every item whose vector of ``key`` is missing or was made from
    another text, and how many already have the current one."""
    todo: list[tuple[str, UUID, str]] = []
    skipped = 0
    for row in conn.execute(_ENTITIES, (key, instance_key, list(entity_ids))):
        text = entity_text(row[1], row[2], row[3])
        if row[4] == text_hash(text):
            skipped += 1
        else:
            todo.append(("entity", row[0], text))
    for row in conn.execute(_CLAIMS, (key, instance_key, list(claim_ids))):
        text = claim_text(row[1])
        if row[2] == text_hash(text):
            skipped += 1
        else:
            todo.append(("claim", row[0], text))
    return todo, skipped


# Written only while the item still exists; a vector made from a text that changed meanwhile
# carries the old text's hash, so the next call sees the mismatch and embeds it again.
_WRITE = """
    INSERT INTO {vectors} (instance_key, {column}, generation_id, embedding_key, embedding,
                           content_hash)
    SELECT %s, %s, %s, %s, %s, %s
     WHERE EXISTS (SELECT 1 FROM {items} WHERE instance_key = %s AND id = %s)
    ON CONFLICT ({column}, generation_id)
    DO UPDATE SET embedding = EXCLUDED.embedding, content_hash = EXCLUDED.content_hash,
                  created_at = now()
"""


def _write(conn: psycopg.Connection, instance_key: str, generation, batch, vectors) -> None:
    for kind in _KINDS:
        items, table, column = _KINDS[kind]
        rows = [(instance_key, item_id, generation.id, generation.generation_key, vector,
                 text_hash(text), instance_key, item_id)
                for (k, item_id, text), vector in zip(batch, vectors, strict=True) if k == kind]
        if rows:
            statement = sql.SQL(_WRITE).format(vectors=sql.Identifier(table),
                                               column=sql.Identifier(column),
                                               items=sql.Identifier(items))
            with conn.cursor() as cur:
                cur.executemany(statement, rows)


def embed_graph_items(conn: psycopg.Connection, settings: Settings, instance_key: str,
                      entity_ids: Iterable[UUID], claim_ids: Iterable[UUID],
                      embedder: EmbeddingProvider | None = None) -> dict[str, int]:
    """Embed the given active entities and claims that lack a current vector.

    Answers ``{"embedded", "skipped", "deferred"}``: written, already current, left without
    a vector (the provider failed: the remaining batches are not tried, the outage would
    fail them too)."""
    require_idle(conn, "embed_graph_items")
    provider = embedder or get_provider(settings)
    todo, skipped = _pending(conn, instance_key, key_of(provider), entity_ids, claim_ids)
    commit_if_idle(conn)
    counts = {"embedded": 0, "skipped": skipped, "deferred": 0}
    generation = None
    size = settings.graph_embed_batch
    for start in range(0, len(todo), size):
        batch = todo[start:start + size]
        vectors = embed_or_defer(provider, [text for _, _, text in batch], "graph embedding")
        if vectors is None:
            counts["deferred"] = len(todo) - start
            break
        if generation is None:
            generation = ensure_generation(conn, instance_key, provider)
            commit_if_idle(conn)
        with committed_unit(conn):
            _write(conn, instance_key, generation, batch, vectors)
        counts["embedded"] += len(batch)
    return counts


# --- the backlog --------------------------------------------------------------------------

_BACKLOG = """
    SELECT i.id FROM {items} i
     WHERE i.instance_key = %s AND i.status = 'active'
       AND NOT EXISTS (SELECT 1 FROM {vectors} v
                        WHERE v.{column} = i.id AND v.embedding_key = %s)
     ORDER BY i.id
     LIMIT %s
"""


def embedding_backlog(conn: psycopg.Connection, instance_key: str, key: str,
                      limit: int) -> tuple[list[UUID], list[UUID]]:
    """Active entities and claims of the instance without a vector of generation ``key``
    (at most ``limit`` ids in all, entities first): what re-embedding still has to do."""
    found: dict[str, list[UUID]] = {}
    left = limit
    for kind, (items, table, column) in _KINDS.items():
        statement = sql.SQL(_BACKLOG).format(items=sql.Identifier(items),
                                             vectors=sql.Identifier(table),
                                             column=sql.Identifier(column))
        found[kind] = ([row[0] for row in conn.execute(statement, (instance_key, key, left))]
                       if left > 0 else [])
        left -= len(found[kind])
    return found["entity"], found["claim"]


def reembed_graph(conn: psycopg.Connection, settings: Settings, instance_key: str, *,
                  embedder: EmbeddingProvider | None = None,
                  limit: int = 1000) -> dict[str, int]:
    """The graph's share of the re-embedding backlog: up to ``limit`` active entities and
    claims of the instance without a vector of the provider's generation get one (after a
    model switch, or after an embedding outage during a build). Self-committing; a provider
    failure leaves the rest ``deferred``. Returns the counts of :func:`embed_graph_items`."""
    require_idle(conn, "reembed_graph")
    provider = embedder or get_provider(settings)
    with committed_unit(conn):
        entity_ids, claim_ids = embedding_backlog(conn, instance_key, key_of(provider), limit)
    if not entity_ids and not claim_ids:
        return {"embedded": 0, "skipped": 0, "deferred": 0}
    return embed_graph_items(conn, settings, instance_key, entity_ids, claim_ids,
                             embedder=provider)
