"""Builders of the storage tests: GraphSource values of REAL approved assertions (facts
written through ``store_memory``: a direct human fact in a private or team audience is
active at once) and extraction items built by hand, as the validator would hand them over.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from memory_platform.features.graph.types import (
    ClaimItem,
    EdgeItem,
    EntityItem,
    Extraction,
    GraphBatch,
    GraphSource,
)
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.db import rows
from tests.dreaming.support import remember

GRAPH_TABLES = ("agent_knowledge_entities", "agent_knowledge_claims", "agent_knowledge_edges",
                "agent_knowledge_evidence")


def source_of(conn: psycopg.Connection, instance: str, assertion_id: uuid.UUID,
              memory_id: uuid.UUID, dream_ids: Sequence[uuid.UUID] = ()) -> GraphSource:
    row = conn.execute(
        "SELECT assertion_text, assertion_type, confidence, audience_kind, audience_key,"
        " owner_user_id, subject_refs, valid_from, valid_to, status"
        " FROM agent_memory_assertions WHERE instance_key = %s AND id = %s",
        (instance, assertion_id)).fetchone()
    assert row is not None and row[9] == "active", row
    return GraphSource(instance, assertion_id, memory_id, row[0], row[1], float(row[2]),
                       row[3], row[4], row[5], dict(row[6]), row[7], row[8],
                       tuple(dream_ids))


def fact(conn: psycopg.Connection, settings: Settings, instance: str, text: str, *,
         user: str = "ada", visibility: str = "private", refs: dict | None = None,
         dream_ids: Sequence[uuid.UUID] = ()) -> GraphSource:
    """A direct human fact, written as the runtime writes it, as a graph source."""
    stored = remember(conn, settings, AccessContext(instance, user_id=user), text,
                      source_type="fact", visibility=visibility, subject_refs=refs or {})
    assert stored.assertion_id is not None and stored.assertion_status == "active"
    return source_of(conn, instance, stored.assertion_id, stored.id, dream_ids)


def with_dreams(source: GraphSource, *dream_ids: uuid.UUID) -> GraphSource:
    return GraphSource(**{**vars(source), "dream_ids": tuple(dream_ids)})


def dream(conn: psycopg.Connection, source: GraphSource) -> uuid.UUID:
    """A Dream row of the source's partition (evidence rows name it)."""
    return rows.dream(conn, source.instance_key, audience_kind=source.audience_kind,
                      audience_key=source.audience_key, status="completed")


def batch(*sources: GraphSource) -> GraphBatch:
    first = sources[0]
    return GraphBatch(first.instance_key, first.audience_kind, first.audience_key,
                      tuple(sources))


def entity(ref: str, label: str, *cited: GraphSource, entity_type: str = "concept",
           aliases: Sequence[str] = (), linked: tuple[str, str] | None = None,
           refs: dict | None = None) -> EntityItem:
    return EntityItem(ref, label, entity_type, tuple(aliases),
                      linked[0] if linked else None, linked[1] if linked else None,
                      refs or {}, tuple(s.memory_id for s in cited))


def claim(subject: str, predicate: str, *cited: GraphSource, obj: str | None = None,
          value: str | None = None, text: str | None = None,
          confidence: float = 0.8) -> ClaimItem:
    return ClaimItem(subject, predicate, obj, value if obj is None else None,
                     text or cited[0].text, confidence, tuple(s.memory_id for s in cited))


def edge(source: str, target: str, relation: str, *cited: GraphSource,
         confidence: float = 0.7) -> EdgeItem:
    return EdgeItem(source, target, relation, confidence, tuple(s.memory_id for s in cited))


def extraction(entities: list[EntityItem], claims: list[ClaimItem] = (),
               edges: list[EdgeItem] = ()) -> Extraction:
    return Extraction(list(entities), list(claims), list(edges))


def apply(conn: psycopg.Connection, b: GraphBatch, x: Extraction):
    """apply_extraction inside a transaction of its own, as the worker runs it."""
    from memory_platform.features.graph.store import apply_extraction

    with conn.transaction():
        return apply_extraction(conn, b, x)


def counts(conn: psycopg.Connection, instance: str) -> dict[str, int]:
    query = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
    return {t: conn.execute(query.format(sql.Identifier(t)), (instance,)).fetchone()[0]
            for t in GRAPH_TABLES}


def one(conn: psycopg.Connection, query: str, *params: Any) -> Any:
    row = conn.execute(query, params).fetchone()
    return row if row is None or len(row) > 1 else row[0]


def refs_of(conn: psycopg.Connection, table: str, item_id: uuid.UUID) -> list[dict]:
    return conn.execute(sql.SQL("SELECT source_refs FROM {} WHERE id = %s").format(
        sql.Identifier(table)), (item_id,)).fetchone()[0]


def status_of(conn: psycopg.Connection, table: str, item_id: uuid.UUID) -> str:
    return conn.execute(sql.SQL("SELECT status FROM {} WHERE id = %s").format(
        sql.Identifier(table)), (item_id,)).fetchone()[0]


def stable_ref(source: GraphSource) -> dict[str, str]:
    return {"assertionId": str(source.assertion_id), "memoryId": str(source.memory_id)}
