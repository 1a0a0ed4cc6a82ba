"""Canonical assertion retrieval: lexical + vector, fused by reciprocal rank per assertion.

Only approved, current, audience-visible assertions take part: status ``active``, review
state approved (policy or human), inside their validity window. Candidate, conflicted,
superseded, rejected, expired and tombstoned assertions never appear. The vector arm compares
only embeddings of the query's generation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.access import AccessContext, audience_predicate
from memory_platform.embeddings import EmbeddingError, EmbeddingProvider, get_provider
from memory_platform.embeddings.generations import (
    cached_active_generation,
    exact_distance,
    generation_key,
)
from memory_platform.retrieval.feedback import feedback_multiplier
from memory_platform.retrieval.filters import CURRENT_APPROVED_ASSERTION
from memory_platform.retrieval.search import or_tsquery, query_terms
from memory_platform.settings import Settings

log = logging.getLogger(__name__)

RRF_K = 60

@dataclass(frozen=True)
class AssertionHit:
    id: UUID
    text: str
    assertion_type: str
    audience_kind: str
    audience_key: str
    confidence: float
    subject_refs: dict[str, Any]
    score: float
    lexical_rank: int | None
    vector_rank: int | None


def recallable_assertion(ctx: AccessContext, alias: str = "a") -> sql.Composed:
    """Condition over an assertion row: visible to ``ctx`` and eligible for recall."""
    return sql.SQL("{} AND {}").format(audience_predicate(ctx, alias), CURRENT_APPROVED_ASSERTION)


def _lexical(ctx: AccessContext, terms: list[str], cap: int) -> sql.Composed:
    tsq = or_tsquery(terms)
    return sql.SQL("""
        SELECT a.id
          FROM agent_memory_assertions a
         WHERE a.assertion_tsv @@ {tsq} AND {visible}
         ORDER BY ts_rank(a.assertion_tsv, {tsq}, 0) DESC, a.id
         LIMIT {cap}
    """).format(tsq=tsq, visible=recallable_assertion(ctx), cap=sql.Literal(cap))


def _semantic(ctx: AccessContext, key: str, dims: int, cap: int,
              min_similarity: float) -> sql.Composed:
    # Assertion sets per audience are small: an exact scan (the full-precision distance is
    # not what the shared HNSW index holds, whose filtered scans can return fewer than `cap`
    # rows). Only assertions at least `min_similarity` alike take part: the arm ranks
    # everything else.
    distance = exact_distance("e", dims, sql.Placeholder("qv"))
    return sql.SQL("""
        SELECT a.id
          FROM agent_memory_assertion_embeddings e
          JOIN agent_memory_assertions a
            ON a.instance_key = e.instance_key AND a.id = e.assertion_id
         WHERE e.embedding_key = {key} AND {visible} AND 1 - {distance} >= {floor}
         ORDER BY {distance}
         LIMIT {cap}
    """).format(key=sql.Literal(key), distance=distance, visible=recallable_assertion(ctx),
                floor=sql.Literal(min_similarity), cap=sql.Literal(cap))


def search_assertions(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    query: str,
    *,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
) -> list[AssertionHit]:
    limit = limit or settings.retrieval_top_k
    cap = max(limit * 4, 24)
    terms = query_terms(query)
    lexical = [r[0] for r in conn.execute(_lexical(ctx, terms, cap))] if terms else []

    semantic: list[UUID] = []
    provider = embedder or get_provider(settings)
    key = generation_key(provider.provider, provider.model, provider.dimensions,
                         provider.preprocessing)
    active = cached_active_generation(conn, ctx.instance_key)
    if active is not None and active.generation_key == key:
        try:
            vector = provider.embed_query(query)
        except EmbeddingError as exc:
            log.warning("query embedding failed; lexical-only assertions: %s", exc)
        else:
            semantic = [r[0] for r in conn.execute(
                _semantic(ctx, key, provider.dimensions, cap, settings.retrieval_min_score),
                {"qv": vector})]

    ranks: dict[UUID, list[int | None]] = {}
    for arm, ids in enumerate((lexical, semantic)):
        for rank, ident in enumerate(ids, start=1):
            ranks.setdefault(ident, [None, None])[arm] = rank
    if not ranks:
        return []
    rows = conn.execute(
        sql.SQL("""
            SELECT a.id, a.assertion_text, a.assertion_type, a.audience_kind, a.audience_key,
                   a.confidence, a.subject_refs, a.injected_count, a.cited_count,
                   a.corrected_count
              FROM agent_memory_assertions a
             WHERE a.id = ANY(%s) AND {visible}
        """).format(visible=recallable_assertion(ctx)),
        (list(ranks),),
    ).fetchall()
    hits = []
    for (ident, text, kind, audience_kind, audience_key, confidence, refs, injected, cited,
         corrected) in rows:
        lexical_rank, vector_rank = ranks[ident]
        score = sum(1.0 / (RRF_K + r) for r in (lexical_rank, vector_rank) if r is not None)
        if settings.feedback_ranking_enabled:
            score *= feedback_multiplier(injected, cited, corrected, settings)
        hits.append(AssertionHit(ident, text, kind, audience_kind, audience_key,
                                 float(confidence), refs or {}, score, lexical_rank,
                                 vector_rank))
    hits.sort(key=lambda h: h.score, reverse=True)
    return [replace(h, score=round(h.score, 6)) for h in hits[:limit]]


def visible_assertion_ids(conn: psycopg.Connection, ctx: AccessContext,
                          ids: list[UUID]) -> list[UUID]:
    """The subset of ``ids`` that ``ctx`` may recall (feedback only counts those)."""
    rows = conn.execute(
        sql.SQL("SELECT a.id FROM agent_memory_assertions a WHERE a.id = ANY(%s) AND {}")
        .format(recallable_assertion(ctx)),
        (ids,),
    )
    return [r[0] for r in rows]
