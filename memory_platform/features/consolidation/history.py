"""What the ledger believed at a past moment (asOf), with each belief's revision chain.

The ledger is bitemporal: valid time is the assertion's window (``valid_from`` /
``valid_to``: when the statement holds in the world), recorded time is
``agent_memory_assertion_history.recorded_at`` (migration 0021: when the ledger held a
state). An assertion was *believed true at* ``as_of`` when its latest recorded state at or
before ``as_of`` was active and approved (the recall rule ``TOLD`` of ``ledger/recall.py``,
restated over the history row) and that state's window contained ``as_of``.

Visibility is today's: the caller sees exactly the assertions (and chain members) the
visibility rule opens to it now (``access.audience_predicate``, in SQL), never more because
they were once visible. Every read is bounded: at most ``scan_cap`` candidates, ``limit``
results, :data:`CHAIN_DEPTH` revisions each way.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.retrieval.terms import query_terms, tsquery
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext, audience_predicate

CHAIN_DEPTH = 10
MAX_LIMIT = 50
DEFAULT_SCAN_CAP = 2000

# Candidates: visible assertions recorded by then (optionally matching the question), newest
# first, at most scan_cap. Then each one's latest history row at or before as_of (the index
# agent_memory_assertion_history_asof_idx), kept when that state was told at as_of.
_AS_OF = """
    WITH candidates AS (
        SELECT a.id, {rank} AS rank
          FROM agent_memory_assertions a
         WHERE {visible} AND a.created_at <= %(as_of)s {matches}
         ORDER BY a.created_at DESC, a.id
         LIMIT %(scan_cap)s
    )
    SELECT a.id, a.assertion_type, a.audience_kind, a.assertion_text, a.status,
           a.review_state, a.valid_from, a.valid_to,
           h.assertion_text, h.status, h.review_state, h.valid_from, h.valid_to,
           h.recorded_at, h.backfilled, c.rank
      FROM candidates c
      JOIN agent_memory_assertions a ON a.id = c.id
      CROSS JOIN LATERAL (
          SELECT h.*
            FROM agent_memory_assertion_history h
           WHERE h.assertion_id = a.id AND h.instance_key = a.instance_key
             AND h.recorded_at <= %(as_of)s
           ORDER BY h.recorded_at DESC, h.id DESC
           LIMIT 1) h
     WHERE h.status = 'active'
       AND h.review_state IN ('policy_approved', 'human_approved')
       AND (h.valid_from IS NULL OR h.valid_from <= %(as_of)s)
       AND (h.valid_to IS NULL OR h.valid_to > %(as_of)s)
     ORDER BY c.rank DESC, h.recorded_at DESC, a.id
     LIMIT %(limit)s
"""

# One step of the chain from ``cur``: earlier = what it revised (revision_of, else the
# latest assertion it superseded), later = what superseded it (superseded_by, else the first
# revision of it). A linear walk, so each direction is at most CHAIN_DEPTH rows per root;
# it stops at a row the caller may not see and never visits a row twice.
_STEP = {
    "earlier": """coalesce(cur.revision_of,
        (SELECT y.id FROM agent_memory_assertions y
          WHERE y.instance_key = cur.instance_key AND y.superseded_by = cur.id
          ORDER BY y.updated_at DESC, y.id LIMIT 1))""",
    "later": """coalesce(cur.superseded_by,
        (SELECT y.id FROM agent_memory_assertions y
          WHERE y.instance_key = cur.instance_key AND y.revision_of = cur.id
          ORDER BY y.created_at, y.id LIMIT 1))""",
}
_CHAIN = """
    WITH RECURSIVE walk(root, id, depth, path) AS (
        SELECT root, root, 0, ARRAY[root] FROM unnest(%(ids)s::uuid[]) AS root
      UNION ALL
        SELECT w.root, a.id, w.depth + 1, w.path || a.id
          FROM walk w
          JOIN agent_memory_assertions cur
            ON cur.instance_key = %(instance)s AND cur.id = w.id
          JOIN agent_memory_assertions a
            ON a.instance_key = %(instance)s AND a.id = {step}
         WHERE w.depth < %(depth)s AND NOT a.id = ANY(w.path) AND {visible}
    )
    SELECT w.root, w.depth, a.id, a.assertion_text, a.status, a.review_state, a.created_at,
           a.updated_at
      FROM walk w
      JOIN agent_memory_assertions a ON a.instance_key = %(instance)s AND a.id = w.id
     WHERE w.depth > 0
     ORDER BY w.root, w.depth
"""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _chain(conn: psycopg.Connection, ctx: AccessContext, ids: list[UUID],
           direction: str) -> dict[UUID, list[dict[str, Any]]]:
    statement = parameter_safe(sql.SQL(_CHAIN).format(
        step=sql.SQL(_STEP[direction]), visible=audience_predicate(ctx, "a")))
    found: dict[UUID, list[dict[str, Any]]] = {i: [] for i in ids}
    if not ids:
        return found
    for root, depth, ident, text, status, review, created, updated in conn.execute(
            statement, {"ids": ids, "instance": ctx.instance_key, "depth": CHAIN_DEPTH}):
        found[root].append({"id": str(ident), "text": text, "status": status,
                            "reviewState": review, "createdAt": _iso(created),
                            "updatedAt": _iso(updated), "distance": depth})
    return found


def assertions_as_of(
    conn: psycopg.Connection,
    ctx: AccessContext,
    as_of: datetime,
    *,
    query: str | None = None,
    limit: int = MAX_LIMIT,
    scan_cap: int = DEFAULT_SCAN_CAP,
) -> list[dict[str, Any]]:
    """The assertions ``ctx`` may see that were believed true at ``as_of`` (timezone-aware),
    best first: with ``query``, by full-text rank over ``assertion_tsv`` (German and English,
    the question's content words OR-ed; a question without content words matches nothing),
    else newest first. At most ``scan_cap`` visible candidates are read (the newest recorded
    by ``as_of``), at most ``limit`` (1..50) answered.

    Each answer: ``id``, ``text`` (as recorded then), ``assertionType``, ``visibility``,
    ``then`` (the state believed at ``as_of``: status, review state, window, ``recordedAt``,
    ``backfilled`` when that row is the migration's backfill and earlier changes are
    unknown), ``now`` (its current state and text), ``earlier`` and ``later`` (the revision
    chain, nearest first, at most :data:`CHAIN_DEPTH` each, only rows ``ctx`` may see)."""
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise InvalidInput("as_of needs a timezone offset", details={"field": "at"})
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}",
                           details={"field": "limit"})
    params: dict[str, Any] = {"as_of": as_of, "scan_cap": max(1, scan_cap), "limit": limit}
    rank, matches = sql.SQL("0::real"), sql.SQL("")
    if query is not None:
        terms = query_terms(query)
        if not terms:
            return []
        params["terms"] = " | ".join(terms)
        question = tsquery(sql.Placeholder("terms"))
        rank = sql.SQL("ts_rank(a.assertion_tsv, {}, 0)").format(question)
        matches = sql.SQL("AND a.assertion_tsv @@ {}").format(question)
    statement = parameter_safe(sql.SQL(_AS_OF).format(
        rank=rank, matches=matches, visible=audience_predicate(ctx, "a")))
    rows = conn.execute(statement, params).fetchall()
    ids = [r[0] for r in rows]
    earlier, later = _chain(conn, ctx, ids, "earlier"), _chain(conn, ctx, ids, "later")
    out = []
    for (ident, atype, kind, text_now, status, review, vfrom, vto, text_then, h_status,
         h_review, h_from, h_to, recorded, backfilled, _rank) in rows:
        out.append({
            "id": str(ident), "text": text_then, "assertionType": atype, "visibility": kind,
            "then": {"status": h_status, "reviewState": h_review, "validFrom": _iso(h_from),
                     "validTo": _iso(h_to), "recordedAt": _iso(recorded),
                     "backfilled": backfilled},
            "now": {"status": status, "reviewState": review, "text": text_now,
                    "validFrom": _iso(vfrom), "validTo": _iso(vto)},
            "earlier": earlier[ident], "later": later[ident],
        })
    return out
