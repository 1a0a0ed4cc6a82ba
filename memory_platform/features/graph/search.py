"""Hybrid knowledge-graph retrieval: the entities, claims and edges that answer a question.

Two arms per item kind (entities, claims), all four in ONE statement:

* lexical: the question's terms (retrieval/terms.py; common words generate candidates only
  when no word is selective, retrieval/lexicon.py) against entity labels, aliases and
  subject-ref values, claim predicates and values (migration 0019) and claim texts
  (``claim_tsv``). Each arm reads at most ``retrieval_lexical_scan_cap`` full-text matches
  whoever asks, then filters them by audience (a caller who sees nothing cannot make the
  server walk every instance's matches) and ranks the first ``retrieval_keyword_match_cap``
  visible ones;
* vector: entity and claim embeddings of the instance's ACTIVE generation (the key is a
  literal, so the generation's partial HNSW index matches). As in chunk search
  (retrieval/planner.py) a bounded count of the rows the caller may see picks an exact scan
  of a small audience or the HNSW index with pgvector's iterative scan; candidates no more
  alike than the provider's ``similarity_floor`` are noise and dropped.

Every arm filters instance, visibility (``access.graph_predicate``), active status and, for
claims, the validity window in SQL before its LIMIT. The ranks are fused per item id by
reciprocal rank (``graph_rrf_k``); edges are then expanded from the top
``graph_expand_entities`` fused entities (a second, bounded statement). Claims and edges lose
score with age: ``max(floor, 0.5 ** (ageDays / halfLife))`` from their latest evidence (else
``updated_at``); the factor is returned, never written.

Without a usable question vector (provider down, no active generation, another generation,
the vector statement failing) the search answers from the lexical arms alone, with the same
result contract and ``lexical_only`` set; each reason is logged once per process.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.graph.edges import edges_around
from memory_platform.features.retrieval.lexicon import CLAIMS, generating_terms, rarity
from memory_platform.features.retrieval.planner import bounded_count, planner_settings
from memory_platform.features.retrieval.question import QueryVector, embed_question
from memory_platform.features.retrieval.statements import ShapeCache
from memory_platform.features.retrieval.terms import query_terms
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import (
    AccessContext,
    channel_keys,
    context_params,
    graph_branches,
    graph_predicate,
    placeholder,
)
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import (
    cached_active_generation,
    exact_distance,
    indexed_distance,
)

log = logging.getLogger(__name__)

LIMIT_MAX = 100

# The documents of migration 0019 (stored, GIN-indexed).
ENTITY_DOCUMENT = "{a}.search_tsv"
CLAIM_TERMS = "{a}.terms_tsv"
# Entity documents and claim terms hold simple, English and German lexemes; claim_tsv
# English and German ones (0006).
_ALL_CONFIGS = ("(to_tsquery('simple', {t}) || to_tsquery('english', {t})"
                " || to_tsquery('german', {t}))")
_TEXT_CONFIGS = "(to_tsquery('english', {t}) || to_tsquery('german', {t}))"

_CURRENT_CLAIM = ("{a}.status = 'active' AND ({a}.valid_from IS NULL OR {a}.valid_from <= now())"
                  " AND ({a}.valid_to IS NULL OR {a}.valid_to > now())")

_logged: set[str] = set()


@dataclass(frozen=True)
class EntityHit:
    id: UUID
    label: str
    entity_type: str
    aliases: list[str]
    visibility: str
    subject_refs: dict[str, Any]
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    similarity: float | None

    def as_json(self) -> dict[str, Any]:
        return {"id": str(self.id), "label": self.label, "entityType": self.entity_type,
                "aliases": self.aliases, "visibility": self.visibility,
                "subjectRefs": self.subject_refs, "score": self.score,
                "lexicalRank": self.lexical_rank, "vectorRank": self.vector_rank,
                "similarity": self.similarity}


@dataclass(frozen=True)
class ClaimHit:
    id: UUID
    subject_id: UUID
    subject_label: str
    predicate: str
    object_id: UUID | None
    object_label: str | None
    object_value: str | None
    text: str
    confidence: float
    visibility: str
    valid_from: str | None
    valid_to: str | None
    score: float
    lexical_rank: int | None
    vector_rank: int | None
    similarity: float | None
    decay_factor: float | None  # None: decay disabled

    def as_json(self) -> dict[str, Any]:
        out = {"id": str(self.id), "subjectId": str(self.subject_id),
               "subject": self.subject_label, "predicate": self.predicate,
               "objectId": str(self.object_id) if self.object_id else None,
               "object": self.object_label, "value": self.object_value, "text": self.text,
               "confidence": self.confidence, "visibility": self.visibility,
               "validFrom": self.valid_from, "validTo": self.valid_to, "score": self.score,
               "lexicalRank": self.lexical_rank, "vectorRank": self.vector_rank,
               "similarity": self.similarity}
        if self.decay_factor is not None:
            out["decayFactor"] = self.decay_factor
        return out


@dataclass(frozen=True)
class EdgeHit:
    id: UUID
    source_id: UUID
    source_label: str
    relation_type: str
    target_id: UUID
    target_label: str
    confidence: float
    visibility: str
    via_entity_id: UUID  # the expanded entity it was reached from
    score: float
    decay_factor: float | None

    def as_json(self) -> dict[str, Any]:
        out = {"id": str(self.id), "sourceId": str(self.source_id),
               "source": self.source_label, "relationType": self.relation_type,
               "targetId": str(self.target_id), "target": self.target_label,
               "confidence": self.confidence, "visibility": self.visibility,
               "viaEntityId": str(self.via_entity_id), "score": self.score}
        if self.decay_factor is not None:
            out["decayFactor"] = self.decay_factor
        return out


@dataclass
class KnowledgeResult:
    entities: list[EntityHit] = field(default_factory=list)
    claims: list[ClaimHit] = field(default_factory=list)
    edges: list[EdgeHit] = field(default_factory=list)
    lexical_only: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"entities": [e.as_json() for e in self.entities],
                "claims": [c.as_json() for c in self.claims],
                "edges": [e.as_json() for e in self.edges],
                "lexicalOnly": self.lexical_only}


def decay_factor(age_days: float | None, settings: Settings) -> float | None:
    """``max(floor, 0.5 ** (ageDays / halfLife))``; None when decay is disabled. A row
    without any activity date, or dated in the future, has not decayed."""
    if not settings.graph_decay_enabled:
        return None
    age = max(0.0, age_days or 0.0)
    return max(settings.graph_decay_floor,
               math.pow(0.5, age / settings.graph_decay_half_life_days))


def _lexical_only_because(reason: str) -> None:
    if reason not in _logged:
        _logged.add(reason)
        log.warning("knowledge graph search is lexical-only: %s (logged once per process)",
                    reason)


# --- the search statement ----------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    lexical: bool
    key: str | None  # the active generation's key; None: no vector arms
    dims: int
    cap: int
    scan_cap: int
    match_cap: int
    exact_max: int
    floor: float


def _tsq(template: str, role: str) -> sql.Composable:
    return sql.SQL(template).format(t=sql.Placeholder(role))


def _expr(template: str, alias: str) -> sql.Composable:
    return sql.SQL(template).format(a=sql.Identifier(alias))


def _visible(ctx: AccessContext, alias: str, kind: str) -> sql.Composable:
    current = (_expr(_CURRENT_CLAIM, alias) if kind == "claim"
               else sql.SQL("{}.status = 'active'").format(sql.Identifier(alias)))
    return sql.SQL("{} AND {}").format(graph_predicate(ctx, alias, placeholder), current)


_TABLES = {"entity": ("agent_knowledge_entities", "agent_knowledge_entity_embeddings",
                      "entity_id"),
           "claim": ("agent_knowledge_claims", "agent_knowledge_claim_embeddings", "claim_id")}


def _visible_count(ctx: AccessContext, kind: str, bound: int) -> sql.Composable:
    """How many active rows of ``kind`` the caller may see, no further than ``bound``: one
    index scan per branch of the rule (migration 0019's audience indexes)."""
    table = sql.Identifier(_TABLES[kind][0])
    return bounded_count([
        sql.SQL("(SELECT 1 FROM {table} k WHERE k.instance_key = {instance}"
                " AND k.status = 'active' AND {branch})").format(
            table=table, instance=sql.Placeholder("instance"), branch=branch)
        for branch in graph_branches(ctx, "k", placeholder)
    ], bound)


def _lexical_arm(ctx: AccessContext, kind: str, plan: _Plan) -> sql.Composable:
    if kind == "entity":
        matches = sql.SQL("{} @@ {}").format(_expr(ENTITY_DOCUMENT, "x"),
                                             _tsq(_ALL_CONFIGS, "generating"))
        rank = sql.SQL("ts_rank({}, {}, 0)").format(_expr(ENTITY_DOCUMENT, "x"),
                                                    _tsq(_ALL_CONFIGS, "ranked"))
    else:
        matches = sql.SQL("(x.claim_tsv @@ {} OR {} @@ {})").format(
            _tsq(_TEXT_CONFIGS, "generating"), _expr(CLAIM_TERMS, "x"),
            _tsq(_ALL_CONFIGS, "generating"))
        rank = sql.SQL("ts_rank(x.claim_tsv, {}, 0) + ts_rank({}, {}, 0)").format(
            _tsq(_TEXT_CONFIGS, "ranked"), _expr(CLAIM_TERMS, "x"),
            _tsq(_ALL_CONFIGS, "ranked"))
    # The GIN index alone finds the matches, at most scan_cap of them whoever asks; the
    # audience, status and validity filters come after that bounded read, and the first
    # match_cap visible ones are ranked (as in chunk search: a question of common words
    # costs no more than that).
    return sql.SQL("""
        SELECT x.id, row_number() OVER (ORDER BY {rank} DESC, x.id) AS rank
          FROM (SELECT * FROM (SELECT * FROM {table} x WHERE {matches} LIMIT {scan_cap}) x
                 WHERE {visible} LIMIT {match_cap}) x
         ORDER BY rank LIMIT {cap}
    """).format(rank=rank, table=sql.Identifier(_TABLES[kind][0]), matches=matches,
                scan_cap=sql.Literal(plan.scan_cap), visible=_visible(ctx, "x", kind),
                match_cap=sql.Literal(plan.match_cap), cap=sql.Literal(plan.cap))


def _vector_arm(ctx: AccessContext, kind: str, plan: _Plan) -> sql.Composable:
    """The exact and the HNSW arm (the gate runs one), nearest first by the full-precision
    distance; the HNSW scan goes on until ``cap`` joined rows pass the filters."""
    table, vectors, column = _TABLES[kind]
    assert plan.key is not None
    common = sql.SQL("""
        SELECT x.id, {distance} AS distance
          FROM {vectors} v
          JOIN {table} x ON x.instance_key = v.instance_key AND x.id = v.{column}
         WHERE v.embedding_key = {key} AND v.instance_key = {instance} AND {visible}
    """).format(distance=exact_distance("v", plan.dims, sql.Placeholder("qv")),
                vectors=sql.Identifier(vectors), table=sql.Identifier(table),
                column=sql.Identifier(column),
                key=sql.Literal(plan.key),  # a literal: it selects the partial HNSW index
                instance=sql.Placeholder("instance"), visible=_visible(ctx, "x", kind))
    arm = sql.SQL("({common} AND {gate} ORDER BY {order} LIMIT {cap})")
    count = sql.Identifier(f"visible_{kind}")
    exact = arm.format(common=common, cap=sql.Literal(plan.cap), order=sql.SQL("distance"),
                       gate=_gate(count, True, plan.exact_max))
    approximate = arm.format(common=common, cap=sql.Literal(plan.cap),
                             order=indexed_distance("v", plan.dims, sql.Placeholder("qv")),
                             gate=_gate(count, False, plan.exact_max))
    return sql.SQL("""
        SELECT nearest.id, row_number() OVER (ORDER BY nearest.distance, nearest.id) AS rank,
               1 - nearest.distance AS similarity
          FROM ({exact} UNION ALL {approximate}) nearest
         WHERE 1 - nearest.distance > {floor}
    """).format(exact=exact, approximate=approximate, floor=sql.Literal(plan.floor))


def _gate(count: sql.Identifier, exact: bool, exact_max: int) -> sql.Composable:
    """The one-time condition of an arm (as planner.gate, over this statement's own count
    of the item kind): the exact arm runs for at most ``exact_max`` visible rows."""
    return sql.SQL("(SELECT n FROM {}) {} {}").format(
        count, sql.SQL("<=" if exact else ">"), sql.Literal(exact_max))


def _candidates(kind: str, plan: _Plan) -> sql.Composable:
    parts = []
    if plan.lexical:
        parts.append(sql.SQL("SELECT id, rank AS lexical_rank, NULL::bigint AS vector_rank,"
                             " NULL::float8 AS similarity FROM {}").format(
            sql.Identifier(f"lexical_{kind}")))
    if plan.key is not None:
        parts.append(sql.SQL("SELECT id, NULL::bigint, rank, similarity FROM {}").format(
            sql.Identifier(f"vector_{kind}")))
    return sql.SQL("""
        SELECT id, min(lexical_rank) AS lexical_rank, min(vector_rank) AS vector_rank,
               max(similarity) AS similarity
          FROM ({}) arms GROUP BY id
    """).format(sql.SQL(" UNION ALL ").join(parts))


_ENTITY_ROWS = """
    SELECT 'entity', c.id, c.lexical_rank, c.vector_rank, c.similarity, NULL::float8,
           jsonb_build_object('label', e.label, 'entityType', e.entity_type,
                              'aliases', to_jsonb(e.aliases), 'visibility', e.visibility_scope,
                              'subjectRefs', e.subject_refs)
      FROM ({candidates}) c
      JOIN agent_knowledge_entities e ON e.id = c.id
"""
_CLAIM_ROWS = """
    SELECT 'claim', c.id, c.lexical_rank, c.vector_rank, c.similarity,
           extract(epoch FROM now() - coalesce(
               (SELECT max(ev.created_at) FROM agent_knowledge_evidence ev
                 WHERE ev.claim_id = k.id AND ev.instance_key = k.instance_key),
               k.updated_at)) / 86400.0,
           jsonb_build_object('subjectId', k.subject_entity_id, 'subject', s.label,
                              'predicate', k.predicate, 'objectId', k.object_entity_id,
                              'object', o.label, 'value', k.object_value,
                              'text', k.assertion_text, 'confidence', k.confidence,
                              'visibility', k.visibility_scope, 'validFrom', k.valid_from,
                              'validTo', k.valid_to)
      FROM ({candidates}) c
      JOIN agent_knowledge_claims k ON k.id = c.id
      JOIN agent_knowledge_entities s
        ON s.instance_key = k.instance_key AND s.id = k.subject_entity_id
      LEFT JOIN agent_knowledge_entities o
        ON o.instance_key = k.instance_key AND o.id = k.object_entity_id
"""


_STATEMENTS = ShapeCache()


def _shape(ctx: AccessContext) -> tuple[bool, bool, bool]:
    """What of the caller decides the statement's text: which branches of the rule apply."""
    return bool(ctx.user_id), ctx.has_team_access, bool(channel_keys(ctx))


def _statement(ctx: AccessContext, plan: _Plan) -> sql.Composable:
    """Both arms of both kinds, then each candidate's details, in one statement (its text
    depends on the caller's shape and the plan only: every value is a placeholder)."""
    ctes: list[sql.Composable] = []
    for kind in ("entity", "claim"):
        if plan.key is not None:
            ctes.append(sql.SQL("{} AS MATERIALIZED ({})").format(
                sql.Identifier(f"visible_{kind}"),
                _visible_count(ctx, kind, plan.exact_max + 1)))
        if plan.lexical:
            ctes.append(sql.SQL("{} AS MATERIALIZED ({})").format(
                sql.Identifier(f"lexical_{kind}"), _lexical_arm(ctx, kind, plan)))
        if plan.key is not None:
            ctes.append(sql.SQL("{} AS MATERIALIZED ({})").format(
                sql.Identifier(f"vector_{kind}"), _vector_arm(ctx, kind, plan)))
    return sql.SQL("WITH {ctes} {entities} UNION ALL {claims}").format(
        ctes=sql.SQL(", ").join(ctes),
        entities=sql.SQL(_ENTITY_ROWS).format(candidates=_candidates("entity", plan)),
        claims=sql.SQL(_CLAIM_ROWS).format(candidates=_candidates("claim", plan)))


_EDGES = """
    SELECT g.id, g.source_entity_id, s.label, g.relation_type, g.target_entity_id, t.label,
           g.confidence, g.visibility_scope, anchor.id,
           extract(epoch FROM now() - coalesce(
               (SELECT max(ev.created_at) FROM agent_knowledge_evidence ev
                 WHERE ev.edge_id = g.id AND ev.instance_key = g.instance_key),
               g.updated_at)) / 86400.0
      {around}
     WHERE {visible}
"""


# --- the search --------------------------------------------------------------------------


def knowledge_search(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    query: str,
    *,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
    question: QueryVector | None = None,
    explain: list[str] | None = None,
) -> KnowledgeResult:
    """The best ``limit`` (default ``graph_search_limit``) entities, claims and edges ``ctx``
    may see for ``query`` (see the module docstring). ``question`` is the query's embedding
    (retrieval/question.py), computed before the caller took ``conn``; without it the query
    is embedded with ``embedder`` (default: the configured provider) before the first
    statement. ``explain`` (a list) receives the EXPLAIN ANALYZE plan of the search
    statement (tests of the read bounds, tuning)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty", details={"field": "query"})
    limit = limit or settings.graph_search_limit
    if not 1 <= limit <= LIMIT_MAX:
        raise InvalidInput(f"limit must be 1-{LIMIT_MAX}", details={"field": "limit"})
    if question is None:
        question = embed_question(embedder or get_provider(settings), query)
    terms = query_terms(query)
    generating = generating_terms(rarity(conn, ctx.instance_key, terms, CLAIMS), settings)
    key = _vector_key(conn, ctx, question)
    plan = _Plan(lexical=bool(generating), key=key, dims=question.dimensions,
                 cap=max(settings.graph_search_candidates, limit),
                 scan_cap=settings.retrieval_lexical_scan_cap,
                 match_cap=max(settings.retrieval_keyword_match_cap,
                               settings.graph_search_candidates),
                 exact_max=settings.retrieval_exact_scan_max,
                 floor=question.similarity_floor)
    # Every value of the caller is a parameter, so the statement's text depends only on the
    # context's shape and the plan: psycopg prepares it, and repeated searches skip planning.
    values = {**context_params(ctx), "generating": " | ".join(generating),
              "ranked": " | ".join(terms or generating),
              "qv": question.vector if key is not None else None}
    rows = _run(conn, settings, ctx, plan, values, explain)
    if rows is None:  # the vector statement failed: the lexical arms alone
        plan = replace(plan, key=None)
        rows = _run(conn, settings, ctx, plan, values, explain) or []
    result = _fuse(rows, settings, limit)
    result.lexical_only = plan.key is None
    result.edges = _expand(conn, settings, ctx, result.entities, limit)
    return result


def _vector_key(conn: psycopg.Connection, ctx: AccessContext,
                question: QueryVector) -> str | None:
    """The generation key the vector arms search, or None (and why, logged once)."""
    if question.vector is None:
        _lexical_only_because("no question vector (embedding provider failed or blank query)")
        return None
    active = cached_active_generation(conn, ctx.instance_key)
    if active is None:
        _lexical_only_because("the instance has no active embedding generation")
        return None
    if active.generation_key != question.generation_key:
        _lexical_only_because("the question's embedding is not of the active generation")
        return None
    return active.generation_key


def _run(conn: psycopg.Connection, settings: Settings, ctx: AccessContext, plan: _Plan,
         values: dict[str, Any], explain: list[str] | None) -> list[tuple] | None:
    """The search statement's rows; None when its vector arms failed (the caller retries
    without them)."""
    if not plan.lexical and plan.key is None:
        return []
    statement = _STATEMENTS.get((_shape(ctx), plan), lambda: _statement(ctx, plan))
    params = statement.params(values)
    try:
        with planner_settings(conn, max(settings.retrieval_hnsw_ef_search, plan.cap)):
            if explain is not None:
                explain.extend(row[0] for row in psycopg.RawCursor(conn).execute(
                    b"EXPLAIN (ANALYZE, BUFFERS) " + statement.text, params))
            return psycopg.RawCursor(conn).execute(statement.text, params,
                                                   prepare=True).fetchall()
    except psycopg.Error as exc:
        if plan.key is None or conn.closed:
            raise
        _lexical_only_because(f"the vector query failed ({type(exc).__name__})")
        return None


def _rrf(rank: int | None, k: int) -> float:
    return 1.0 / (k + rank) if rank is not None else 0.0


def _fuse(rows: list[tuple], settings: Settings, limit: int) -> KnowledgeResult:
    k = settings.graph_rrf_k
    entities: list[EntityHit] = []
    claims: list[ClaimHit] = []
    for kind, ident, lexical, vector, similarity, age_days, d in rows:
        fused = _rrf(lexical, k) + _rrf(vector, k)
        sim = round(float(similarity), 6) if similarity is not None else None
        if kind == "entity":
            entities.append(EntityHit(ident, d["label"], d["entityType"], d["aliases"] or [],
                                      d["visibility"], d["subjectRefs"] or {},
                                      round(fused, 6), lexical, vector, sim))
            continue
        factor = decay_factor(float(age_days), settings)
        claims.append(ClaimHit(
            ident, UUID(d["subjectId"]), d["subject"], d["predicate"],
            UUID(d["objectId"]) if d["objectId"] else None, d["object"], d["value"],
            d["text"], round(float(d["confidence"]), 4), d["visibility"], d["validFrom"],
            d["validTo"], round(fused * (factor if factor is not None else 1.0), 6),
            lexical, vector, sim, round(factor, 4) if factor is not None else None))
    entities.sort(key=lambda h: (-h.score, str(h.id)))
    claims.sort(key=lambda h: (-h.score, str(h.id)))
    return KnowledgeResult(entities[:limit], claims[:limit])


def _expand(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
            entities: list[EntityHit], limit: int) -> list[EdgeHit]:
    """Active, visible edges touching the top ``graph_expand_entities`` fused entities (both
    endpoints active), scored by the entity they were reached from, times their decay."""
    anchors = entities[:settings.graph_expand_entities]
    if not anchors:
        return []
    statement = _STATEMENTS.get(("edges", _shape(ctx)), lambda: sql.SQL(_EDGES).format(
        around=edges_around(sql.Placeholder("anchors"), sql.Placeholder("instance")),
        visible=graph_predicate(ctx, "g", placeholder)))
    anchor_score = {a.id: a.score for a in anchors}
    best: dict[UUID, EdgeHit] = {}
    params = statement.params({**context_params(ctx), "anchors": [a.id for a in anchors]})
    for (ident, source, source_label, relation, target, target_label, confidence, scope,
         via, age_days) in psycopg.RawCursor(conn).execute(statement.text, params,
                                                          prepare=True):
        factor = decay_factor(float(age_days), settings)
        score = round(anchor_score[via] * (factor if factor is not None else 1.0), 6)
        if ident not in best or score > best[ident].score:
            best[ident] = EdgeHit(ident, source, source_label, relation, target, target_label,
                                  round(float(confidence), 4), scope, via, score,
                                  round(factor, 4) if factor is not None else None)
    ranked = sorted(best.values(), key=lambda e: (-e.score, -e.confidence, str(e.id)))
    return ranked[:limit]
