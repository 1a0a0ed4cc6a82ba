"""The review queues: what waits for a person, for the audiences the reviewer may see.

* pending assertions: ``candidate`` (or standing with ``review_state = 'pending'``), each
  with its evidence (verbatim excerpts, their source ids and the source memories);
* open conflicts: both assertions of the pair with their evidence;
* Wiki drafts: ``wiki_change_proposals`` in state ``draft``.

Visibility is THE rule of :mod:`memory_platform.shared.access`, applied in SQL
(``audience_predicate``): a row the reviewer may not see never leaves the database. Lists
are ordered by (``created_at``, ``id``) and paged with an opaque cursor (the last row's
``created_at|id``); ``limit`` is capped at :data:`MAX_LIMIT`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AUDIENCE_KINDS, AccessContext, audience_predicate

KINDS = ("assertion", "conflict", "wiki_draft")
ASSERTION_TYPES = ("fact", "preference", "decision", "constraint", "procedure", "correction",
                   "observation")
ORIGINS = ("shared_fact", "explicit", "flush", "dream", "import", "consolidation",
           "manual_review")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500               # also the bound of a bulk decision
EVIDENCE_PER_ASSERTION = 20

# Waiting for a person: a candidate, or a standing assertion still pending review.
PENDING = sql.SQL("(a.status = 'candidate' OR (a.review_state = 'pending'"
                  " AND a.status IN ('active', 'conflicted')))")
# Wiki proposals name no owner: the rule reads them with a NULL owner.
WIKI = sql.SQL("(SELECT p.*, NULL::text AS owner_user_id FROM wiki_change_proposals p)")


def _check(value: str | None, allowed: tuple[str, ...], field: str) -> None:
    if value is not None and value not in allowed:
        raise InvalidInput(f"unknown {field} {value!r}",
                           details={"field": field, "allowed": list(allowed)})


def _limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}",
                           details={"field": "limit"})
    return limit


def parse_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    """``created_at|id`` of the last row of the previous page."""
    if not cursor:
        return None
    try:
        stamp, ident = cursor.split("|", 1)
        return datetime.fromisoformat(stamp), UUID(ident)
    except ValueError as exc:
        raise InvalidInput("malformed cursor", details={"field": "cursor"}) from exc


def _cursor_of(row: dict[str, Any]) -> str:
    return f"{row['created_at'].isoformat()}|{row['id']}"


def _page(rows: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], str | None]:
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (_cursor_of(rows[-1]) if more and rows else None)


def _filters(alias: str, *, audience: str | None, after: tuple[datetime, UUID] | None,
             ids: list[UUID] | None) -> tuple[list[sql.Composable], dict[str, Any]]:
    """The filters every queue shares: audience kind, the page's cursor, explicit ids."""
    clauses: list[sql.Composable] = []
    params: dict[str, Any] = {}
    if audience is not None:
        clauses.append(sql.SQL("{} = %(audience)s").format(
            sql.Identifier(alias, "audience_kind")))
        params["audience"] = audience
    if after is not None:
        clauses.append(sql.SQL("({}, {}) > (%(after_at)s, %(after_id)s)").format(
            sql.Identifier(alias, "created_at"), sql.Identifier(alias, "id")))
        params.update(after_at=after[0], after_id=after[1])
    if ids is not None:
        clauses.append(sql.SQL("{} = ANY(%(ids)s::uuid[])").format(sql.Identifier(alias, "id")))
        params["ids"] = list(ids)
    return clauses, params


def _fetch(conn: psycopg.Connection, statement: sql.Composable, alias: str, *,
           audience: str | None, after: tuple[datetime, UUID] | None, ids: list[UUID] | None,
           limit: int, clauses: tuple[sql.Composable, ...] = (),
           params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run one queue's ``statement`` (a SELECT ending in its WHERE conditions) with the
    shared filters and ``clauses`` ANDed on, in queue order (``created_at``, ``id``), at
    most ``limit`` rows."""
    shared, values = _filters(alias, audience=audience, after=after, ids=ids)
    query = sql.SQL("{statement} {more} ORDER BY {at}, {id} LIMIT %(limit)s").format(
        statement=statement,
        more=sql.SQL("").join(sql.SQL(" AND ") + c for c in (*shared, *clauses)),
        at=sql.Identifier(alias, "created_at"), id=sql.Identifier(alias, "id"))
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, {**values, **(params or {}), "limit": limit}).fetchall()


def _paged(read: Callable[[int, tuple[datetime, UUID] | None], list[dict[str, Any]]],
           limit: int | None, cursor: str | None
           ) -> tuple[list[dict[str, Any]], str | None]:
    """One page of ``read(limit, after)``: the rows and the next page's cursor."""
    size = _limit(limit)
    return _page(read(size + 1, parse_cursor(cursor)), size)


def check_filters(*, assertion_type: str | None = None, audience: str | None = None,
                  origin: str | None = None) -> None:
    """InvalidInput naming the field when a filter value is not one the queues know."""
    _check(assertion_type, ASSERTION_TYPES, "type")
    _check(audience, AUDIENCE_KINDS, "audience")
    _check(origin, ORIGINS, "origin")


def evidence_of(conn: psycopg.Connection, ctx: AccessContext,
                assertion_ids: list[UUID]) -> dict[UUID, list[dict[str, Any]]]:
    """The evidence of the visible assertions among ``assertion_ids``: per assertion its
    excerpts (stance, source id, source kind and trust class) and the ids of the source
    memories (``agent_memories`` rows of that source), at most
    :data:`EVIDENCE_PER_ASSERTION` each."""
    if not assertion_ids:
        return {}
    query = sql.SQL("""
        SELECT e.assertion_id, e.excerpt, e.stance, e.source_id, s.source_kind, s.trust_class,
               e.created_at,
               coalesce((SELECT array_agg(m.id ORDER BY m.created_at)
                           FROM agent_memories m
                          WHERE m.instance_key = e.instance_key AND m.source_id = e.source_id),
                        '{{}}') AS memory_ids
          FROM agent_memory_assertions a
          JOIN agent_memory_assertion_evidence e
            ON e.instance_key = a.instance_key AND e.assertion_id = a.id
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
         WHERE a.id = ANY(%(ids)s::uuid[]) AND {visible}
         ORDER BY e.assertion_id, e.created_at, e.id
    """).format(visible=audience_predicate(ctx, "a"))
    found: dict[UUID, list[dict[str, Any]]] = {}
    for row in conn.execute(query, {"ids": list(assertion_ids)}).fetchall():
        items = found.setdefault(row[0], [])
        if len(items) < EVIDENCE_PER_ASSERTION:
            items.append({"excerpt": row[1], "stance": row[2], "sourceId": str(row[3]),
                          "sourceKind": row[4], "trustClass": row[5],
                          "sourceMemoryIds": [str(m) for m in row[7]]})
    return found


_ASSERTION_COLUMNS = sql.SQL("""
    a.id, a.created_at, a.audience_kind, a.audience_key, a.owner_user_id, a.assertion_type,
    a.assertion_text, a.subject, a.predicate, a.status, a.review_state, a.origin,
    a.confidence, a.dream_id, a.valid_from, a.valid_to
""")


def _assertion_view(row: dict[str, Any], evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": str(row["id"]), "kind": "assertion",
        "audience": {"kind": row["audience_kind"], "key": row["audience_key"]},
        "ownerUserId": row["owner_user_id"], "assertionType": row["assertion_type"],
        "text": row["assertion_text"], "subject": row["subject"],
        "predicate": row["predicate"], "status": row["status"],
        "reviewState": row["review_state"], "origin": row["origin"],
        "confidence": float(row["confidence"]),
        "dreamId": str(row["dream_id"]) if row["dream_id"] else None,
        "validFrom": row["valid_from"].isoformat() if row["valid_from"] else None,
        "validTo": row["valid_to"].isoformat() if row["valid_to"] else None,
        "createdAt": row["created_at"].isoformat(), "evidence": evidence,
    }


def pending_assertion_rows(conn: psycopg.Connection, ctx: AccessContext, *,
                           assertion_type: str | None = None, audience: str | None = None,
                           origin: str | None = None, limit: int = DEFAULT_LIMIT,
                           after: tuple[datetime, UUID] | None = None,
                           ids: list[UUID] | None = None) -> list[dict[str, Any]]:
    """The raw pending rows (``limit`` of them, no evidence): the queue and bulk decisions
    read the same statement."""
    clauses: list[sql.Composable] = []
    if assertion_type is not None:
        clauses.append(sql.SQL("a.assertion_type = %(type)s"))
    if origin is not None:
        clauses.append(sql.SQL("a.origin = %(origin)s"))
    statement = sql.SQL("SELECT {columns} FROM agent_memory_assertions a"
                        " WHERE {visible} AND {pending}").format(
        columns=_ASSERTION_COLUMNS, visible=audience_predicate(ctx, "a"), pending=PENDING)
    return _fetch(conn, statement, "a", audience=audience, after=after, ids=ids, limit=limit,
                  clauses=tuple(clauses), params={"type": assertion_type, "origin": origin})


def pending_assertions(conn: psycopg.Connection, ctx: AccessContext, *,
                       assertion_type: str | None = None, audience: str | None = None,
                       origin: str | None = None, limit: int | None = None,
                       cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Pending assertions visible to ``ctx`` with their evidence, and the next page's
    cursor (None on the last page)."""
    check_filters(assertion_type=assertion_type, audience=audience, origin=origin)
    rows, following = _paged(lambda size, after: pending_assertion_rows(
        conn, ctx, assertion_type=assertion_type, audience=audience, origin=origin,
        limit=size, after=after), limit, cursor)
    evidence = evidence_of(conn, ctx, [r["id"] for r in rows])
    return [_assertion_view(r, evidence.get(r["id"], [])) for r in rows], following


def visible_assertions(conn: psycopg.Connection, ctx: AccessContext,
                       ids: list[UUID]) -> dict[UUID, dict[str, Any]]:
    """The assertions among ``ids`` that ``ctx`` may see (any state), with evidence."""
    if not ids:
        return {}
    query = sql.SQL("SELECT {columns} FROM agent_memory_assertions a"
                    " WHERE a.id = ANY(%(ids)s::uuid[]) AND {visible}").format(
        columns=_ASSERTION_COLUMNS, visible=audience_predicate(ctx, "a"))
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(query, {"ids": list(ids)}).fetchall()
    evidence = evidence_of(conn, ctx, [r["id"] for r in rows])
    return {r["id"]: _assertion_view(r, evidence.get(r["id"], [])) for r in rows}


def open_conflict_rows(conn: psycopg.Connection, ctx: AccessContext, *,
                       audience: str | None = None, limit: int = DEFAULT_LIMIT,
                       after: tuple[datetime, UUID] | None = None,
                       ids: list[UUID] | None = None) -> list[dict[str, Any]]:
    """Open conflicts whose two assertions ``ctx`` may both see (raw rows)."""
    statement = sql.SQL("""
        SELECT c.id, c.created_at, c.audience_kind, c.audience_key, c.assertion_id,
               c.conflicting_assertion_id, c.detected_by, c.reason
          FROM agent_memory_assertion_conflicts c
          JOIN agent_memory_assertions a
            ON a.instance_key = c.instance_key AND a.id = c.assertion_id
          JOIN agent_memory_assertions b
            ON b.instance_key = c.instance_key AND b.id = c.conflicting_assertion_id
         WHERE c.status = 'open' AND {visible_a} AND {visible_b}
    """).format(visible_a=audience_predicate(ctx, "a"), visible_b=audience_predicate(ctx, "b"))
    return _fetch(conn, statement, "c", audience=audience, after=after, ids=ids, limit=limit)


def open_conflicts(conn: psycopg.Connection, ctx: AccessContext, *,
                   audience: str | None = None, limit: int | None = None,
                   cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Open conflicts visible to ``ctx``: each with both assertions and their evidence
    (``assertion`` is the challenger, ``conflictingAssertion`` the one it challenges)."""
    check_filters(audience=audience)
    rows, following = _paged(lambda size, after: open_conflict_rows(
        conn, ctx, audience=audience, limit=size, after=after), limit, cursor)
    members = visible_assertions(
        conn, ctx, [i for r in rows for i in (r["assertion_id"], r["conflicting_assertion_id"])])
    return [{
        "id": str(r["id"]), "kind": "conflict",
        "audience": {"kind": r["audience_kind"], "key": r["audience_key"]},
        "detectedBy": r["detected_by"], "reason": r["reason"],
        "createdAt": r["created_at"].isoformat(),
        "assertion": members.get(r["assertion_id"]),
        "conflictingAssertion": members.get(r["conflicting_assertion_id"]),
    } for r in rows], following


def wiki_draft_rows(conn: psycopg.Connection, ctx: AccessContext, *,
                    audience: str | None = None, limit: int = DEFAULT_LIMIT,
                    after: tuple[datetime, UUID] | None = None,
                    ids: list[UUID] | None = None) -> list[dict[str, Any]]:
    """Wiki drafts visible to ``ctx`` (raw rows)."""
    statement = sql.SQL("""
        SELECT w.id, w.created_at, w.audience_kind, w.audience_key, w.dream_id, w.page_slug,
               w.title, w.body_markdown, w.rationale, w.assertion_refs, w.evidence_refs
          FROM {wiki} w
         WHERE w.state = 'draft' AND {visible}
    """).format(wiki=WIKI, visible=audience_predicate(ctx, "w"))
    return _fetch(conn, statement, "w", audience=audience, after=after, ids=ids, limit=limit)


def wiki_drafts(conn: psycopg.Connection, ctx: AccessContext, *,
                audience: str | None = None, limit: int | None = None,
                cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Wiki drafts visible to ``ctx``, each with the assertions it cites (those visible)
    and their evidence."""
    check_filters(audience=audience)
    rows, following = _paged(lambda size, after: wiki_draft_rows(
        conn, ctx, audience=audience, limit=size, after=after), limit, cursor)
    cited = visible_assertions(conn, ctx, [u for r in rows for u in _uuids(r["assertion_refs"])])
    return [{
        "id": str(r["id"]), "kind": "wiki_draft",
        "audience": {"kind": r["audience_kind"], "key": r["audience_key"]},
        "dreamId": str(r["dream_id"]) if r["dream_id"] else None,
        "pageSlug": r["page_slug"], "title": r["title"], "bodyMarkdown": r["body_markdown"],
        "rationale": r["rationale"], "evidenceRefs": r["evidence_refs"],
        "createdAt": r["created_at"].isoformat(),
        "assertions": [cited[u] for u in _uuids(r["assertion_refs"]) if u in cited],
    } for r in rows], following


def _uuids(values: list[Any]) -> list[UUID]:
    """The values that are UUIDs, in order (a draft's refs are JSON: anything may stand)."""
    found = []
    for value in values or ():
        try:
            found.append(UUID(str(value)))
        except ValueError:
            continue
    return found


def review_queue(conn: psycopg.Connection, ctx: AccessContext, kind: str, *,
                 assertion_type: str | None = None, audience: str | None = None,
                 origin: str | None = None, limit: int | None = None,
                 cursor: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """One queue by ``kind`` (``assertion``, ``conflict``, ``wiki_draft``): the items and
    the next cursor. ``type``/``origin`` filter assertions only."""
    _check(kind, KINDS, "kind")
    if kind == "assertion":
        return pending_assertions(conn, ctx, assertion_type=assertion_type,
                                  audience=audience, origin=origin, limit=limit,
                                  cursor=cursor)
    if assertion_type is not None or origin is not None:
        raise InvalidInput("type and origin filter the assertion queue only",
                           details={"field": "type" if assertion_type else "origin"})
    if kind == "conflict":
        return open_conflicts(conn, ctx, audience=audience, limit=limit, cursor=cursor)
    return wiki_drafts(conn, ctx, audience=audience, limit=limit, cursor=cursor)
