"""Refs of assertions that may no longer be told leave the graph.

Specification, "Knowledge graph": when an assertion is revoked, superseded, rejected or
expires, its memory refs are removed from claims and edges and newly orphaned entities are
quarantined. A claim or edge keeps standing while another current ref supports it; one left
without any becomes ``superseded`` (history, never deleted). An entity that was touched and
is now neither subject nor object of an active claim nor an end of an active non-self edge
becomes ``quarantined``.

The told check is SQL's (the validity window is the database clock's): an assertion that is
told now is left alone whatever the caller passes. :func:`retract_assertions` follows a
ledger event; :func:`retract_unsupported` is the bounded sweep for assertions that stopped
being told without one (expired by ``valid_to``). Both run inside the caller's transaction.

The helpers (:func:`remove_refs`, :func:`quarantine_orphans`, :func:`lock_partitions`) are
shared with the per-Dream cleanup (``store.remove_dream_refs``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.graph.types import GraphChanges
from memory_platform.shared.ledger.recall import TOLD

# The ref's assertion id as a uuid, or NULL when it has not the shape of one (a hand-written
# ref never makes a statement fail). Over ``r.ref``.
REF_ASSERTION_ID = sql.SQL(
    "(CASE WHEN r.ref ->> 'assertionId'"
    " ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"
    " THEN (r.ref ->> 'assertionId')::uuid END)")

# Claims and edges: the table, and the entity columns an item touches.
ITEM_TABLES = {
    "claim": ("agent_knowledge_claims", ("subject_entity_id", "object_entity_id")),
    "edge": ("agent_knowledge_edges", ("source_entity_id", "target_entity_id")),
}

# Whether a claim or edge (alias ``k``) still stands after refs left it: "current" = some
# ref's assertion is told now (retraction); "stable" = some memory ref is left (per-Dream
# cleanup, which removes Dream refs only and leaves assertion state to retraction).
SUPPORT = {
    "current": sql.SQL("memory_v2_graph_refs_have_current_support(k.instance_key,"
                       " k.source_refs)"),
    "stable": sql.SQL("EXISTS (SELECT 1 FROM jsonb_array_elements(k.source_refs) r(ref)"
                      " WHERE r.ref ? 'assertionId')"),
}


def lock_partitions(conn: psycopg.Connection, instance_key: str,
                    partitions: Iterable[tuple[str, str]]) -> None:
    """The store's advisory lock of each (audience kind, key) partition, in one order (so
    two retractions never wait on each other crosswise)."""
    for kind, key in sorted(set(partitions)):
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                     (f"knowledge-graph:{instance_key}/{kind}/{key}",))


# Rows citing any pattern (one GIN probe per pattern), their refs without the matching
# elements (order kept), how many left each row, and the entities it touches.
_REMOVE = """
    WITH hit AS (
        SELECT DISTINCT k.id, jsonb_array_length(k.source_refs) AS before
          FROM unnest(%(patterns)s::jsonb[]) AS p(pattern)
          CROSS JOIN LATERAL (
                SELECT id, source_refs FROM {table} k
                 WHERE k.instance_key = %(instance)s
                   AND k.source_refs @> jsonb_build_array(p.pattern)) k
    )
    UPDATE {table} k
       SET source_refs = (
               SELECT coalesce(jsonb_agg(r.ref ORDER BY r.n), '[]'::jsonb)
                 FROM jsonb_array_elements(k.source_refs) WITH ORDINALITY AS r(ref, n)
                WHERE NOT EXISTS (SELECT 1 FROM unnest(%(patterns)s::jsonb[]) AS p(pattern)
                                   WHERE r.ref @> p.pattern))
      FROM hit
     WHERE k.id = hit.id
    RETURNING k.id, hit.before - jsonb_array_length(k.source_refs), {a}, {b}
"""
_SUPERSEDE = """
    UPDATE {table} k SET status = 'superseded'
     WHERE k.id = ANY(%s) AND k.status = 'active' AND NOT {support}
    RETURNING k.id
"""


def remove_refs(conn: psycopg.Connection, instance_key: str, patterns: Sequence[dict],
                *, supported: str, changes: GraphChanges) -> set[UUID]:
    """Remove every ref containing one of ``patterns`` from the instance's claims and edges
    (any status: history keeps no ref that was withdrawn), supersede the active ones left
    without ``supported`` support, and answer the entities the changed rows touch."""
    touched: set[UUID] = set()
    for kind, (table, (a, b)) in ITEM_TABLES.items():
        statement = sql.SQL(_REMOVE).format(table=sql.Identifier(table),
                                            a=sql.Identifier("k", a), b=sql.Identifier("k", b))
        rows = conn.execute(statement, {"patterns": [Jsonb(p) for p in patterns],
                                        "instance": instance_key}).fetchall()
        changes.refs_removed += sum(row[1] for row in rows)
        touched |= {entity for row in rows for entity in row[2:] if entity is not None}
        if not rows:
            continue
        superseded = conn.execute(
            sql.SQL(_SUPERSEDE).format(table=sql.Identifier(table), support=SUPPORT[supported]),
            ([row[0] for row in rows],)).fetchall()
        if kind == "claim":
            changes.claims_retracted += len(superseded)
        else:
            changes.edges_retracted += len(superseded)
    return touched


# Active entities among the given ids that nothing connects any more: no active claim names
# them (as subject or object), no active non-self edge ends at them. The claims and edges to
# ignore are treated as gone (a dry run's view of its own proposals). Locked: the caller
# decides about them next.
_ORPHANS = """
    SELECT e.id FROM agent_knowledge_entities e
     WHERE e.instance_key = %(instance)s AND e.id = ANY(%(ids)s::uuid[]) AND e.status = 'active'
       AND NOT EXISTS (SELECT 1 FROM agent_knowledge_claims c
                        WHERE c.instance_key = e.instance_key AND c.status = 'active'
                          AND c.id <> ALL(%(claims)s::uuid[])
                          AND (c.subject_entity_id = e.id OR c.object_entity_id = e.id))
       AND NOT EXISTS (SELECT 1 FROM agent_knowledge_edges g
                        WHERE g.instance_key = e.instance_key AND g.status = 'active'
                          AND g.id <> ALL(%(edges)s::uuid[])
                          AND g.source_entity_id <> g.target_entity_id
                          AND (g.source_entity_id = e.id OR g.target_entity_id = e.id))
     ORDER BY e.id
     FOR UPDATE
"""
_QUARANTINE = """
    UPDATE agent_knowledge_entities e
       SET status = 'quarantined',
           metadata = e.metadata || jsonb_build_object('quarantinedAt', now(), 'reason', %s::text)
     WHERE e.instance_key = %s AND e.id = ANY(%s)
"""


def orphans(conn: psycopg.Connection, instance_key: str, entity_ids: Iterable[UUID], *,
            ignoring_claims: Iterable[UUID] = (),
            ignoring_edges: Iterable[UUID] = ()) -> list[UUID]:
    """THE orphan rule: those of ``entity_ids`` that are active and no longer connected (no
    active claim names them, no active non-self edge ends at them), ``ignoring_claims`` and
    ``ignoring_edges`` counted as gone; locked, in id order."""
    ids = list(set(entity_ids))
    if not ids:
        return []
    return [row[0] for row in conn.execute(_ORPHANS, {
        "instance": instance_key, "ids": ids, "claims": list(ignoring_claims),
        "edges": list(ignoring_edges)}).fetchall()]


def quarantine_orphans(conn: psycopg.Connection, instance_key: str,
                       entity_ids: Iterable[UUID], reason: str) -> int:
    """Quarantine the :func:`orphans` among ``entity_ids`` (the entities a change touched);
    how many."""
    found = orphans(conn, instance_key, entity_ids)
    if found:
        conn.execute(_QUARANTINE, (reason, instance_key, found))
    return len(found)


_UNTOLD = sql.SQL("""
    SELECT x.id, a.audience_kind, a.audience_key
      FROM unnest(%s::uuid[]) AS x(id)
      LEFT JOIN agent_memory_assertions a ON a.instance_key = %s AND a.id = x.id
     WHERE a.id IS NULL OR NOT {told}
""").format(told=TOLD)


def retract_assertions(conn: psycopg.Connection, instance_key: str,
                       assertion_ids: Iterable[UUID]) -> GraphChanges:
    """Withdraw the graph support of those ``assertion_ids`` that are not told now (an
    unknown id counts as not told; a told one is left alone): their memory refs leave claims
    and edges, their ``assertion`` evidence rows are deleted, unsupported claims and edges
    are superseded, newly orphaned entities quarantined."""
    changes = GraphChanges()
    ids = list(dict.fromkeys(assertion_ids))
    if not ids:
        return changes
    untold = conn.execute(_UNTOLD, (ids, instance_key)).fetchall()
    if not untold:
        return changes
    lock_partitions(conn, instance_key, [(row[1], row[2]) for row in untold if row[1]])
    gone = [row[0] for row in untold]
    touched = remove_refs(conn, instance_key, [{"assertionId": str(i)} for i in gone],
                          supported="current", changes=changes)
    deleted = conn.execute(
        "DELETE FROM agent_knowledge_evidence WHERE instance_key = %s"
        " AND evidence_kind = 'assertion' AND assertion_id = ANY(%s) RETURNING entity_id",
        (instance_key, gone)).fetchall()
    touched |= {row[0] for row in deleted if row[0] is not None}
    changes.entities_quarantined = quarantine_orphans(conn, instance_key, touched,
                                                      "orphaned_by_retraction")
    return changes


# Refs of active items whose assertion is not told now; at most %(limit)s of them.
_STALE = """
    SELECT k.instance_key, {ref_id}
      FROM {table} k
      CROSS JOIN LATERAL jsonb_array_elements(k.source_refs) AS r(ref)
     WHERE k.status = 'active'
       AND (%(instance)s::text IS NULL OR k.instance_key = %(instance)s)
       AND r.ref ? 'assertionId'
       AND NOT EXISTS (SELECT 1 FROM agent_memory_assertions a
                        WHERE a.instance_key = k.instance_key AND a.id = {ref_id}
                          AND {told})
     LIMIT %(limit)s
"""


def retract_unsupported(conn: psycopg.Connection, instance_key: str | None = None,
                        limit: int = 1000) -> GraphChanges:
    """The sweep: active claims and edges (of one instance, or all) citing an assertion that
    is no longer told lose those refs the way :func:`retract_assertions` removes them.

    Bounded: at most ``limit`` stale refs (so at most ``limit`` assertions) are gathered per
    call; call again while it reports ``refs_removed``. With none left, the look-up is one
    pass over the active items."""
    found: dict[str, set[UUID]] = {}
    left = limit
    for table, _ in ITEM_TABLES.values():
        if left <= 0:
            break
        statement = sql.SQL(_STALE).format(table=sql.Identifier(table),
                                           ref_id=REF_ASSERTION_ID, told=TOLD)
        rows = conn.execute(statement, {"instance": instance_key, "limit": left}).fetchall()
        left -= len(rows)
        for instance, assertion_id in rows:
            if assertion_id is not None:
                found.setdefault(instance, set()).add(assertion_id)
    changes = GraphChanges()
    for instance, ids in sorted(found.items()):
        changes += retract_assertions(conn, instance, sorted(ids))
    return changes
