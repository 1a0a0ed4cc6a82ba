"""Drill-down reads of the knowledge graph: one entity, its neighbourhood, one claim's
provenance.

Every statement applies the visibility rule (``access.graph_predicate``) in SQL to each
graph row it reads, and only active rows are answered. An id the caller may not see and an
id that does not exist answer the same :class:`NotFound` (one message, naming nothing of the
row); an id that is not a UUID is :class:`InvalidInput`. Every read is bounded: lists are cut
at a module constant and say so (``truncated``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memory_platform.features.graph.edges import EDGE_SCAN_MAX, edges_around
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.shared.access import AccessContext, graph_predicate

ITEMS_MAX = 50            # claims or edges per list of get_entity; evidence rows of a claim
NEIGHBORS_MAX = 100       # largest neighbors limit
NEIGHBORS_DEFAULT = 25


def parse_graph_id(value: object, field: str) -> UUID:
    """A graph id from a caller: a UUID, else InvalidInput naming the field."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise InvalidInput(f"{field} must be a UUID", details={"field": field}) from None


def _not_found(kind: str) -> NotFound:
    return NotFound(f"no visible {kind} with that id")


def _rows(conn: psycopg.Connection, statement: sql.Composable,
          params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(parameter_safe(statement), params).fetchall()


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


_ENTITY = """
    SELECT e.id, e.label, e.entity_type, e.aliases, e.visibility_scope, e.subject_refs,
           e.linked_record_type, e.linked_record_id, e.created_at, e.updated_at,
           (SELECT count(*) FROM agent_knowledge_evidence ev
             WHERE ev.instance_key = e.instance_key AND ev.entity_id = e.id) AS evidence
      FROM agent_knowledge_entities e
     WHERE e.id = %(id)s AND e.status = 'active' AND {visible}
"""
_CLAIMS = """
    SELECT k.id, k.subject_entity_id, s.label AS subject, k.predicate, k.object_entity_id,
           o.label AS object, k.object_value, k.assertion_text, k.confidence,
           k.valid_from, k.valid_to, k.updated_at
      FROM agent_knowledge_claims k
      JOIN agent_knowledge_entities s
        ON s.instance_key = k.instance_key AND s.id = k.subject_entity_id
      LEFT JOIN agent_knowledge_entities o
        ON o.instance_key = k.instance_key AND o.id = k.object_entity_id
     WHERE k.instance_key = {instance} AND k.{column} = %(id)s AND {visible}
       AND k.status = 'active' AND (k.valid_from IS NULL OR k.valid_from <= now())
       AND (k.valid_to IS NULL OR k.valid_to > now())
     ORDER BY k.confidence DESC, k.updated_at DESC, k.id
     LIMIT {limit}
"""
_EDGES = """
    SELECT g.id, g.source_entity_id, s.label AS source, g.relation_type, g.target_entity_id,
           t.label AS target, g.confidence, g.updated_at
      FROM (SELECT * FROM agent_knowledge_edges g
             WHERE g.instance_key = {instance} AND g.{column} = %(id)s
               AND g.status = 'active' LIMIT {scan}) g
      JOIN agent_knowledge_entities s ON s.instance_key = g.instance_key
       AND s.id = g.source_entity_id AND s.status = 'active'
      JOIN agent_knowledge_entities t ON t.instance_key = g.instance_key
       AND t.id = g.target_entity_id AND t.status = 'active'
     WHERE {visible}
     ORDER BY g.confidence DESC, g.id
     LIMIT {limit}
"""


def _entity_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "label": row["label"], "entityType": row["entity_type"],
            "aliases": list(row["aliases"] or []), "visibility": row["visibility_scope"],
            "subjectRefs": row["subject_refs"] or {},
            "linkedRecord": ({"type": row["linked_record_type"], "id": row["linked_record_id"]}
                             if row["linked_record_id"] else None),
            "createdAt": _iso(row["created_at"]), "updatedAt": _iso(row["updated_at"])}


def claim_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "subjectId": str(row["subject_entity_id"]),
            "subject": row["subject"], "predicate": row["predicate"],
            "objectId": str(row["object_entity_id"]) if row["object_entity_id"] else None,
            "object": row["object"], "value": row["object_value"],
            "text": row["assertion_text"], "confidence": round(float(row["confidence"]), 4),
            "validFrom": _iso(row["valid_from"]), "validTo": _iso(row["valid_to"])}


def _edge_json(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(row["id"]), "sourceId": str(row["source_entity_id"]),
            "source": row["source"], "relationType": row["relation_type"],
            "targetId": str(row["target_entity_id"]), "target": row["target"],
            "confidence": round(float(row["confidence"]), 4)}


def _visible_entity(conn: psycopg.Connection, ctx: AccessContext,
                    ident: UUID) -> dict[str, Any]:
    found = _rows(conn, sql.SQL(_ENTITY).format(visible=graph_predicate(ctx, "e")),
                  {"id": ident})
    if not found:
        raise _not_found("entity")
    return found[0]


def _listed(rows: list[dict[str, Any]], convert: Any) -> tuple[list[dict[str, Any]], bool]:
    return [convert(r) for r in rows[:ITEMS_MAX]], len(rows) > ITEMS_MAX


def get_entity(conn: psycopg.Connection, ctx: AccessContext, entity_id: object) -> dict:
    """The entity, its current claims as subject and as object, its edges (both endpoints
    active) and how many evidence rows back it; at most ``ITEMS_MAX`` per list."""
    ident = parse_graph_id(entity_id, "entityId")
    entity = _visible_entity(conn, ctx, ident)
    common = {"instance": sql.Literal(ctx.instance_key), "limit": sql.Literal(ITEMS_MAX + 1)}
    lists: dict[str, tuple[list[dict[str, Any]], bool]] = {}
    for name, column in (("asSubject", "subject_entity_id"), ("asObject", "object_entity_id")):
        lists[name] = _listed(_rows(conn, sql.SQL(_CLAIMS).format(
            column=sql.Identifier(column), visible=graph_predicate(ctx, "k"), **common),
            {"id": ident}), claim_json)
    for name, column in (("outgoing", "source_entity_id"), ("incoming", "target_entity_id")):
        lists[name] = _listed(_rows(conn, sql.SQL(_EDGES).format(
            column=sql.Identifier(column), visible=graph_predicate(ctx, "g"),
            scan=sql.Literal(EDGE_SCAN_MAX), **common), {"id": ident}), _edge_json)
    return {"entity": _entity_json(entity),
            "claims": {"asSubject": lists["asSubject"][0], "asObject": lists["asObject"][0]},
            "edges": {"outgoing": lists["outgoing"][0], "incoming": lists["incoming"][0]},
            "evidenceCount": entity["evidence"],
            "truncated": any(cut for _, cut in lists.values())}


_HOP = """
    SELECT DISTINCT ON (g.id) g.id, g.source_entity_id, s.label AS source, g.relation_type,
           g.target_entity_id, t.label AS target, g.confidence, anchor.id AS came_from
      {around}
     WHERE {visible}
     ORDER BY g.id, g.confidence DESC
"""


def neighbors(conn: psycopg.Connection, ctx: AccessContext, entity_id: object, *,
              depth: int = 1, limit: int = NEIGHBORS_DEFAULT) -> dict:
    """The entities within ``depth`` (1 or 2) active, visible edges of the entity, nearest
    and most confident first, at most ``limit`` (1..``NEIGHBORS_MAX``) of them, with the
    edges that reach them. A hop reads at most ``EDGE_SCAN_MAX`` edges per entity and the
    second hop starts from the first hop's ``limit`` best neighbours only."""
    ident = parse_graph_id(entity_id, "entityId")
    if depth not in (1, 2):
        raise InvalidInput("depth must be 1 or 2", details={"field": "depth"})
    if not isinstance(limit, int) or not 1 <= limit <= NEIGHBORS_MAX:
        raise InvalidInput(f"limit must be 1-{NEIGHBORS_MAX}", details={"field": "limit"})
    root = _visible_entity(conn, ctx, ident)
    hop = sql.SQL(_HOP).format(
        around=edges_around(sql.Placeholder("frontier"), sql.Literal(ctx.instance_key)),
        visible=graph_predicate(ctx, "g"))
    found: dict[UUID, dict[str, Any]] = {}
    edges: dict[UUID, dict[str, Any]] = {}
    frontier = [ident]
    for distance in range(1, depth + 1):
        reached: dict[UUID, dict[str, Any]] = {}
        for row in sorted(_rows(conn, hop, {"frontier": frontier}),
                          key=lambda r: (-float(r["confidence"]), str(r["id"]))):
            edges.setdefault(row["id"], _edge_json(row))
            other = (row["target_entity_id"] if row["source_entity_id"] == row["came_from"]
                     else row["source_entity_id"])
            label = row["target"] if other == row["target_entity_id"] else row["source"]
            if other != ident and other not in found and other not in reached:
                reached[other] = {"id": str(other), "label": label, "distance": distance,
                                  "viaEdgeId": str(row["id"])}
        chosen = list(reached.items())[:limit - len(found)]
        found.update(chosen)
        frontier = [other for other, _ in chosen]
        if not frontier or len(found) >= limit:
            break
    kept = {n["viaEdgeId"] for n in found.values()}
    return {"entity": _entity_json(root), "depth": depth,
            "neighbors": list(found.values()),
            "edges": [e for key, e in edges.items() if str(key) in kept],
            "truncated": len(found) >= limit}


_CLAIM = """
    SELECT k.id, k.subject_entity_id, s.label AS subject, k.predicate, k.object_entity_id,
           o.label AS object, k.object_value, k.assertion_text, k.confidence, k.valid_from,
           k.valid_to, k.visibility_scope, k.source_refs, k.created_at, k.updated_at
      FROM agent_knowledge_claims k
      JOIN agent_knowledge_entities s
        ON s.instance_key = k.instance_key AND s.id = k.subject_entity_id
      LEFT JOIN agent_knowledge_entities o
        ON o.instance_key = k.instance_key AND o.id = k.object_entity_id
     WHERE k.id = %(id)s AND k.status = 'active' AND {visible}
"""
# Each source ref, and whether it still supports the claim: an assertion ref whose
# assertion may be told now (migration 0018's rule; a Dream ref never supports by itself).
_REFS = """
    SELECT r.ref, memory_v2_graph_refs_have_current_support(k.instance_key,
                                                            jsonb_build_array(r.ref))
      FROM agent_knowledge_claims k
     CROSS JOIN LATERAL jsonb_array_elements(k.source_refs) WITH ORDINALITY AS r(ref, n)
     WHERE k.id = %(id)s AND {visible}
     ORDER BY r.n
     LIMIT {limit}
"""
_EVIDENCE = """
    SELECT ev.id, ev.evidence_kind, ev.assertion_id, a.assertion_text, a.status,
           a.review_state, ev.excerpt, ev.source_memory_id, ev.dream_id, ev.created_at
      FROM agent_knowledge_evidence ev
      JOIN agent_knowledge_claims k ON k.instance_key = ev.instance_key AND k.id = ev.claim_id
      LEFT JOIN agent_memory_assertions a
        ON a.instance_key = ev.instance_key AND a.id = ev.assertion_id
     WHERE ev.claim_id = %(id)s AND {visible}
     ORDER BY ev.created_at DESC, ev.id
     LIMIT {limit}
"""


def explain_claim(conn: psycopg.Connection, ctx: AccessContext, claim_id: object) -> dict:
    """The claim, each of its source refs with whether it is currently supported, and its
    evidence rows (assertion id, text and status, excerpt, source memory, Dream), newest
    first, at most ``ITEMS_MAX`` of each."""
    ident = parse_graph_id(claim_id, "claimId")
    found = _rows(conn, sql.SQL(_CLAIM).format(visible=graph_predicate(ctx, "k")),
                  {"id": ident})
    if not found:
        raise _not_found("claim")
    claim = found[0]
    limit = sql.Literal(ITEMS_MAX + 1)
    refs = conn.execute(parameter_safe(sql.SQL(_REFS).format(
        visible=graph_predicate(ctx, "k"), limit=limit)), {"id": ident}).fetchall()
    evidence = _rows(conn, sql.SQL(_EVIDENCE).format(visible=graph_predicate(ctx, "k"),
                                                     limit=limit), {"id": ident})
    out = claim_json(claim)
    out.update(visibility=claim["visibility_scope"], createdAt=_iso(claim["created_at"]),
               updatedAt=_iso(claim["updated_at"]))
    return {
        "claim": out,
        "sourceRefs": [{**(ref if isinstance(ref, dict) else {"ref": ref}),
                        "supported": bool(supported)} for ref, supported in refs[:ITEMS_MAX]],
        "supported": any(supported for _, supported in refs),
        "evidence": [{"id": str(e["id"]), "kind": e["evidence_kind"],
                      "assertionId": str(e["assertion_id"]) if e["assertion_id"] else None,
                      "assertionText": e["assertion_text"], "assertionStatus": e["status"],
                      "reviewState": e["review_state"], "excerpt": e["excerpt"],
                      "sourceMemoryId": (str(e["source_memory_id"])
                                         if e["source_memory_id"] else None),
                      "dreamId": str(e["dream_id"]) if e["dream_id"] else None,
                      "createdAt": _iso(e["created_at"])} for e in evidence[:ITEMS_MAX]],
        "dreamIds": sorted({str(e["dream_id"]) for e in evidence if e["dream_id"]}),
        "truncated": len(refs) > ITEMS_MAX or len(evidence) > ITEMS_MAX,
    }
