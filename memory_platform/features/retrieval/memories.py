"""Exact retrieval of one memory, and the listing of many, under the same recall filter as
search."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.retrieval.criteria import Criteria, criteria_params, memory_condition
from memory_platform.features.retrieval.filters import ASSERTION_JOIN, recallable_memory
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.shared.access import AccessContext


@dataclass(frozen=True)
class MemoryRecord:
    id: UUID
    content: str
    title: str | None
    visibility_scope: str
    audience_key: str
    memory_scope: str
    source_type: str
    subject_refs: dict[str, Any]
    metadata: dict[str, Any]
    assertion_id: UUID | None
    assertion_status: str | None
    source_id: UUID | None
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None = None  # the event time, when the writer gave one


def parse_uuid(value: object, field: str = "id") -> UUID:
    """A UUID from user input; anything else is simply not found (no format oracle)."""
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError as exc:
        raise NotFound(f"no memory with {field} {str(value)[:64]!r}") from exc


def get_memory(conn: psycopg.Connection, ctx: AccessContext, memory_id: object) -> MemoryRecord:
    """The memory if ``ctx`` may recall it. An invisible and a missing id answer the same."""
    ident = parse_uuid(memory_id)
    row = conn.execute(
        parameter_safe(sql.SQL("""
            SELECT m.id, m.content, m.title, m.visibility_scope, m.audience_key, m.memory_scope,
                   m.source_type, m.subject_refs, m.metadata, m.assertion_id, a.status,
                   m.source_id, m.created_at, m.updated_at, m.occurred_at
              FROM agent_memories m
              {join}
             WHERE m.id = %s AND {visible}
        """).format(join=ASSERTION_JOIN, visible=recallable_memory(ctx))),
        (ident,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no memory with id {ident}")
    return MemoryRecord(*row)


# --- listing ----------------------------------------------------------------------------------

LIST_DEFAULT, LIST_MAX = 50, 200
LIST_IDS_MAX = 50          # ids of one listing (a batch of exact reads)


@dataclass(frozen=True)
class MemoryPage:
    records: list[MemoryRecord]
    next_cursor: str | None          # None: this was the last page


def _cursor(record: MemoryRecord) -> str:
    raw = f"{record.created_at.isoformat()}|{record.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after_cursor(cursor: str | None) -> tuple[datetime | None, UUID | None]:
    """The (created_at, id) a cursor continues below; anything malformed is a 400."""
    if cursor is None:
        return None, None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, _, ident = raw.partition("|")
        return datetime.fromisoformat(at), UUID(ident)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput("cursor is not one this route answered: pass nextCursor as it came",
                           details={"field": "cursor"}) from exc


def _listed_id(value: object) -> UUID:
    try:
        return value if isinstance(value, UUID) else UUID(str(value).strip())
    except ValueError as exc:
        raise InvalidInput(f"ids: {str(value)[:64]!r} is not a memory id",
                           details={"field": "ids"}) from exc


def list_memories(conn: psycopg.Connection, ctx: AccessContext, *,
                  criteria: Criteria | None = None, ids: list[object] | None = None,
                  limit: int = LIST_DEFAULT, cursor: str | None = None) -> MemoryPage:
    """The memories ``ctx`` may recall (the exact read's rule) that meet ``criteria`` (and
    are among ``ids`` when given: a batch of exact reads), newest first, ``limit`` at a time;
    ``cursor`` continues after a page (keyset on ``created_at, id``, so writes meanwhile
    neither repeat nor skip a memory). Listing is not recall: nothing is stamped as
    retrieved. An id that is unknown or not visible is simply not listed."""
    if not 1 <= limit <= LIST_MAX:
        raise InvalidInput(f"limit must be 1 to {LIST_MAX}", details={"field": "limit"})
    if ids is not None and not 1 <= len(ids) <= LIST_IDS_MAX:
        raise InvalidInput(f"ids: 1 to {LIST_IDS_MAX} memory ids", details={"field": "ids"})
    wanted = [_listed_id(i) for i in ids] if ids is not None else None
    at, ident = _after_cursor(cursor)
    condition = sql.SQL(" AND {}").format(memory_condition(criteria, "m")) \
        if criteria is not None and not criteria.empty else sql.SQL("")
    rows = conn.execute(
        parameter_safe(sql.SQL("""
            SELECT m.id, m.content, m.title, m.visibility_scope, m.audience_key, m.memory_scope,
                   m.source_type, m.subject_refs, m.metadata, m.assertion_id, a.status,
                   m.source_id, m.created_at, m.updated_at, m.occurred_at
              FROM agent_memories m
              {join}
             WHERE {visible}{criteria}
               AND (%(ids)s::uuid[] IS NULL OR m.id = ANY(%(ids)s::uuid[]))
               AND (%(at)s::timestamptz IS NULL OR (m.created_at, m.id) < (%(at)s, %(id)s::uuid))
             ORDER BY m.created_at DESC, m.id DESC
             LIMIT %(limit)s
        """).format(join=ASSERTION_JOIN, visible=recallable_memory(ctx), criteria=condition)),
        {"at": at, "id": ident, "ids": wanted, "limit": limit + 1,
         **(criteria_params(criteria) if criteria is not None else {})},
    ).fetchall()
    records = [MemoryRecord(*row) for row in rows[:limit]]
    return MemoryPage(records, _cursor(records[-1]) if len(rows) > limit else None)
