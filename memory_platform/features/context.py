"""``context_search`` / ``context_get``: the broad read path for agents.

One query searches every recall surface the caller may see and merges them:

* canonical assertions (lexical + vector, :mod:`retrieval.assertions`);
* durable memory chunks (hybrid, :mod:`retrieval.search`);
* session history: lossless context messages and summaries (exact lexical), owner-scoped
  (:func:`history_visibility`), but for the caller's own items recalled as conversation
  turns (sessions/turn_recall.py), which the memory search ranks as turns;
* the knowledge graph: claims and entities of the hybrid graph search
  (:mod:`graph.search`).

Results are fused with reciprocal-rank fusion over facts, plus a small confidence
contribution, and every contributing source keeps at least one slot before the final limit.
One fact is one result, with every source that found it (``foundBy``) and the ids it was
found as (``details.alsoFoundAs``): a memory that projects an assertion is that assertion, a
graph claim drawn from an assertion found here is that assertion, a session message a found
memory was extracted from (``metadata.sourceMessageId``) is that memory, a session item
recalled as a conversation turn (sessions/turn_recall.py) is that item, and items saying
the same text (normalised) are one (:func:`same_facts`). Ids are typed
(``assertion:<uuid>``, ``memory:<uuid>``, ``message:<uuid>``, ``summary:<uuid>``,
``claim:<uuid>``, ``entity:<uuid>``) so ``context_get`` can fetch the item with its
provenance (a claim with its source refs and evidence, an entity with its claims and edges).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.graph.reads import explain_claim, get_entity
from memory_platform.features.graph.search import knowledge_search
from memory_platform.features.memories.turns import SESSION_TURN_SOURCE
from memory_platform.features.retrieval.assertions import recallable_assertion, search_assertions
from memory_platform.features.retrieval.criteria import Criteria
from memory_platform.features.retrieval.fusion import reciprocal_rank
from memory_platform.features.retrieval.lexicon import generating_terms, rarity
from memory_platform.features.retrieval.memories import get_memory, parse_uuid
from memory_platform.features.retrieval.question import QueryVector, embed_question
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.stamping import RetrievalStamper
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.retrieval.terms import or_tsquery, query_terms
from memory_platform.foundation import tracing
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AccessContext, audience_predicate, history_visibility
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.factory import get_provider

CONFIDENCE_WEIGHT = 0.002  # a tie-breaker, far below one rank step of RRF
ItemKind = Literal["assertion", "memory", "message", "summary", "claim", "entity"]
ITEM_KINDS: tuple[str, ...] = ("assertion", "memory", "message", "summary", "claim", "entity")
GRAPH_LIMIT_MAX = 100  # graph.search.LIMIT_MAX


@dataclass
class ContextItem:
    id: str
    kind: ItemKind
    content: str
    score: float = 0.0
    confidence: float = 0.5
    found_by: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def _search_history(conn, ctx: AccessContext, terms: _LexicalTerms,
                    cap: int) -> list[ContextItem]:
    """Messages and summaries matching the generating terms, at most the scan cap of each
    read whoever asks (the audience filter comes after), the visible ones ranked by all
    terms."""
    if not terms.generating:
        return []
    rows = conn.execute(sql.SQL("""
        (SELECT 'message', msg.id, msg.content, msg.session_key, msg.created_at,
                ts_rank(msg.content_tsv, {ranked}, 0) AS rank
           FROM (SELECT * FROM agent_context_messages
                  WHERE content_tsv @@ {generating} LIMIT {scan_cap}) msg
          WHERE {visible_messages} {not_recalled}
          ORDER BY rank DESC LIMIT {cap})
        UNION ALL
        (SELECT 'summary', summ.id, summ.content, summ.session_key, summ.created_at,
                ts_rank(summ.content_tsv, {ranked}, 0) AS rank
           FROM (SELECT * FROM agent_context_summaries
                  WHERE content_tsv @@ {generating} LIMIT {scan_cap}) summ
          WHERE {visible_summaries}
          ORDER BY rank DESC LIMIT {cap})
        ORDER BY rank DESC
        LIMIT {cap}
    """).format(generating=or_tsquery(terms.generating), ranked=or_tsquery(terms.ranked),
                scan_cap=sql.Literal(terms.scan_cap),
                visible_messages=history_visibility(ctx, "msg"),
                visible_summaries=history_visibility(ctx, "summ", "agent_context_summaries"),
                cap=sql.Literal(cap), not_recalled=_not_recalled(ctx)))
    return [ContextItem(f"{kind}:{ident}", kind, content,
                        details={"sessionKey": session, "createdAt": created.isoformat()})
            for kind, ident, content, session, created, _ in rows]


def _not_recalled(ctx: AccessContext) -> sql.Composable:
    """`` AND`` the message ``msg`` is not one of the caller's own recalled turns: those the
    memory arm ranks with everything turn search has (sessions/turn_recall.py)."""
    if not ctx.user_id:
        return sql.SQL("")
    return sql.SQL(" AND NOT EXISTS (SELECT 1 FROM agent_memories own"
                   " WHERE own.instance_key = msg.instance_key AND own.id = msg.id"
                   " AND own.user_id = {} AND own.source_type = 'message')").format(
        sql.Literal(ctx.user_id))


def _search_graph(conn, settings: Settings, ctx: AccessContext, query: str,
                  question: QueryVector, cap: int) -> list[ContextItem]:
    """Graph claims and entities of the hybrid knowledge search (graph/search.py: lexical
    and vector arms, bounded reads, recency decay), in one ranking by their fused score."""
    result = knowledge_search(conn, settings, ctx, query, limit=min(cap, GRAPH_LIMIT_MAX),
                              question=question)
    ranked = [(c.score, ContextItem(
        f"claim:{c.id}", "claim", c.text, confidence=c.confidence,
        details={"predicate": c.predicate, "subject": c.subject_label,
                 "object": c.object_label, "value": c.object_value,
                 "visibility": c.visibility,
                 **({"decayFactor": c.decay_factor} if c.decay_factor is not None else {})}))
        for c in result.claims]
    ranked += [(e.score, ContextItem(
        f"entity:{e.id}", "entity", e.label,
        details={"entityType": e.entity_type, "aliases": e.aliases,
                 "visibility": e.visibility}))
        for e in result.entities]
    ranked.sort(key=lambda pair: pair[0], reverse=True)
    return [item for _, item in ranked[:cap]]


def context_search(
    conn: psycopg.Connection,
    settings: Settings,
    ctx: AccessContext,
    query: str,
    *,
    depth: Literal["normal", "deep"] = "normal",
    intent: str | None = None,
    limit: int | None = None,
    embedder: EmbeddingProvider | None = None,
    question: QueryVector | None = None,
    stamper: RetrievalStamper | None = None,
    criteria: Criteria | None = None,
    subject_refs: Mapping[str, str] | None = None,
) -> list[ContextItem]:
    """The best ``limit`` items of every recall surface ``ctx`` may see, fused (see the module
    docstring). A deep search (``depth="deep"`` or the ``wiki_synthesis`` intent) asks each
    source for more candidates; ``limit`` defaults to ``retrieval_context_limit``, or
    ``retrieval_context_deep_limit`` for a deep search. ``question`` is the query's
    embedding, computed before the caller took ``conn``; without it the query is embedded
    once, with ``embedder`` (default: the configured provider), before the first statement.
    Every lexical arm reads a bounded number of matches (``retrieval_lexical_scan_cap``).
    ``criteria`` (metadata, subject refs, event and write time, source types: properties of
    memories, retrieval/criteria.py) searches the memories alone, filtered inside their
    search statement; assertions are then found through their memory projections.
    ``subject_refs`` (what the conversation is about: mandantId, taskId, ...) prefers the
    memories that name the same subjects (retrieval/ranking.py, the subject boost)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty", details={"field": "query"})
    if depth not in ("normal", "deep"):
        raise InvalidInput("depth must be 'normal' or 'deep'", details={"field": "depth"})
    deep = depth == "deep" or intent == "wiki_synthesis"
    limit = limit or (settings.retrieval_context_deep_limit if deep
                      else settings.retrieval_context_limit)
    per_source = limit * (3 if deep else 2)
    filtered = criteria is not None and not criteria.empty
    with tracing.span("search.context", **{"memory.search.limit": limit,
                                           "memory.search.deep": deep,
                                           "memory.search.filtered": filtered}) as current:
        if question is None:
            with tracing.span("search.embed_query"):
                question = embed_question(embedder or get_provider(settings), query)
        if filtered:
            sources = {"memories": _source("memories", lambda: _memory_items(
                conn, settings, ctx, query, per_source, question, stamper, criteria,
                subject_refs))}
        else:
            terms = _lexical_terms(conn, settings, ctx, query)
            sources = {
                "assertions": _source("assertions", lambda: [
                    ContextItem(f"assertion:{h.id}", "assertion", h.text,
                                confidence=h.confidence,
                                details={"assertionType": h.assertion_type,
                                         "audience": {"kind": h.audience_kind,
                                                      "key": h.audience_key}})
                    for h in search_assertions(conn, settings, ctx, query, limit=per_source,
                                               question=question,
                                               subject_refs=subject_refs)]),
                "memories": _source("memories", lambda: _memory_items(
                    conn, settings, ctx, query, per_source, question, stamper,
                    subject_refs=subject_refs)),
                "history": _source("history", lambda: _search_history(
                    conn, ctx, terms, per_source)),
                "graph": _source("graph", lambda: _search_graph(
                    conn, settings, ctx, query, question, per_source)),
            }
        with tracing.span("search.fusion", **{"memory.search.sources": len(sources)}):
            fused = fuse(sources, limit, same_facts(conn, ctx.instance_key, sources))
        current.set_attribute("memory.search.hits", len(fused))
        return fused


def _source(name: str, search: Callable[[], list[ContextItem]]) -> list[ContextItem]:
    """One recall surface's search as the span ``search.source.<name>`` (its own
    statements: the time is its own), with the number of items it found."""
    with tracing.span(f"search.source.{name}", **{"memory.search.source": name}) as current:
        items = search()
        current.set_attribute("memory.search.items", len(items))
        return items


def _memory_items(conn, settings: Settings, ctx: AccessContext, query: str, cap: int,
                  question: QueryVector, stamper: RetrievalStamper | None,
                  criteria: Criteria | None = None,
                  subject_refs: Mapping[str, str] | None = None) -> list[ContextItem]:
    items = []
    for h in search_memories(conn, settings, ctx, query, limit=cap, question=question,
                             stamper=stamper, criteria=criteria, subject_refs=subject_refs):
        identity = _memory_identity(h.assertion_id, h.memory_id, h.source_type)
        items.append(ContextItem(
            identity, identity.partition(":")[0], h.content,  # type: ignore[arg-type]
            details={"memoryId": str(h.memory_id), "sourceType": h.source_type,
                     "visibility": h.visibility_scope, "subjectRefs": h.subject_refs,
                     **_event_time(h.occurred_at)}))
    return items


@dataclass(frozen=True)
class _LexicalTerms:
    """The terms of the history arm: the ones that generate candidates, the ones that rank
    them, and how many matches an arm reads (the graph search reads its own)."""

    generating: list[str]
    ranked: list[str]
    scan_cap: int


def _lexical_terms(conn, settings: Settings, ctx: AccessContext, query: str) -> _LexicalTerms:
    terms = query_terms(query)
    generating = generating_terms(rarity(conn, ctx.instance_key, terms), settings)
    return _LexicalTerms(generating, terms, settings.retrieval_lexical_scan_cap)


def _event_time(occurred_at: datetime | None) -> dict[str, str]:
    """A memory item's ``occurredAt`` detail: only when the writer gave an event time."""
    return {"occurredAt": occurred_at.isoformat()} if occurred_at else {}


def _memory_identity(assertion_id: UUID | None, memory_id: UUID, source_type: str) -> str:
    """A memory that projects an assertion is that assertion, for fusion; a session item
    recalled as a turn (sessions/turn_recall.py: the memory has the item's id) is that item."""
    if source_type == SESSION_TURN_SOURCE:
        return f"message:{memory_id}"
    return f"assertion:{assertion_id}" if assertion_id else f"memory:{memory_id}"


# Which kind of id a fact found several ways is known by: the most durable first.
_PRIMARY = {"assertion": 0, "memory": 1, "claim": 2, "summary": 3, "message": 4, "entity": 5}


def same_facts(conn: psycopg.Connection, instance_key: str,
               sources: dict[str, list[ContextItem]]) -> dict[str, str]:
    """Item id -> the id of the fact it is, for the items that are another item's fact: a
    claim drawn from a found assertion (its source refs), a message a found memory was
    extracted from, an item saying a found item's text. The refs are read for the found
    claims and messages only (two indexed reads); every id read is one the caller was shown."""
    items = {i.id: i for found in sources.values() for i in found}
    alias: dict[str, str] = {}
    claims = [UUID(i.split(":", 1)[1]) for i in items if i.startswith("claim:")]
    if claims:
        for claim_id, assertion_id in conn.execute(
                "SELECT k.id, r.ref ->> 'assertionId' FROM agent_knowledge_claims k"
                " CROSS JOIN LATERAL jsonb_array_elements(k.source_refs) r(ref)"
                " WHERE k.instance_key = %s AND k.id = ANY(%s)",
                (instance_key, claims)).fetchall():
            if f"assertion:{assertion_id}" in items:
                alias.setdefault(f"claim:{claim_id}", f"assertion:{assertion_id}")
    messages = [i.split(":", 1)[1] for i in items if i.startswith("message:")]
    if messages:
        for message_id, memory_id, assertion_id in conn.execute(
                "SELECT m.metadata ->> 'sourceMessageId', m.id, m.assertion_id"
                "  FROM agent_memories m WHERE m.instance_key = %s"
                "   AND m.metadata ->> 'sourceMessageId' = ANY(%s)",
                (instance_key, messages)).fetchall():
            for found in (f"assertion:{assertion_id}", f"memory:{memory_id}"):
                if found in items:
                    alias.setdefault(f"message:{message_id}", found)
                    break
    by_text: dict[str, str] = {}
    for item_id in sorted(items, key=lambda i: _PRIMARY.get(i.split(":", 1)[0], 9)):
        if item_id in alias or items[item_id].kind == "entity":
            continue
        first = by_text.setdefault(content_hash(items[item_id].content), item_id)
        if first != item_id:
            alias[item_id] = first
    return {item_id: _root(alias, item_id) for item_id in alias}


def _root(alias: dict[str, str], item_id: str) -> str:
    seen = {item_id}
    while item_id in alias and alias[item_id] not in seen:
        item_id = alias[item_id]
        seen.add(item_id)
    return item_id


def fuse(sources: dict[str, list[ContextItem]], limit: int,
         aliases: dict[str, str] | None = None) -> list[ContextItem]:
    """Reciprocal-rank fusion by fact (an item's id, or the id ``aliases`` names for it: its
    sources go to that fact, each source counting it once, at its best rank), a small
    confidence term, one reserved slot per contributing source."""
    aliases = aliases or {}
    first = {}  # each id's first item: the one a fact found only through its aliases is
    for items in sources.values():
        for item in items:
            first.setdefault(item.id, item)
    merged: dict[str, ContextItem] = {}
    counted: set[tuple[str, str]] = set()  # (fact, source): a source counts a fact once
    for name, items in sources.items():
        for rank, item in enumerate(items, start=1):
            fact = aliases.get(item.id, item.id)
            target = merged.setdefault(fact, first[fact])
            if target is not item:
                target.confidence = max(target.confidence, item.confidence)
                if item.id == target.id:  # the same item from another source: its details
                    target.details = {**item.details, **target.details}
                else:  # another item of the same fact: only named (its details are its own)
                    also = target.details.setdefault("alsoFoundAs", [])
                    if item.id not in also:
                        also.append(item.id)
            if (fact, name) not in counted:  # its best rank in this source (items are ranked)
                counted.add((fact, name))
                target.score += reciprocal_rank(rank)
                target.found_by.append(name)
    for item in merged.values():
        item.score = round(item.score + CONFIDENCE_WEIGHT * item.confidence, 6)
    ranked = sorted(merged.values(), key=lambda i: i.score, reverse=True)
    reserved: list[ContextItem] = []
    for items in sources.values():
        best = next((merged[aliases.get(i.id, i.id)] for i in items
                     if merged[aliases.get(i.id, i.id)] not in reserved), None)
        if best is not None and len(reserved) < limit:
            reserved.append(best)
    chosen = reserved + [i for i in ranked if i not in reserved][: max(0, limit - len(reserved))]
    return sorted(chosen, key=lambda i: i.score, reverse=True)


def _parse_item_id(item_id: object) -> tuple[str, UUID]:
    text = str(item_id)
    kind, _, raw = text.partition(":")
    if kind not in ITEM_KINDS:
        raise NotFound(f"no context item {text[:80]!r}; ids look like memory:<uuid>")
    return kind, parse_uuid(raw)


def _evidence(conn, ctx: AccessContext, assertion_id: UUID) -> list[dict[str, Any]]:
    """The evidence of an assertion whose source the caller may see (F28): a channel
    assertion read through the linked-user branch lists only the caller's own sources, not
    the excerpts other writers of that channel contributed."""
    rows = conn.execute(parameter_safe(sql.SQL("""
        SELECT e.excerpt, e.stance, s.id, s.source_kind, s.trust_class, s.memory_id,
               s.created_at
          FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
         WHERE e.assertion_id = %s AND {visible}
         ORDER BY s.created_at
    """).format(visible=audience_predicate(ctx, "s"))), (assertion_id,))
    return [{"excerpt": excerpt, "stance": stance, "sourceId": str(source_id),
             "sourceKind": kind, "trustClass": trust,
             "memoryId": str(memory_id) if memory_id else None, "createdAt": at.isoformat()}
            for excerpt, stance, source_id, kind, trust, memory_id, at in rows]


def context_get(conn: psycopg.Connection, ctx: AccessContext, item_id: object) -> ContextItem:
    """One item with its provenance; not-found never reveals whether an invisible row exists."""
    kind, ident = _parse_item_id(item_id)
    if kind == "memory":
        record = get_memory(conn, ctx, ident)
        details: dict[str, Any] = {"sourceType": record.source_type,
                                   "visibility": record.visibility_scope,
                                   "subjectRefs": record.subject_refs,
                                   "createdAt": record.created_at.isoformat(),
                                   **_event_time(record.occurred_at)}
        if record.assertion_id:
            details["assertionId"] = str(record.assertion_id)
            details["evidence"] = _evidence(conn, ctx, record.assertion_id)
        return ContextItem(f"memory:{ident}", "memory", record.content, details=details)
    if kind == "assertion":
        row = conn.execute(parameter_safe(sql.SQL("""
            SELECT a.assertion_text, a.assertion_type, a.confidence, a.audience_kind,
                   a.audience_key, a.review_state, a.created_at
              FROM agent_memory_assertions a
             WHERE a.id = %s AND {visible}
        """).format(visible=recallable_assertion(ctx))), (ident,)).fetchone()
        if row is None:
            raise NotFound(f"no context item assertion:{ident}")
        text, atype, confidence, akind, akey, review, created = row
        return ContextItem(f"assertion:{ident}", "assertion", text, confidence=float(confidence),
                           details={"assertionType": atype, "reviewState": review,
                                    "audience": {"kind": akind, "key": akey},
                                    "createdAt": created.isoformat(),
                                    "evidence": _evidence(conn, ctx, ident)})
    if kind in ("message", "summary"):
        table = "agent_context_messages" if kind == "message" else "agent_context_summaries"
        row = conn.execute(parameter_safe(sql.SQL("""
            SELECT h.content, h.session_key, h.created_at FROM {table} h
             WHERE h.id = %s AND {visible}
        """).format(table=sql.Identifier(table), visible=history_visibility(ctx, "h", table))),
            (ident,)).fetchone()
        if row is None:
            raise NotFound(f"no context item {kind}:{ident}")
        details = {"sessionKey": row[1], "createdAt": row[2].isoformat()}
        if kind == "summary":
            details["messageIds"] = [str(r[0]) for r in conn.execute(
                "SELECT message_id FROM agent_context_summary_messages WHERE summary_id = %s",
                (ident,))]
        return ContextItem(f"{kind}:{ident}", kind, row[0], details=details)
    if kind == "entity":
        entity = get_entity(conn, ctx, ident)
        return ContextItem(f"entity:{ident}", "entity", entity["entity"]["label"],
                           details={k: v for k, v in entity.items() if k != "entity"}
                           | {"entity": entity["entity"]})
    explained = explain_claim(conn, ctx, ident)
    claim = explained["claim"]
    return ContextItem(f"claim:{ident}", "claim", claim["text"], confidence=claim["confidence"],
                       details={"predicate": claim["predicate"], "subject": claim["subject"],
                                "object": claim["object"], "value": claim["value"],
                                "visibility": claim["visibility"],
                                "sourceRefs": explained["sourceRefs"],
                                "supported": explained["supported"],
                                "evidence": explained["evidence"]})
