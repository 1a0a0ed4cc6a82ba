"""Canonical assertion retrieval: lexical + vector, fused by reciprocal rank per assertion.

Only approved, current, audience-visible assertions take part: status ``active``, review
state approved (policy or human), inside their validity window. Candidate, conflicted,
superseded, rejected, expired and tombstoned assertions never appear. The vector arm compares
only embeddings of the query's generation, and only assertions at least ``minScore`` alike
take part in it.

The vector arm scales like chunk search (retrieval/search.py): one statement counts the
assertions the caller may recall, no further than ``retrieval_exact_scan_max + 1`` (one
index-only scan per branch of the visibility rule, migration 0011), and that count gates two
sub-plans of which exactly one runs. A small visible set is scanned exactly (a filtered HNSW
scan can return fewer rows than asked for); a large one walks the generation's HNSW index
(half precision) with pgvector's iterative scan, joined to the assertion row so the scan
keeps going until enough rows pass the full recall rule. Both rank by the full-precision
distance. The statement runs under the search settings of retrieval/planner.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.retrieval.feedback.ranking import feedback_multiplier
from memory_platform.features.retrieval.filters import CURRENT_APPROVED_ASSERTION
from memory_platform.features.retrieval.fusion import reciprocal_rank
from memory_platform.features.retrieval.lexicon import generating_terms, rarity
from memory_platform.features.retrieval.planner import bounded_count, gate, planner_settings
from memory_platform.features.retrieval.question import QueryVector, embed_question, vector_of
from memory_platform.features.retrieval.ranking import about_another_subject, subject_boost
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.retrieval.terms import or_tsquery, query_terms
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, audience_branches, audience_predicate
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import (
    cached_active_generation,
    exact_distance,
    indexed_distance,
)


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


def _lexical(ctx: AccessContext, generating: list[str], terms: list[str], cap: int,
             scan_cap: int) -> sql.Composed:
    """The lexical arm: at most ``scan_cap`` assertions matching the ``generating`` terms
    (whoever asks: the audience filter comes after the bounded scan), the recallable ones
    ranked by all ``terms``."""
    return sql.SQL("""
        SELECT a.id
          FROM (SELECT * FROM agent_memory_assertions a
                 WHERE a.assertion_tsv @@ {generating} LIMIT {scan_cap}) a
         WHERE {visible}
         ORDER BY ts_rank(a.assertion_tsv, {ranked}, 0) DESC, a.id
         LIMIT {cap}
    """).format(generating=or_tsquery(generating), scan_cap=sql.Literal(scan_cap),
                visible=recallable_assertion(ctx), ranked=or_tsquery(terms),
                cap=sql.Literal(cap))


def _visible_count(ctx: AccessContext, bound: int) -> sql.Composed:
    """How many assertions ``ctx`` may recall, counted no further than ``bound``. A channel
    assertion both of the caller's thread and owned by the caller counts twice: an
    over-count only tips the gate towards the index."""
    return bounded_count([
        sql.SQL("(SELECT 1 FROM agent_memory_assertions a"
                " WHERE a.instance_key = {instance} AND {branch} AND {approved})").format(
            instance=sql.Literal(ctx.instance_key), branch=branch,
            approved=CURRENT_APPROVED_ASSERTION)
        for branch in audience_branches(ctx, "a")
    ], bound)


def _nearest_arms(ctx: AccessContext, key: str, dims: int, cap: int,
                  exact_max: int) -> tuple[sql.Composed, sql.Composed]:
    """The ``cap`` recallable assertions nearest to the query vector ``qv``, with their
    full-precision distance, by the exact and the HNSW arm (:func:`planner.gate` runs
    one); the HNSW scan goes on until ``cap`` joined rows pass the recall rule."""
    candidates = sql.SQL("""
        SELECT a.id, {distance} AS distance
          FROM agent_memory_assertion_embeddings e
          JOIN agent_memory_assertions a
            ON a.instance_key = e.instance_key AND a.id = e.assertion_id
         WHERE e.embedding_key = {key} AND {visible}
    """).format(distance=exact_distance("e", dims, sql.Placeholder("qv")),
                key=sql.Literal(key),  # a literal: it selects the partial HNSW index
                visible=recallable_assertion(ctx))
    arm = sql.SQL("{candidates} AND {gate} ORDER BY {order} LIMIT {cap}")
    return (arm.format(candidates=candidates, gate=gate(True, exact_max),
                       order=sql.SQL("distance"), cap=sql.Literal(cap)),
            arm.format(candidates=candidates, gate=gate(False, exact_max),
                       order=indexed_distance("e", dims, sql.Placeholder("qv")),
                       cap=sql.Literal(cap)))


def _semantic(ctx: AccessContext, key: str, dims: int, cap: int, min_similarity: float,
              exact_max: int) -> sql.Composed:
    """The vector arm: the nearest recallable assertions at least ``min_similarity`` alike,
    nearest first. The floor applies after the arms' LIMIT (the same rows, as similarity
    falls with distance): inside the HNSW arm it would keep the iterative scan walking the
    index for a query that nothing stored resembles."""
    exact, approximate = _nearest_arms(ctx, key, dims, cap, exact_max)
    return sql.SQL("""
        WITH visible_count AS MATERIALIZED ({count})
        SELECT nearest.id
          FROM (({exact}) UNION ALL ({approximate})) nearest
         WHERE 1 - nearest.distance >= {floor}
         ORDER BY nearest.distance
    """).format(count=_visible_count(ctx, exact_max + 1), exact=exact,
                approximate=approximate, floor=sql.Literal(min_similarity))


def _semantic_ids(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                  question: QueryVector, cap: int) -> list[UUID]:
    """The vector arm's ranking; empty when the query has no vector of the instance's
    active generation (another model configured, or the provider failing)."""
    active = cached_active_generation(conn, ctx.instance_key)
    vector = vector_of(question, active.generation_key if active else None)
    if vector is None:
        return []
    statement = _semantic(ctx, question.generation_key, question.dimensions, cap,
                          settings.retrieval_min_score, settings.retrieval_exact_scan_max)
    with planner_settings(conn, max(settings.retrieval_hnsw_ef_search, cap)):
        return [r[0] for r in conn.execute(parameter_safe(statement), {"qv": vector})]


def search_assertions(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    query: str,
    *,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
    question: QueryVector | None = None,
    subject_refs: Mapping[str, str] | None = None,
) -> list[AssertionHit]:
    """The best ``limit`` (default ``retrieval_top_k``) assertions ``ctx`` may recall for
    ``query``: the lexical and the vector ranking fused by reciprocal rank, times the feedback
    multiplier; with ``subject_refs`` team assertions about another subject are left out and
    matching ones boosted (retrieval/ranking.py). ``question`` is the query's embedding,
    computed before the caller took ``conn``; without it the query is embedded with
    ``embedder`` (default: the configured provider) before the first statement. Common
    words generate lexical candidates only when no word of the query is selective
    (retrieval/lexicon.py)."""
    if question is None:
        question = embed_question(embedder or get_provider(settings), query)
    limit = limit or settings.retrieval_top_k
    cap = max(limit * 4, 24)
    terms = query_terms(query)
    generating = generating_terms(rarity(conn, ctx.instance_key, terms), settings)
    lexical = ([r[0] for r in conn.execute(
        _lexical(ctx, generating, terms, cap, settings.retrieval_lexical_scan_cap))]
               if generating else [])

    semantic = _semantic_ids(conn, settings, ctx, question, cap)

    ranks: dict[UUID, list[int | None]] = {}
    for arm, ids in enumerate((lexical, semantic)):
        for rank, ident in enumerate(ids, start=1):
            ranks.setdefault(ident, [None, None])[arm] = rank
    if not ranks:
        return []
    rows = conn.execute(
        parameter_safe(sql.SQL("""
            SELECT a.id, a.assertion_text, a.assertion_type, a.audience_kind, a.audience_key,
                   a.confidence, a.subject_refs, a.injected_count,
                   a.cited_count + a.helpful_count, a.corrected_count + a.unhelpful_count
              FROM agent_memory_assertions a
             WHERE a.id = ANY(%s) AND {visible}
        """).format(visible=recallable_assertion(ctx))),
        (list(ranks),),
    ).fetchall()
    hits = []
    for (ident, text, kind, audience_kind, audience_key, confidence, refs, injected, cited,
         corrected) in rows:
        if subject_refs and about_another_subject(audience_kind, refs or {}, subject_refs):
            continue
        lexical_rank, vector_rank = ranks[ident]
        score = sum(reciprocal_rank(r) for r in (lexical_rank, vector_rank) if r is not None)
        if settings.feedback_ranking_enabled:
            score *= feedback_multiplier(injected, cited, corrected, settings)
        if subject_refs:
            score *= subject_boost(refs or {}, subject_refs)
        hits.append(AssertionHit(ident, text, kind, audience_kind, audience_key,
                                 float(confidence), refs or {}, score, lexical_rank,
                                 vector_rank))
    hits.sort(key=lambda h: h.score, reverse=True)
    return [replace(h, score=round(h.score, 6)) for h in hits[:limit]]


def visible_assertion_ids(conn: psycopg.Connection, ctx: AccessContext,
                          ids: list[UUID]) -> list[UUID]:
    """The subset of ``ids`` that ``ctx`` may recall (feedback only counts those)."""
    rows = conn.execute(
        parameter_safe(
            sql.SQL("SELECT a.id FROM agent_memory_assertions a WHERE a.id = ANY(%s) AND {}")
            .format(recallable_assertion(ctx))),
        (ids,),
    )
    return [r[0] for r in rows]
