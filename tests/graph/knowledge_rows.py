"""Graph rows for the retrieval tests, inserted directly with SQL (tests/db/rows.py), and
their vectors in the instance's active generation of a real provider (the hash embedding).

Audiences as the graph stores them: private rows are keyed by their owner (and name the
owner in ``subject_refs.userId``), channel rows by their channel, team and workspace rows by
the instance.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.shared.embeddings.generations import ensure_generation
from tests.db import rows


def audience(instance: str, kind: str, key: str | None = None) -> dict[str, Any]:
    """Graph audience columns of ``kind``: ``key`` is the owner (private) or the channel."""
    if kind in ("team", "workspace"):
        return {"visibility_scope": kind, "audience_key": instance}
    assert key, f"a {kind} row needs its key"
    refs = {"userId": key} if kind == "private" else {}
    return {"visibility_scope": kind, "audience_key": key, "subject_refs": Jsonb(refs)}


def entity(conn: psycopg.Connection, instance: str, label: str, *, kind: str = "workspace",
           key: str | None = None, **overrides: Any) -> uuid.UUID:
    values = {"label": label, "normalized_label": f"{label.lower()} {uuid.uuid4().hex[:6]}",
              "entity_type": "concept", **audience(instance, kind, key)} | overrides
    if isinstance(values.get("subject_refs"), dict):
        values["subject_refs"] = Jsonb(values["subject_refs"])
    return rows.entity(conn, instance, **values)


def claim(conn: psycopg.Connection, instance: str, subject: uuid.UUID, text: str, *,
          kind: str = "workspace", key: str | None = None, predicate: str = "relates_to",
          value: str | None = "x", **overrides: Any) -> uuid.UUID:
    values = {"subject_entity_id": subject, "predicate": predicate, "object_value": value,
              "assertion_text": text, "confidence": 0.8, **audience(instance, kind, key)}
    return rows.claim(conn, instance, **(values | overrides))


def edge(conn: psycopg.Connection, instance: str, source: uuid.UUID, target: uuid.UUID, *,
         kind: str = "workspace", key: str | None = None, relation: str = "works_with",
         **overrides: Any) -> uuid.UUID:
    values = {"source_entity_id": source, "target_entity_id": target,
              "relation_type": relation, "confidence": 0.7, **audience(instance, kind, key)}
    return rows.edge(conn, instance, **(values | overrides))


def embed(conn: psycopg.Connection, instance: str, provider: Any, item: str,
          ident: uuid.UUID, text: str) -> None:
    """The vector of ``text`` for entity or claim ``ident`` in the instance's generation of
    ``provider`` (registered and activated if needed)."""
    generation = ensure_generation(conn, instance, provider)
    vector = provider.embed_documents([text])[0]
    conn.execute(
        f"INSERT INTO agent_knowledge_{item}_embeddings (instance_key, {item}_id,"  # noqa: S608
        " generation_id, embedding_key, embedding, content_hash) VALUES (%s, %s, %s, %s, %s,"
        " 'h')", (instance, ident, generation.id, generation.generation_key, vector))


def evidence_aged(conn: psycopg.Connection, instance: str, days: float, **item: Any) -> None:
    """An evidence row of ``item`` (claim_id=... or edge_id=...) created ``days`` ago."""
    rows.knowledge_evidence(conn, instance, created_at=datetime.now(UTC) - timedelta(days=days),
                            **item)
