"""The knowledge graph as the inspector shows it: one *view* of it for a caller, cut to a
display budget, and the card of one node.

Views (always active rows of the caller's instance):

* ``personal``: the caller's own private rows (needs a user id; never another owner's);
* ``team``: team and workspace rows the caller may see;
* ``channel``: the rows of one channel (thread or room) the caller may see, i.e. one it
  reads in or is a member of;
* ``all``: every scope of the instance for diagnostics (the adapter offers it to ``admin``
  keys only), except the private rows of other users: a private row is its owner's alone,
  whoever asks (issue 28, finding 11). The view answers how many such entities it withheld,
  never what they say.

Every view but ``all`` is THE graph visibility rule (``access.graph_predicate``, in SQL) AND
a narrowing to the view's audience; ``all`` widens the rule to the instance's team,
workspace and channel rows and the caller's own private rows, never further. A search term matches
entity labels, aliases and claim text (escaped ``ILIKE``); a Dream filter keeps the items
whose evidence or source refs name that Dream. Every read is bounded (``SCAN_MAX`` candidate
entities, ``EDGE_MAX`` edges, ``CARD_MAX`` rows per card list).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.features.graph.reads import parse_graph_id
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.shared.access import AccessContext, graph_predicate

VIEWS = ("personal", "team", "channel", "all")
BUDGET_DEFAULT = 120
BUDGET_MAX = 400
SCAN_MAX = 2000
EDGE_MAX = 4000
FACTS_PER_ENTITY = 6
CARD_MAX = 50
SEARCH_MAX = 200
LABEL_MAX = 240

Predicate = Callable[[str], sql.Composable]


def _scope(view: str, ctx: AccessContext, channel: str | None) -> Predicate:
    """The SQL condition of the view over a graph row alias."""
    if view not in VIEWS:
        raise InvalidInput(f"view must be one of {', '.join(VIEWS)}", details={"field": "view"})
    if view == "all":
        return lambda a: _instance_rows(ctx, a)
    if view == "personal":
        if not ctx.user_id:
            raise InvalidInput("the personal view needs a signed-in user",
                               details={"field": "view"})
        user = ctx.user_id
        return lambda a: sql.SQL("({} AND {} = 'private' AND {} = {})").format(
            graph_predicate(ctx, a), sql.Identifier(a, "visibility_scope"),
            sql.Identifier(a, "audience_key"), sql.Literal(user))
    if view == "team":
        return lambda a: sql.SQL("({} AND {} IN ('team', 'workspace'))").format(
            graph_predicate(ctx, a), sql.Identifier(a, "visibility_scope"))
    if not channel or not isinstance(channel, str) or len(channel) > 500:
        raise InvalidInput("the channel view needs a channel", details={"field": "channel"})
    return lambda a: sql.SQL("({} AND {} = 'channel' AND {} = {})").format(
        graph_predicate(ctx, a), sql.Identifier(a, "visibility_scope"),
        sql.Identifier(a, "audience_key"), sql.Literal(channel))


def _instance_rows(ctx: AccessContext, alias: str) -> sql.Composable:
    """Every row of the caller's instance but another user's private ones (the all view)."""
    return sql.SQL("({} = {} AND ({} <> 'private' OR {} = {}))").format(
        sql.Identifier(alias, "instance_key"), sql.Literal(ctx.instance_key),
        sql.Identifier(alias, "visibility_scope"), sql.Identifier(alias, "audience_key"),
        sql.Literal(ctx.user_id or ""))


def _withheld(conn: psycopg.Connection, ctx: AccessContext) -> int:
    """How many active private entities of other users the all view leaves out."""
    return conn.execute(
        "SELECT count(*) FROM agent_knowledge_entities WHERE instance_key = %s"
        " AND status = 'active' AND visibility_scope = 'private' AND audience_key <> %s",
        (ctx.instance_key, ctx.user_id or "")).fetchone()[0]


def _pattern(search: str | None) -> str | None:
    if search is None or not search.strip():
        return None
    term = search.strip()
    if len(term) > SEARCH_MAX:
        raise InvalidInput(f"search is at most {SEARCH_MAX} characters",
                           details={"field": "q"})
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _dream(dream_id: object | None) -> UUID | None:
    return None if dream_id in (None, "") else parse_graph_id(dream_id, "dream")


def _rows(conn: psycopg.Connection, statement: sql.Composable,
          params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(parameter_safe(statement), params).fetchall()


def _by_dream(alias: str, column: str, refs: bool) -> sql.Composable:
    """Rows of ``alias`` whose evidence (``column``) or source refs name %(dream)s."""
    evidence = sql.SQL("EXISTS (SELECT 1 FROM agent_knowledge_evidence ev"
                       " WHERE ev.instance_key = {a}.instance_key AND ev.{c} = {a}.id"
                       " AND ev.dream_id = %(dream)s)").format(
        a=sql.Identifier(alias), c=sql.Identifier(column))
    if not refs:
        return evidence
    return sql.SQL("({} OR {}.source_refs @> %(dream_ref)s)").format(
        evidence, sql.Identifier(alias))


def _entity_filter(scope: Predicate, pattern: str | None, dream: UUID | None) -> sql.Composable:
    parts: list[sql.Composable] = [sql.SQL("e.status = 'active'"), scope("e")]
    if pattern is not None:
        parts.append(sql.SQL(
            "(e.label ILIKE %(pattern)s OR array_to_string(e.aliases, ' ') ILIKE %(pattern)s"
            " OR EXISTS (SELECT 1 FROM agent_knowledge_claims k"
            " WHERE k.instance_key = e.instance_key AND k.subject_entity_id = e.id"
            " AND k.status = 'active' AND {} AND k.assertion_text ILIKE %(pattern)s))").format(
            scope("k")))
    if dream is not None:
        parts.append(sql.SQL(
            "({} OR EXISTS (SELECT 1 FROM agent_knowledge_claims k"
            " WHERE k.instance_key = e.instance_key AND k.subject_entity_id = e.id"
            " AND k.status = 'active' AND {} AND {})"
            " OR EXISTS (SELECT 1 FROM agent_knowledge_edges g"
            " WHERE g.instance_key = e.instance_key AND e.id IN (g.source_entity_id,"
            " g.target_entity_id) AND g.status = 'active' AND {} AND {}))").format(
            _by_dream("e", "entity_id", False), scope("k"), _by_dream("k", "claim_id", True),
            scope("g"), _by_dream("g", "edge_id", True)))
    return sql.SQL(" AND ").join(parts)


def _params(pattern: str | None, dream: UUID | None, **more: Any) -> dict[str, Any]:
    return {"pattern": pattern, "dream": dream,
            "dream_ref": Jsonb([{"dreamId": str(dream)}]) if dream else None, **more}


def _label(text: str | None) -> str:
    text = (text or "").strip()
    return text if len(text) <= LABEL_MAX else text[:LABEL_MAX - 1] + "\u2026"


def _components(ids: list[UUID], links: list[tuple[UUID, UUID]]) -> list[list[UUID]]:
    """Connected components of the entities, each ordered by degree, largest first."""
    parent = {i: i for i in ids}

    def root(i: UUID) -> UUID:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    degree: dict[UUID, int] = defaultdict(int)
    for a, b in links:
        degree[a] += 1
        degree[b] += 1
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    groups: dict[UUID, list[UUID]] = defaultdict(list)
    for i in ids:                                   # ids are newest first
        groups[root(i)].append(i)
    ordered = [sorted(g, key=lambda i: -degree[i]) for g in groups.values()]
    return sorted(ordered, key=lambda g: -len(g))


def _pick(components: list[list[UUID]], cap: int) -> list[UUID]:
    """Round-robin over the components so that several disconnected ones are shown."""
    chosen: list[UUID] = []
    depth = 0
    while len(chosen) < cap:
        added = False
        for group in components:
            if depth < len(group) and len(chosen) < cap:
                chosen.append(group[depth])
                added = True
        if not added:
            break
        depth += 1
    return chosen


def view_graph(conn: psycopg.Connection, ctx: AccessContext, view: str, *,
               channel: str | None = None, search: str | None = None,
               dream_id: object | None = None, budget: int = BUDGET_DEFAULT) -> dict[str, Any]:
    """The graph of ``view`` for ``ctx`` in the inspector's node/edge shape: entities as
    ``entity`` nodes, claims as ``fact`` nodes linked to their subject (and object) entity by
    ``fact`` edges, relations as ``relation`` edges. At most ``budget`` nodes, picked
    round-robin over the connected components, so disconnected clusters all show."""
    if not isinstance(budget, int) or not 1 <= budget <= BUDGET_MAX:
        raise InvalidInput(f"budget must be 1-{BUDGET_MAX}", details={"field": "budget"})
    scope, pattern, dream = _scope(view, ctx, channel), _pattern(search), _dream(dream_id)
    params = _params(pattern, dream)
    candidates = _rows(conn, sql.SQL(
        "SELECT e.id, e.label, e.entity_type, e.visibility_scope, e.audience_key,"
        " e.linked_record_type, e.linked_record_id,"
        " (SELECT count(*) FROM agent_knowledge_evidence ev WHERE ev.instance_key ="
        "  e.instance_key AND ev.entity_id = e.id) AS evidence"
        " FROM agent_knowledge_entities e WHERE {where}"
        " ORDER BY e.updated_at DESC, e.id LIMIT {scan}").format(
        where=_entity_filter(scope, pattern, dream), scan=sql.Literal(SCAN_MAX + 1)), params)
    scanned_out = len(candidates) > SCAN_MAX
    candidates = candidates[:SCAN_MAX]
    ids = [r["id"] for r in candidates]
    edge_where = [sql.SQL("g.status = 'active'"), scope("g"),
                  sql.SQL("g.source_entity_id = ANY(%(ids)s)"),
                  sql.SQL("g.target_entity_id = ANY(%(ids)s)")]
    if dream is not None:
        edge_where.append(_by_dream("g", "edge_id", True))
    edges = _rows(conn, sql.SQL(
        "SELECT g.id, g.source_entity_id, g.target_entity_id, g.relation_type, g.confidence"
        " FROM agent_knowledge_edges g WHERE {} ORDER BY g.confidence DESC, g.id"
        " LIMIT {}").format(sql.SQL(" AND ").join(edge_where), sql.Literal(EDGE_MAX)),
        params | {"ids": ids}) if ids else []
    components = _components(ids, [(e["source_entity_id"], e["target_entity_id"])
                                   for e in edges])
    entity_cap = max(1, -(-budget * 3 // 5))        # three fifths, rounded up
    chosen = _pick(components, min(entity_cap, budget))
    chosen_set = set(chosen)
    claim_where = [sql.SQL("k.status = 'active'"), scope("k"),
                   sql.SQL("k.subject_entity_id = ANY(%(ids)s)"),
                   sql.SQL("(k.valid_to IS NULL OR k.valid_to > now())")]
    if dream is not None:
        claim_where.append(_by_dream("k", "claim_id", True))
    if pattern is not None:
        claim_where.append(sql.SQL("(k.assertion_text ILIKE %(pattern)s OR EXISTS (SELECT 1"
                                   " FROM agent_knowledge_entities e WHERE e.instance_key ="
                                   " k.instance_key AND e.id = k.subject_entity_id AND"
                                   " e.label ILIKE %(pattern)s))"))
    claims = _rows(conn, sql.SQL(
        "SELECT * FROM (SELECT k.id, k.subject_entity_id, k.object_entity_id, k.predicate,"
        " k.assertion_text, k.confidence, k.visibility_scope, jsonb_array_length(k.source_refs)"
        " AS refs, (SELECT count(*) FROM agent_knowledge_evidence ev WHERE ev.instance_key ="
        " k.instance_key AND ev.claim_id = k.id) AS evidence, row_number() OVER (PARTITION BY"
        " k.subject_entity_id ORDER BY k.confidence DESC, k.updated_at DESC, k.id) AS rank"
        " FROM agent_knowledge_claims k WHERE {}) c WHERE c.rank <= {}"
        " ORDER BY c.rank, c.confidence DESC, c.id").format(
        sql.SQL(" AND ").join(claim_where), sql.Literal(FACTS_PER_ENTITY)),
        params | {"ids": chosen}) if chosen else []
    facts = claims[:max(0, budget - len(chosen))]
    by_id = {r["id"]: r for r in candidates}
    nodes = [{"id": f"entity:{i}", "label": _label(by_id[i]["label"]), "kind": "entity",
              "type": by_id[i]["entity_type"], "audience": by_id[i]["visibility_scope"]}
             for i in chosen]
    links = [{"id": f"edge:{e['id']}", "source": f"entity:{e['source_entity_id']}",
              "target": f"entity:{e['target_entity_id']}", "relation": e["relation_type"],
              "kind": "relation"} for e in edges
             if e["source_entity_id"] in chosen_set and e["target_entity_id"] in chosen_set]
    for k in facts:
        nodes.append({"id": f"claim:{k['id']}", "label": _label(k["assertion_text"]),
                      "kind": "fact", "type": k["predicate"], "audience": k["visibility_scope"]})
        links.append({"id": f"fact:{k['id']}", "source": f"entity:{k['subject_entity_id']}",
                      "target": f"claim:{k['id']}", "relation": k["predicate"], "kind": "fact"})
        if k["object_entity_id"] in chosen_set:
            links.append({"id": f"object:{k['id']}", "source": f"claim:{k['id']}",
                          "target": f"entity:{k['object_entity_id']}",
                          "relation": k["predicate"], "kind": "fact"})
    shown_components = sum(1 for g in components if any(i in chosen_set for i in g))
    return {
        "view": view, "channel": channel if view == "channel" else None,
        "privateWithheld": _withheld(conn, ctx) if view == "all" else 0,
        "search": search.strip() if pattern else None,
        "dreamId": str(dream) if dream else None,
        "nodes": nodes, "edges": links,
        "components": {"shown": shown_components, "total": len(components)},
        "truncated": scanned_out or len(chosen) < len(ids) or len(facts) < len(claims),
        "entities": [{"id": str(i), "label": by_id[i]["label"],
                      "type": by_id[i]["entity_type"],
                      "visibility": by_id[i]["visibility_scope"],
                      "linkedRecord": (f"{by_id[i]['linked_record_type']}:"
                                       f"{by_id[i]['linked_record_id']}"
                                       if by_id[i]["linked_record_id"] else None),
                      "evidence": by_id[i]["evidence"]} for i in chosen],
        "claims": [{"id": str(k["id"]), "text": k["assertion_text"],
                    "predicate": k["predicate"], "visibility": k["visibility_scope"],
                    "confidence": round(float(k["confidence"]), 3), "sourceRefs": k["refs"],
                    "evidence": k["evidence"]} for k in facts],
    }


# --- the card of one node -------------------------------------------------------------------

_EVIDENCE = """
    SELECT ev.id, ev.evidence_kind, ev.assertion_id, a.assertion_text, a.status, a.review_state,
           ev.excerpt, ev.source_memory_id, ev.dream_id, ev.created_at
      FROM agent_knowledge_evidence ev
      LEFT JOIN agent_memory_assertions a
        ON a.instance_key = ev.instance_key AND a.id = ev.assertion_id
     WHERE ev.instance_key = %(instance)s AND ({which})
     ORDER BY ev.created_at DESC, ev.id
     LIMIT {limit}
"""


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _evidence_json(e: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(e["id"]), "kind": e["evidence_kind"],
            "assertionId": str(e["assertion_id"]) if e["assertion_id"] else None,
            "assertionText": e["assertion_text"], "assertionStatus": e["status"],
            "reviewState": e["review_state"], "excerpt": e["excerpt"],
            "sourceMemoryId": str(e["source_memory_id"]) if e["source_memory_id"] else None,
            "dreamId": str(e["dream_id"]) if e["dream_id"] else None,
            "createdAt": _iso(e["created_at"])}


def _claims_of(conn, scope: Predicate, column: str, ident: UUID,
               instance: str) -> list[dict[str, Any]]:
    rows = _rows(conn, sql.SQL(
        "SELECT k.id, k.predicate, k.assertion_text, k.object_value, k.confidence,"
        " k.visibility_scope, k.source_refs, s.label AS subject, o.label AS object,"
        " k.subject_entity_id, k.object_entity_id,"
        " (SELECT count(DISTINCT (ev.evidence_kind, ev.assertion_id, ev.source_memory_id,"
        "  ev.excerpt)) FROM agent_knowledge_evidence ev WHERE ev.instance_key ="
        "  k.instance_key AND ev.claim_id = k.id) AS evidence"  # as the card lists them
        " FROM agent_knowledge_claims k"
        " JOIN agent_knowledge_entities s ON s.instance_key = k.instance_key"
        "  AND s.id = k.subject_entity_id"
        " LEFT JOIN agent_knowledge_entities o ON o.instance_key = k.instance_key"
        "  AND o.id = k.object_entity_id"
        " WHERE k.instance_key = %(instance)s AND k.{col} = %(id)s AND k.status = 'active'"
        " AND {scope} ORDER BY k.confidence DESC, k.updated_at DESC, k.id LIMIT {limit}").format(
        col=sql.Identifier(column), scope=scope("k"), limit=sql.Literal(CARD_MAX)),
        {"instance": instance, "id": ident})
    return [{"id": str(r["id"]), "nodeId": f"claim:{r['id']}", "predicate": r["predicate"],
             "text": r["assertion_text"], "value": r["object_value"],
             "subject": r["subject"], "object": r["object"],
             "subjectNodeId": f"entity:{r['subject_entity_id']}",
             "objectNodeId": (f"entity:{r['object_entity_id']}" if r["object_entity_id"]
                              else None),
             "confidence": round(float(r["confidence"]), 3),
             "visibility": r["visibility_scope"], "sourceRefs": r["source_refs"] or [],
             "evidence": r["evidence"]} for r in rows]


def _relations_of(conn, scope: Predicate, ident: UUID, instance: str) -> list[dict[str, Any]]:
    rows = _rows(conn, sql.SQL(
        "SELECT g.id, g.relation_type, g.confidence, g.source_entity_id, g.target_entity_id,"
        " s.label AS source, t.label AS target"
        " FROM agent_knowledge_edges g"
        " JOIN agent_knowledge_entities s ON s.instance_key = g.instance_key"
        "  AND s.id = g.source_entity_id AND s.status = 'active' AND {ss}"
        " JOIN agent_knowledge_entities t ON t.instance_key = g.instance_key"
        "  AND t.id = g.target_entity_id AND t.status = 'active' AND {ts}"
        " WHERE g.instance_key = %(instance)s AND %(id)s IN (g.source_entity_id,"
        " g.target_entity_id) AND g.status = 'active' AND {scope}"
        " ORDER BY g.confidence DESC, g.id LIMIT {limit}").format(
        ss=scope("s"), ts=scope("t"), scope=scope("g"), limit=sql.Literal(CARD_MAX)),
        {"instance": instance, "id": ident})
    return [{"id": str(r["id"]), "relation": r["relation_type"],
             "direction": "outgoing" if r["source_entity_id"] == ident else "incoming",
             "source": r["source"], "target": r["target"],
             "sourceNodeId": f"entity:{r['source_entity_id']}",
             "targetNodeId": f"entity:{r['target_entity_id']}",
             "confidence": round(float(r["confidence"]), 3)} for r in rows]


def _evidence(conn, which: sql.Composable, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The evidence rows ``which`` selects, each item once: an entity's own evidence and
    its claims' evidence often cite the same excerpt of the same source memory through the
    same assertion, which a reader sees as one item (the first row stands for it)."""
    rows = _rows(conn, sql.SQL(_EVIDENCE).format(which=which, limit=sql.Literal(CARD_MAX)),
                 params)
    seen: set[tuple[Any, ...]] = set()
    items = []
    for item in map(_evidence_json, rows):
        same = (item["kind"], item["assertionId"], item["sourceMemoryId"], item["excerpt"])
        if same not in seen:
            seen.add(same)
            items.append(item)
    return items


def _counts_of(evidence: list[dict[str, Any]]) -> dict[str, int]:
    """Evidence items per kind, of the items the card lists (so its counts agree)."""
    counts: dict[str, int] = defaultdict(int)
    for item in evidence:
        counts[item["kind"]] += 1
    return dict(counts)


def _parse_node(node_id: object) -> tuple[str, UUID]:
    if not isinstance(node_id, str) or ":" not in node_id:
        raise InvalidInput("node must be entity:<id> or claim:<id>", details={"field": "node"})
    kind, _, raw = node_id.partition(":")
    if kind not in ("entity", "claim"):
        raise InvalidInput("node must be entity:<id> or claim:<id>", details={"field": "node"})
    return kind, parse_graph_id(raw, "node")


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def node_card(conn: psycopg.Connection, ctx: AccessContext, view: str, node_id: object, *,
              channel: str | None = None) -> dict[str, Any]:
    """One node of ``view`` in full: an explainer, its metadata (type, aliases, linked
    record, subject refs, visibility, confidence, evidence counts), its claims, its
    relationships and its evidence (with the source memory, assertion and Dream each names).
    A node outside the view answers the same ``NotFound`` as an unknown one."""
    scope = _scope(view, ctx, channel)
    kind, ident = _parse_node(node_id)
    instance = ctx.instance_key
    if kind == "entity":
        found = _rows(conn, sql.SQL(
            "SELECT e.* FROM agent_knowledge_entities e WHERE e.id = %(id)s"
            " AND e.status = 'active' AND {}").format(scope("e")), {"id": ident})
        if not found:
            raise NotFound("no visible graph node with that id")
        e = found[0]
        claims = _claims_of(conn, scope, "subject_entity_id", ident, instance)
        mentions = _claims_of(conn, scope, "object_entity_id", ident, instance)
        relations = _relations_of(conn, scope, ident, instance)
        evidence = _evidence(conn, sql.SQL(
            "ev.entity_id = %(id)s OR ev.claim_id IN (SELECT k.id FROM agent_knowledge_claims k"
            " WHERE k.instance_key = %(instance)s AND k.subject_entity_id = %(id)s"
            " AND k.status = 'active' AND {})").format(scope("k")),
            {"instance": instance, "id": ident})
        confidence = (max(c["confidence"] for c in claims) if claims else None)
        explainer = (
            f"\u201c{e['label']}\u201d is {_article(e['entity_type'])} {e['entity_type']} "
            "entity of the "
            f"{e['visibility_scope']} audience. The graph is projected automatically from "
            f"approved assertions: this entity has {len(claims)} current claim(s) about it, "
            f"is the object of {len(mentions)}, and takes part in {len(relations)} "
            "relationship(s). Every item below is backed by evidence that names the "
            "assertion, source memory or Dream it came from.")
        return {
            "node": f"entity:{ident}", "kind": "entity", "title": e["label"],
            "subtitle": f"{e['entity_type']} \u00b7 {e['visibility_scope']}",
            "explainer": explainer,
            "metadata": {"type": e["entity_type"], "aliases": list(e["aliases"] or []),
                         "linkedRecord": ({"type": e["linked_record_type"],
                                           "id": e["linked_record_id"]}
                                          if e["linked_record_id"] else None),
                         "subjectRefs": e["subject_refs"] or {},
                         "visibility": e["visibility_scope"],
                         "audienceKey": e["audience_key"] if view == "all" else None,
                         "confidence": confidence,
                         "evidenceCounts": _counts_of(evidence),
                         "createdAt": _iso(e["created_at"]),
                         "updatedAt": _iso(e["updated_at"])},
            "assertions": claims + mentions, "relationships": relations,
            "evidence": evidence,
        }
    found = _rows(conn, sql.SQL(
        "SELECT k.*, s.label AS subject, o.label AS object FROM agent_knowledge_claims k"
        " JOIN agent_knowledge_entities s ON s.instance_key = k.instance_key"
        "  AND s.id = k.subject_entity_id"
        " LEFT JOIN agent_knowledge_entities o ON o.instance_key = k.instance_key"
        "  AND o.id = k.object_entity_id"
        " WHERE k.id = %(id)s AND k.status = 'active' AND {}").format(scope("k")), {"id": ident})
    if not found:
        raise NotFound("no visible graph node with that id")
    k = found[0]
    evidence = _evidence(conn, sql.SQL("ev.claim_id = %(id)s"),
                         {"instance": instance, "id": ident})
    relations = [{"id": f"subject:{k['id']}", "relation": k["predicate"],
                  "direction": "subject", "source": k["subject"], "target": k["object"]
                  or k["object_value"], "sourceNodeId": f"entity:{k['subject_entity_id']}",
                  "targetNodeId": (f"entity:{k['object_entity_id']}"
                                   if k["object_entity_id"] else None),
                  "confidence": round(float(k["confidence"]), 3)}]
    explainer = (
        f"A stored fact about \u201c{k['subject']}\u201d ({k['predicate']}), in the "
        f"{k['visibility_scope']} audience. Its text is the approved assertion's own text; it "
        f"cites {len(k['source_refs'] or [])} source ref(s) and has {len(evidence)} "
        "evidence row(s).")
    return {
        "node": f"claim:{ident}", "kind": "fact", "title": k["assertion_text"],
        "subtitle": f"{k['predicate']} \u00b7 {k['visibility_scope']}",
        "explainer": explainer,
        "metadata": {"type": k["predicate"], "aliases": [], "linkedRecord": None,
                     "subjectRefs": k["subject_refs"] or {},
                     "visibility": k["visibility_scope"],
                     "audienceKey": k["audience_key"] if view == "all" else None,
                     "confidence": round(float(k["confidence"]), 3),
                     "evidenceCounts": _counts_of(evidence),
                     "sourceRefs": k["source_refs"] or [],
                     "validFrom": _iso(k["valid_from"]), "validTo": _iso(k["valid_to"]),
                     "createdAt": _iso(k["created_at"]), "updatedAt": _iso(k["updated_at"])},
        "assertions": [{"id": str(k["id"]), "nodeId": f"claim:{k['id']}",
                        "predicate": k["predicate"], "text": k["assertion_text"],
                        "value": k["object_value"], "subject": k["subject"],
                        "object": k["object"],
                        "subjectNodeId": f"entity:{k['subject_entity_id']}",
                        "objectNodeId": None, "confidence": round(float(k["confidence"]), 3),
                        "visibility": k["visibility_scope"],
                        "sourceRefs": k["source_refs"] or [], "evidence": len(evidence)}],
        "relationships": relations, "evidence": evidence,
    }


def dream_graph_counts(conn: psycopg.Connection, instance_key: str,
                       dream_ids: list[UUID]) -> dict[str, dict[str, int]]:
    """Per Dream: how many entities, claims and edges its evidence backs."""
    if not dream_ids:
        return {}
    rows = conn.execute(
        "SELECT dream_id, count(entity_id), count(claim_id), count(edge_id)"
        " FROM agent_knowledge_evidence WHERE instance_key = %s AND dream_id = ANY(%s)"
        " GROUP BY dream_id", (instance_key, dream_ids)).fetchall()
    return {str(r[0]): {"entities": r[1], "claims": r[2], "edges": r[3]} for r in rows}
