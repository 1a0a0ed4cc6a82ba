"""Immutable source envelopes: where a piece of knowledge came from, in which audience."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import Audience


def ensure_source(
    conn: psycopg.Connection,
    *,
    instance_key: str,
    audience: Audience,
    source_key: str,
    source_kind: str,
    trust_class: str,
    content: str,
    owner_user_id: str | None = None,
    session_key: str | None = None,
    memory_id: UUID | None = None,
    locator: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> UUID:
    """The envelope with this ``source_key``, created on first sight (idempotent)."""
    row = conn.execute(
        """
        INSERT INTO agent_memory_sources
               (instance_key, audience_kind, audience_key, owner_user_id, session_key,
                source_key, source_kind, trust_class, source_locator, memory_id,
                content, content_hash, metadata)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
        ON CONFLICT (instance_key, source_key) DO NOTHING
        RETURNING id
        """,
        (instance_key, audience.kind, audience.key, owner_user_id, session_key, source_key,
         source_kind, trust_class, Jsonb(dict(locator or {})), memory_id, content,
         content_hash(content), Jsonb(dict(metadata or {}))),
    ).fetchone()
    if row:
        return row[0]
    return conn.execute(
        "SELECT id FROM agent_memory_sources WHERE instance_key = %s AND source_key = %s",
        (instance_key, source_key),
    ).fetchone()[0]
