"""Hybrid chunk search: the best visible memories for a question, in one statement.

This module composes and runs the statement; retrieval/ranking.py ranks its candidate rows
(``score = vectorWeight * vectorScore + keywordWeight * keywordScore``, both normalised over
the candidates, times the search's confidence, retrieval/scores.py). Every candidate gets
both real scores, whichever arm found it: its cosine similarity in the query's embedding
generation (chunks of other generations have none and compete by keyword only; a
conversation turn's also with its context vector and its neighbours' vectors) and its
keyword rank: per question word its ``ts_rank`` (normalisation 0) plus a share of the rank of
the chunk's conversation context, times the word's rarity weight (retrieval/lexicon.py), and
the share of the question's words it contains.

Candidates come from a keyword arm (the question's terms OR-ed over German and English
lexemes, retrieval/terms.py; common words only score, retrieval/lexicon.py; it reads at
most ``retrieval_lexical_scan_cap`` matches), a vector arm (an exact scan or the HNSW
index, retrieval/planner.py) and, for conversation turns, a second vector arm over their
context vectors, fed by the question's embedding, computed before any statement
(retrieval/question.py); the turns around a candidate turn join the candidates. Every arm
filters by the audience copy chunks carry; the statement's last part applies the full recall
rule (retrieval/filters.py). The statement text depends only on the caller's context shape:
it is composed once per shape and process and stays prepared. docs/architecture.md
("Retrieval") tells why it is built this way; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg import sql

from memory_platform.features.retrieval.criteria import Criteria, criteria_params, memory_condition
from memory_platform.features.retrieval.filters import ASSERTION_JOIN, recallable_memory
from memory_platform.features.retrieval.lexicon import (
    Rarity,
    generating_terms,
    rarity,
    selective_terms,
    term_weights,
)
from memory_platform.features.retrieval.planner import bounded_count, gate, planner_settings
from memory_platform.features.retrieval.question import QueryVector, embed_question, vector_of
from memory_platform.features.retrieval.ranking import Candidate, MemoryHit, candidate_row, rank
from memory_platform.features.retrieval.several import asks_for_several
from memory_platform.features.retrieval.stamping import RetrievalStamper, stamp_retrieved
from memory_platform.features.retrieval.statements import Numbered, ShapeCache
from memory_platform.features.retrieval.terms import query_terms, tsquery, words
from memory_platform.features.retrieval.when import asks_when, named_period
from memory_platform.foundation import tracing
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import (
    AccessContext,
    channel_keys,
    chunk_branches,
    chunk_predicate,
    context_params,
    placeholder,
)
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import (
    cached_active_generation,
    exact_distance,
    indexed_distance,
)

# --- the statement ----------------------------------------------------------------------
# Composed from the caller's context SHAPE only: every value is a placeholder named by its
# role (instance, user, channels: access.context_params; scopes, terms, generating, qv:
# search_memories), so one text serves every caller of a shape and stays prepared.


@dataclass(frozen=True)
class _Shape:
    """Everything the search statement's text depends on."""

    user: bool
    team: bool
    channels: bool
    scoped: bool
    keyword_arm: bool  # some words generate keyword candidates
    scored_terms: bool  # some words score
    key: str | None  # the query vector's generation; None: keyword only
    dims: int
    # A literal, unlike the keyword cap: with `LIMIT $n` the generic plan assumed a tenth of
    # the visible rows and sorted them all exactly instead of walking the HNSW index
    # (docs/benchmarks.md).
    vector_cap: int
    context_cap: int  # the context-vector arm's (conversation turns only)
    match_cap: int
    scan_cap: int
    exact_max: int
    criteria: Hashable | None = None  # the criteria's shape (retrieval/criteria.py)
    # Conversation turns: the turns around each candidate turn join the candidates, and
    # each turn's similarity is also taken with its neighbours' vectors added to its own
    # (settings.retrieval_turn_neighbour_vector_weight > 0; needs a query vector).
    neighbours: bool = False
    # Conversation turns' context vectors (memories/turns.py): a second vector arm finds turns
    # by them, and each turn's similarity mixes them in (settings.
    # retrieval_turn_context_vector_weight > 0; needs a query vector).
    context_vectors: bool = False


_STATEMENTS = ShapeCache()


def _statement(shape: _Shape, ctx: AccessContext, scopes: tuple[str, ...] | None,
               criteria: Criteria | None = None) -> Numbered:
    """The statement for ``shape``, composed once per process (``ctx``, ``scopes`` and
    ``criteria`` are of that shape: they decide which rule branches and filters appear, no
    value of theirs enters the text). Numbered placeholders spare psycopg parsing a 5 KB text
    per search."""
    return _STATEMENTS.get(shape, lambda: _compose(shape, ctx, scopes, criteria))


def _compose(shape: _Shape, ctx: AccessContext, scopes: tuple[str, ...] | None,
             criteria: Criteria | None = None) -> sql.Composable:
    visible = _chunk_filter(ctx, scopes, criteria)
    arms: list[sql.Composable] = []
    if shape.keyword_arm:
        arms.append(_keyword_arm(visible, shape.match_cap, shape.scan_cap))
    if shape.key is not None:
        arms_of = [("embedding", shape.vector_cap)]
        if shape.context_vectors:
            arms_of.append(("context_embedding", shape.context_cap))
        for column, cap in arms_of:
            arms.extend(_vector_arms(visible, shape.key, shape.dims, cap, shape.exact_max,
                                     _chunk_filter(ctx, scopes, criteria, semi_join=True),
                                     column))
    return _search_statement(ctx, scopes, arms, shape,
                             _visible_count(ctx, scopes, shape.exact_max + 1, criteria),
                             criteria)


def _bound_tsquery(role: str) -> sql.Composable:
    """The OR query over the words passed as parameter ``role`` ("a | b")."""
    return tsquery(sql.Placeholder(role))


def _vector_expr(dims: int, column: str = "embedding") -> sql.Composable:
    return exact_distance("c", dims, sql.Placeholder("qv"), column)


def _chunk_filter(ctx: AccessContext, scopes: tuple[str, ...] | None,
                  criteria: Criteria | None = None, semi_join: bool = False) -> sql.Composable:
    """The chunks an arm may return: recallable, visible to ``ctx`` by the audience copy
    they carry, within ``scopes`` when given, and of a memory that meets ``criteria`` when
    given (both narrow, never widen). ``semi_join``: the criteria as an EXISTS the planner
    may start from (the exact arm, which runs for a few matching chunks: a selective filter
    is found from the memories' side, e.g. their metadata GIN index)."""
    condition = _criteria_filter("c", criteria)
    if semi_join and criteria is not None:
        condition = sql.SQL(
            " AND EXISTS (SELECT 1 FROM agent_memories fm WHERE fm.instance_key = c.instance_key"
            " AND fm.id = c.memory_id AND {})").format(memory_condition(criteria, "fm"))
    return sql.SQL("c.recallable AND {}{}{}").format(chunk_predicate(ctx, "c", placeholder),
                                                     _scope_filter("c", scopes), condition)


def _criteria_filter(alias: str, criteria: Criteria | None) -> sql.Composable:
    """`` AND`` the chunk ``alias``'s memory meets ``criteria``: a probe of the memory's
    primary key per chunk the arm reads, before its LIMIT (the top-k is taken among the
    matches). A scalar subquery, not EXISTS: the planner cannot turn it into a join that
    first collects every memory meeting a broad filter (measured: 80-400 ms at 20,000
    memories); the arms stream, and the HNSW walk keeps going until enough chunks passed."""
    if criteria is None:
        return sql.SQL("")
    return sql.SQL(" AND coalesce((SELECT {condition} FROM agent_memories fm"
                   " WHERE fm.instance_key = {c}.instance_key AND fm.id = {c}.memory_id),"
                   " false)").format(c=sql.Identifier(alias),
                                     condition=memory_condition(criteria, "fm"))


def _scope_filter(alias: str, scopes: tuple[str, ...] | None) -> sql.Composable:
    if not scopes:
        return sql.SQL("")
    return sql.SQL(" AND {} = ANY({})").format(sql.Identifier(alias, "visibility_scope"),
                                              sql.Placeholder("scopes"))


def _keyword_arm(visible: sql.Composable, match_cap: int, scan_cap: int) -> sql.Composable:
    # The GIN index alone finds the matches (the inner LIMIT keeps the audience conditions
    # out of the index scan: ANDing the instance's audience bitmap costs more than it saves);
    # the chunks' own audience columns then filter them, no join before the LIMIT. At most
    # `scan_cap` matches are read whoever asks (a caller who sees few of them must not make
    # the scan visit every instance's matches), and the first `match_cap` visible ones are
    # ranked.
    # A conversation turn also matches by its context (the two turns before it,
    # memories/turns.py; the partial index holds only chunks with a context).
    return sql.SQL("""
        SELECT matches.id FROM (
            SELECT c.id, c.content_tsv, c.context_tsv
              FROM (SELECT * FROM agent_memory_chunks c
                     WHERE c.content_tsv @@ {tsq}
                        OR (c.context IS NOT NULL AND c.context_tsv @@ {tsq})
                     LIMIT {scan_cap}) c
             WHERE {visible}
             LIMIT {match_cap}
        ) matches
        ORDER BY {rank} DESC
        LIMIT {cap}
    """).format(tsq=_bound_tsquery("generating"), visible=visible,
                rank=_keyword_rank("matches", "generating"),
                scan_cap=sql.Literal(scan_cap), match_cap=sql.Literal(match_cap),
                cap=sql.Placeholder("keyword_cap"))


def _keyword_rank(alias: str, role: str) -> sql.Composable:
    """The keyword score of a chunk: over the question's words (the ``{role}_queries`` CTE,
    :func:`_term_queries`), each word's ``ts_rank`` (no length normalisation: a short turn
    is no weaker evidence than a long note) plus the weighted rank of the chunk's context
    (a conversation turn's, memories/turns.py), times the word's rarity weight
    (lexicon.term_weights): a name in every other turn counts less than a rare word."""
    return sql.SQL("""(SELECT coalesce(sum(t.weight * (ts_rank({a}.content_tsv, t.q, 0)
                                          + {w}::real * ts_rank({a}.context_tsv, t.q, 0))), 0)
                         FROM {queries} t)""").format(
        a=sql.Identifier(alias), queries=sql.Identifier(f"{role}_queries"),
        w=sql.Placeholder("context_weight"))


def _matched_share(alias: str, role: str) -> sql.Composable:
    """The share of the question's words (weighed by rarity) that the chunk ``alias``
    contains, a word found only in its context counting ``context_weight`` of one: an
    absolute measure of its keyword evidence, the same scale for every query (the keyword
    *rank* is only comparable within one)."""
    return sql.SQL("""(SELECT coalesce(sum(t.weight * CASE WHEN {a}.content_tsv @@ t.q THEN 1
                                                          WHEN {a}.context_tsv @@ t.q
                                                          THEN {w}::real ELSE 0 END)
                                    / nullif(sum(t.weight), 0), 0)
                         FROM {queries} t)""").format(
        a=sql.Identifier(alias), queries=sql.Identifier(f"{role}_queries"),
        w=sql.Placeholder("context_weight"))


def _term_queries(role: str) -> sql.Composable:
    """The CTE ``{role}_queries``: one full-text query per word of parameter ``{role}_list``
    (German and English lexemes) with its weight from ``{role}_weights``."""
    return sql.SQL("""{name} AS MATERIALIZED (
        SELECT {tsq} AS q, w.weight
          FROM unnest({words}::text[], {weights}::float8[]) AS w(word, weight))""").format(
        name=sql.Identifier(f"{role}_queries"), tsq=tsquery(sql.SQL("w.word")),
        words=sql.Placeholder(f"{role}_list"), weights=sql.Placeholder(f"{role}_weights"))


def _visible_count(ctx: AccessContext, scopes: tuple[str, ...] | None,
                   bound: int, criteria: Criteria | None = None) -> sql.Composable:
    """How many chunks ``ctx`` may see (of memories meeting ``criteria``), counted no
    further than ``bound``: a selective filter takes the exact arm, so a filtered search
    still finds its k matches. With criteria each branch reads at most ``4 * bound`` visible
    chunks (probing their memories): fewer than ``bound`` matches among them takes the exact
    arm too, which is exact whatever the count (only slower for a filter of middling
    selectivity), and the count stays a few milliseconds for any filter."""
    if criteria is None:
        return bounded_count([
            sql.SQL("(SELECT 1 FROM agent_memory_chunks c"
                    " WHERE c.instance_key = {instance} AND c.recallable AND {branch}{scopes})"
                    ).format(instance=sql.Placeholder("instance"), branch=branch,
                             scopes=_scope_filter("c", scopes))
            for branch in chunk_branches(ctx, "c", placeholder)
        ], bound)
    return bounded_count([
        sql.SQL("(SELECT 1 FROM (SELECT c.instance_key, c.memory_id FROM agent_memory_chunks c"
                " WHERE c.instance_key = {instance} AND c.recallable AND {branch}{scopes}"
                " LIMIT {read}) c WHERE true{criteria})"
                ).format(instance=sql.Placeholder("instance"), branch=branch,
                         scopes=_scope_filter("c", scopes), read=sql.Literal(4 * bound),
                         criteria=_criteria_filter("c", criteria))
        for branch in chunk_branches(ctx, "c", placeholder)
    ], bound)


def _vector_arms(visible: sql.Composable, key: str, dims: int, vector_cap: int,
                 exact_max: int, exact_visible: sql.Composable | None = None,
                 column: str = "embedding") -> list[sql.Composable]:
    """The exact and the HNSW arm over ``column`` (the chunks' vectors, or the turns'
    context vectors), of which :func:`planner.gate` runs exactly one (``exact_visible``: the
    exact arm's filter, when it differs)."""
    common = sql.SQL("""
        FROM agent_memory_chunks c
       WHERE c.embedding_key = {key} AND c.instance_key = {instance} AND {visible}{present}
    """)
    present = sql.SQL(" AND c.{} IS NOT NULL").format(sql.Identifier(column)) \
        if column != "embedding" else sql.SQL("")
    def where(condition: sql.Composable) -> sql.Composable:
        return common.format(key=sql.Literal(key),  # a literal: it selects the HNSW index
                             instance=sql.Placeholder("instance"), visible=condition,
                             present=present)
    cap = sql.Literal(vector_cap)
    arm = sql.SQL("SELECT c.id {common} AND {gate} ORDER BY {distance} LIMIT {cap}")
    exact = arm.format(common=where(exact_visible or visible), gate=gate(True, exact_max),
                       cap=cap, distance=_vector_expr(dims, column))
    approximate = arm.format(common=where(visible), gate=gate(False, exact_max), cap=cap,
                             distance=indexed_distance("c", dims, sql.Placeholder("qv"),
                                                       column))
    return [exact, approximate]


def _search_statement(ctx: AccessContext, scopes: tuple[str, ...] | None,
                      arms: list[sql.Composable], shape: _Shape,
                      visible_count: sql.Composable,
                      criteria: Criteria | None = None) -> sql.Composable:
    """Candidates of every arm, then their details and both real scores (one
    :class:`Candidate` per row), in one statement. The full recall rule (memory visibility,
    state, assertion approval and validity) is applied here: the chunk columns the arms
    filter on are only a copy."""
    vector_score = sql.SQL("NULL::float8")
    if shape.key is not None:
        vector_score = sql.SQL("CASE WHEN c.embedding_key = {key} THEN 1 - {d} END").format(
            key=sql.Literal(shape.key), d=_vector_expr(shape.dims))
    context_score = sql.SQL("NULL::float8")
    if shape.context_vectors and shape.key is not None:
        context_score = sql.SQL("CASE WHEN c.embedding_key = {key} THEN 1 - {d} END").format(
            key=sql.Literal(shape.key), d=_vector_expr(shape.dims, "context_embedding"))
    around_score, around_join = sql.SQL("NULL::float8"), sql.SQL("")
    if shape.neighbours and shape.key is not None:
        around_score, around_join = _around(shape.key, shape.dims)
    keyword_score = _keyword_rank("c", "terms") if shape.scored_terms else sql.SQL("0::real")
    matched = _matched_share("c", "terms") if shape.scored_terms else sql.SQL("0::real")
    candidates = sql.SQL(" UNION ").join(sql.SQL("({})").format(arm) for arm in arms)
    visible = sql.SQL("{}{}{}").format(
        recallable_memory(ctx, placeholder), _scope_filter("m", scopes),
        sql.SQL(" AND {}").format(memory_condition(criteria, "m")) if criteria else sql.SQL(""))
    queries = [_term_queries(role) for role, used in (("generating", shape.keyword_arm),
                                                      ("terms", shape.scored_terms)) if used]
    expanded, neighbours = sql.SQL(""), shape.neighbours and shape.key is not None
    if neighbours:
        candidates = sql.SQL("SELECT id FROM ({}) found").format(candidates)
        expanded = sql.SQL(", expanded AS MATERIALIZED ({})").format(_NEIGHBOURS_JOIN)
    return sql.SQL("""
        WITH {queries}visible_count AS MATERIALIZED ({visible_count}),
             {candidates_name} AS MATERIALIZED ({candidates}){expanded}
        SELECT c.id, c.memory_id, c.content, {vector_score} AS vector_score,
               {keyword_score} AS keyword_score, m.visibility_scope, m.audience_key,
               m.memory_scope, m.source_type, m.subject_refs::text, m.assertion_id,
               (c.metadata -> 'embedding')::text, m.created_at, m.occurred_at,
               m.previous_memory_id, c.context IS NOT NULL, length(c.content_tsv),
               coalesce(a.injected_count, 0),
               coalesce(a.cited_count, 0) + coalesce(a.helpful_count, 0),
               coalesce(a.corrected_count, 0) + coalesce(a.unhelpful_count, 0),
               {matched} AS matched,
               {context_score} AS context_score,
               {around_score} AS around_score, m.session_key
          FROM {source} candidates
          JOIN agent_memory_chunks c ON c.id = candidates.id
          JOIN agent_memories m ON m.instance_key = c.instance_key AND m.id = c.memory_id
          {join}{around_join}
         WHERE {visible}
    """).format(queries=sql.SQL("").join(sql.SQL("{}, ").format(q) for q in queries),
                visible_count=visible_count, candidates=candidates,
                vector_score=vector_score, keyword_score=keyword_score, join=ASSERTION_JOIN,
                visible=visible, around_score=around_score, around_join=around_join,
                context_score=context_score, matched=matched,
                candidates_name=sql.Identifier("found" if neighbours else "candidates"),
                expanded=expanded,
                source=sql.Identifier("expanded" if neighbours else "candidates"))


# The first chunk of the turn before / after the turn of chunk ``k`` (a turn's first chunk
# carries its context; migration 0017 indexes the look-up of the turn after by
# previous_memory_id). Only recallable chunks: a deleted or hidden turn lends nothing.
_TURN_BEFORE = """
    SELECT nc.id, nc.embedding, nc.embedding_key FROM agent_memories km
      JOIN agent_memory_chunks nc ON nc.instance_key = km.instance_key
                                 AND nc.memory_id = km.previous_memory_id
                                 AND nc.chunk_index = 0 AND nc.recallable
     WHERE km.instance_key = {k}.instance_key AND km.id = {k}.memory_id
       AND km.previous_memory_id IS NOT NULL"""
_TURN_AFTER = """
    SELECT nc.id, nc.embedding, nc.embedding_key FROM agent_memories nm
      JOIN agent_memory_chunks nc ON nc.instance_key = nm.instance_key AND nc.memory_id = nm.id
                                 AND nc.chunk_index = 0 AND nc.recallable
     WHERE nm.instance_key = {k}.instance_key AND nm.previous_memory_id = {k}.memory_id"""


def _neighbour_rows(alias: str) -> sql.Composable:
    """The turns before and after the turn of chunk ``alias`` (id, embedding)."""
    k = sql.Identifier(alias)
    return sql.SQL("({} UNION ALL {})").format(sql.SQL(_TURN_BEFORE).format(k=k),
                                              sql.SQL(_TURN_AFTER).format(k=k))


# The arms' candidates (CTE ``found``) and, for each candidate turn, the turns before and
# after it (an answer whose question matched; a statement whose reply did). The statement's
# last part applies the full recall rule to them as to every candidate.
_NEIGHBOURS_JOIN = sql.SQL("""
        SELECT found.id FROM found
        UNION
        SELECT around.id FROM found
          JOIN agent_memory_chunks k ON k.id = found.id AND k.context IS NOT NULL
          CROSS JOIN LATERAL {rows} around
    """).format(rows=_neighbour_rows("k"))


def _around(key: str, dims: int) -> tuple[sql.Composable, sql.Composable]:
    """A turn's similarity to the question with the vectors of the turns before and after
    it added to its own (the direction of the three turns together), and its join."""
    join = sql.SQL("""
          LEFT JOIN LATERAL (
              SELECT sum(n.embedding::vector({d})) AS vectors
                FROM {rows} n WHERE n.embedding_key = {key}
          ) around ON c.context IS NOT NULL AND c.embedding_key = {key}""").format(
        d=sql.Literal(dims), rows=_neighbour_rows("c"), key=sql.Literal(key))
    score = sql.SQL("CASE WHEN around.vectors IS NOT NULL THEN 1 - ((c.embedding::vector({d})"
                    " + around.vectors) <=> {q}::vector({d})) END").format(
        d=sql.Literal(dims), q=sql.Placeholder("qv"))
    return score, join


def search_memories(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    query: str,
    *,
    limit: int | None = None,
    subject_refs: Mapping[str, str] | None = None,
    scopes: tuple[str, ...] | None = None,
    embedder: EmbeddingProvider | None = None,
    question: QueryVector | None = None,
    stamp: bool = True,
    stamper: RetrievalStamper | None = None,
    explain: list[str] | None = None,
    criteria: Criteria | None = None,
    min_score: float | None = None,
) -> list[MemoryHit]:
    """The best ``limit`` (default ``retrieval_top_k``) visible memories for ``query``: one
    hit per memory (its best chunk). ``scopes`` narrows the visibility scopes searched (it
    never widens what is visible). ``question`` is the query's embedding
    (:func:`~memory_platform.features.retrieval.question.embed_question`, computed before the caller
    took ``conn``); without it the query is embedded with ``embedder`` (default: the
    configured provider) before the first statement. Returned memories are stamped as
    retrieved: by ``stamper`` (deferred, batched) when given, else right away on ``conn``;
    ``stamp=False`` skips it (benchmarks). ``explain`` (a list) receives the EXPLAIN ANALYZE
    plan of the search statement (benchmarks, tuning). ``min_score``: the least score of a
    hit (default ``retrieval_min_score``; scores mean the same in every search,
    retrieval/scores.py). ``criteria``
    (:func:`~memory_platform.features.retrieval.criteria.parse_criteria`) narrows the search to
    memories meeting it, inside every arm of the statement: the top ``limit`` is taken among
    the matches, and the visibility rule still applies (a filter never widens)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty", details={"field": "query"})
    if criteria is not None and criteria.empty:
        criteria = None
    with tracing.span("search.memories", **{"memory.search.limit": limit,
                                            "memory.search.filtered": criteria is not None,
                                            "memory.search.scoped": bool(scopes)}) as current:
        hits = _search(conn, settings, ctx, query, limit=limit, subject_refs=subject_refs,
                       scopes=scopes, embedder=embedder, question=question, explain=explain,
                       criteria=criteria, min_score=min_score)
        current.set_attribute("memory.search.hits", len(hits))
    if stamp and hits:
        ids = [h.memory_id for h in hits]
        if stamper is not None:
            stamper.record(ctx, ids)
        else:
            stamp_retrieved(conn, ctx, ids)
    return hits


def _search(conn: psycopg.Connection, settings: Settings, ctx: AccessContext, query: str, *,
            limit: int | None, subject_refs: Mapping[str, str] | None,
            scopes: tuple[str, ...] | None, embedder: EmbeddingProvider | None,
            question: QueryVector | None, explain: list[str] | None,
            criteria: Criteria | None, min_score: float | None = None) -> list[MemoryHit]:
    """:func:`search_memories` without the stamping, in spans: the query's embedding (when
    not given), the statement with a child span per arm, the fusion."""
    if question is None:
        with tracing.span("search.embed_query"):
            question = embed_question(embedder or get_provider(settings), query)
    limit = limit or settings.retrieval_top_k
    terms = query_terms(query)
    active = cached_active_generation(conn, ctx.instance_key)
    vector = vector_of(question, active.generation_key if active else None)
    # With a query vector, common words only score. Without one the keyword arm is the only
    # source: the least common words generate candidates when no word is selective.
    counts = rarity(conn, ctx.instance_key, terms)
    generating = (selective_terms(counts, settings) if vector is not None else
                  generating_terms(counts, settings))
    if not generating and vector is None:
        return []
    # Keyword candidates are cheap (GIN). Every vector candidate is HNSW work: a filtered walk
    # keeps going until `vector_cap` visible rows passed. k + 2 ranked as well as 2k on the
    # labelled fixtures for less PostgreSQL CPU per search (docs/benchmarks.md). The context
    # arm holds only conversation turns, whose answers more often sit behind near misses:
    # it takes more (and costs nothing where there are no turns).
    keyword_cap = max(limit * 4, 24)
    vector_cap = max(limit + settings.retrieval_vector_extra_candidates, 8)
    context_cap = max(limit + settings.retrieval_turn_context_extra_candidates, 8)
    shape = _Shape(
        user=bool(ctx.user_id), team=ctx.has_team_access, channels=bool(channel_keys(ctx)),
        scoped=bool(scopes), keyword_arm=bool(generating), scored_terms=bool(terms),
        key=question.generation_key if vector is not None else None,
        dims=question.dimensions, vector_cap=vector_cap, context_cap=context_cap,
        match_cap=settings.retrieval_keyword_match_cap,
        scan_cap=settings.retrieval_lexical_scan_cap,
        exact_max=settings.retrieval_exact_scan_max,
        criteria=criteria.shape if criteria is not None else None,
        neighbours=vector is not None and settings.retrieval_turn_neighbour_vector_weight > 0,
        context_vectors=vector is not None and settings.retrieval_turn_context_vector_weight > 0)
    statement = _statement(shape, ctx, scopes, criteria)
    values = {**context_params(ctx), "scopes": list(scopes or ()), "qv": vector,
              "generating": " | ".join(generating),
              "keyword_cap": keyword_cap,
              "context_weight": settings.retrieval_context_keyword_weight,
              "terms_list": terms, "generating_list": generating,
              **_weights(counts, settings, terms, generating),
              **(criteria_params(criteria) if criteria is not None else {})}
    params = statement.params(values)
    with planner_settings(conn, max(settings.retrieval_hnsw_ef_search, vector_cap,
                                    context_cap)):
        if explain is not None:
            explain.extend(row[0] for row in psycopg.RawCursor(conn).execute(
                b"EXPLAIN (ANALYZE, BUFFERS) " + statement.text, params))
        with tracing.span("search.statement") as current:
            began = time.time_ns()
            cursor = psycopg.RawCursor(conn, row_factory=candidate_row)
            rows = cursor.execute(statement.text, params, prepare=True).fetchall()
            if current.is_recording():
                current.set_attribute("memory.search.candidate_rows", len(rows))
                _arm_spans(rows, shape, keyword_cap, len(terms), len(generating), began)

    with tracing.span("search.fusion", **{"memory.search.candidate_rows": len(rows)}) as current:
        hits = rank(rows, settings, limit, subject_refs or {}, question.similarity_floor,
                     frozenset(words(query.lower())),
                     named_period(query, datetime.now(UTC))
                     if settings.retrieval_time_prior else None,
                     bool(settings.retrieval_when_prior) and asks_when(query),
                     settings.retrieval_similarity_scale or question.similarity_scale,
                     min_score, asks_for_several(query))
        current.set_attribute("memory.search.hits", len(hits))
    return hits


def _arm_spans(rows: list[Candidate], shape: _Shape, keyword_cap: int, terms: int,
               generating: int, began: int) -> None:
    """A child span per arm of the statement just run. The arms run inside the one
    statement, so neither has a time of its own: each span covers the statement's time
    (``memory.search.arm_timing = statement``) and tells what the arm contributed: whether it
    ran, its cap, and how many candidate rows carry its score (every candidate gets both
    real scores, whichever arm found it: ``scored`` counts rows with a keyword match / with a
    similarity in the query's generation) and the best raw score."""
    ended = time.time_ns()
    keyword = [r.keyword_rank for r in rows if r.keyword_rank and r.keyword_rank > 0]
    vector = [float(r.similarity) for r in rows if r.similarity is not None]
    arms = {
        "keyword": {"memory.search.arm.enabled": shape.keyword_arm,
                    "memory.search.arm.cap": keyword_cap,
                    "memory.search.arm.terms": terms,
                    "memory.search.arm.generating_terms": generating,
                    "memory.search.arm.scored": len(keyword),
                    "memory.search.arm.best_score": max(keyword, default=None)},
        "vector": {"memory.search.arm.enabled": shape.key is not None,
                   "memory.search.arm.cap": shape.vector_cap,
                   "memory.search.arm.scored": len(vector),
                   "memory.search.arm.best_score": max(vector, default=None)},
    }
    for name, values in arms.items():
        arm = tracing.tracer().start_span(
            f"search.arm.{name}", start_time=began, attributes=tracing.attributes(
                {"memory.search.arm": name, "memory.search.arm_timing": "statement",
                 **values}))
        arm.end(end_time=ended)


def _weights(counts: Rarity, settings: Settings, terms: list[str],
             generating: list[str]) -> dict[str, list[float]]:
    """The rarity weight of each word, aligned with the two word lists (all 1 when
    ``retrieval_keyword_idf`` is off)."""
    if not settings.retrieval_keyword_idf:
        return {"terms_weights": [1.0] * len(terms), "generating_weights": [1.0] * len(generating)}
    weights = term_weights(counts)
    return {"terms_weights": [weights[t] for t in terms],
            "generating_weights": [weights[t] for t in generating]}
