"""Before-images of consolidation mutations (``agent_memory_v2_cleanup_audit``).

Every mutation consolidation makes (an assertion superseded or marked duplicate, a conflict
opened, an entity merged, a claim/edge/evidence row re-pointed, a stale claim or edge
superseded, an entity quarantined) is preceded, in the same transaction, by one audit row
holding the full before-image of the row it changes (``to_jsonb`` of the row as it is), the
after-image where useful, and for merges the re-point mapping (old id -> new id, moved
evidence ids), so an operator can reverse it by hand. The table rejects UPDATE and DELETE.
:func:`audit` is the one writer.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

OPERATIONS = ("assertion_supersede", "assertion_duplicate", "conflict_open",
              "conflict_resolve",
              "relation_write", "entity_merge", "claim_repoint", "edge_repoint",
              "evidence_repoint", "claim_stale", "edge_stale", "entity_quarantine",
              "retention_delete")


def before_image(conn: psycopg.Connection, table: str, row_id: Any) -> dict[str, Any] | None:
    """The whole row as JSON (``to_jsonb``), read in the caller's transaction."""
    row = conn.execute(sql.SQL("SELECT to_jsonb(t) FROM {} t WHERE t.id = %s").format(
        sql.Identifier(table)), (row_id,)).fetchone()
    return row[0] if row else None


def audit(conn: psycopg.Connection, instance_key: str, operation: str, table: str,
          row_id: Any, *, dream_id: UUID | None = None,
          before: dict[str, Any] | None = None, after: dict[str, Any] | None = None,
          mapping: dict[str, Any] | None = None, read_before: bool = True) -> int:
    """Write one audit row BEFORE the mutation it describes (same transaction) and answer
    its id. ``before`` defaults to the row's current image (``read_before``)."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown audit operation {operation!r}")
    if before is None and read_before:
        before = before_image(conn, table, row_id)
    return conn.execute(
        """
        INSERT INTO agent_memory_v2_cleanup_audit
               (instance_key, dream_id, operation, target_table, target_id, before_image,
                after_image, mapping)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
        RETURNING id
        """,
        (instance_key, dream_id, operation, table, str(row_id),
         Jsonb(before) if before is not None else None,
         Jsonb(after) if after is not None else None, Jsonb(mapping or {})),
    ).fetchone()[0]
