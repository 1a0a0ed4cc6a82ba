"""Exact retrieval of one memory, under the same recall filter as search."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.access import AccessContext
from memory_platform.errors import NotFound
from memory_platform.retrieval.filters import ASSERTION_JOIN, recallable_memory
from memory_platform.retrieval.statements import parameter_safe


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
