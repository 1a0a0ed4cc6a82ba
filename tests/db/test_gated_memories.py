"""F23: deleting an assertion never turns a gated memory into an ungated, recallable one.

A memory that cites an assertion is recallable only while that assertion is active and
approved. ``ON DELETE SET NULL`` (migration 0004) made a deleted assertion's memories
assertion-less, which the recall rule reads as "not gated": a pending or rejected fact would
have become recallable. Migration 0014 refuses the delete instead."""

from __future__ import annotations

import psycopg
import pytest
from psycopg import errors, sql

from memory_platform.shared.ledger.recall import TOLD
from tests.db import rows


def _recallable(conn: psycopg.Connection, memory_id) -> bool:
    """The recall rule's gate (retrieval/filters.py): no assertion, or one that may be told."""
    return conn.execute(sql.SQL(
        "SELECT m.assertion_id IS NULL OR coalesce({told}, false)"
        "  FROM agent_memories m LEFT JOIN agent_memory_assertions a ON a.id = m.assertion_id"
        " WHERE m.id = %s").format(told=TOLD), (memory_id,)).fetchone()[0]


@pytest.mark.parametrize("status", [("candidate", "pending"), ("rejected", "human_rejected")])
def test_f23_an_assertion_a_memory_cites_cannot_be_deleted(conn, instance, status):
    gate = rows.assertion(conn, instance, status=status[0], review_state=status[1])
    memory = rows.memory(conn, instance, assertion_id=gate)
    chunk = rows.chunk(conn, instance, memory_id=memory)
    assert not _recallable(conn, memory)

    # ON DELETE RESTRICT: restrict_violation (23001) from PostgreSQL 18 on, before that
    # foreign_key_violation (23503).
    with pytest.raises((errors.RestrictViolation, errors.ForeignKeyViolation),
                       match="agent_memories_assertion_fkey"):
        conn.execute("DELETE FROM agent_memory_assertions WHERE id = %s", (gate,))

    assert conn.execute("SELECT assertion_id FROM agent_memories WHERE id = %s",
                        (memory,)).fetchone()[0] == gate
    assert not _recallable(conn, memory)
    assert conn.execute("SELECT recallable FROM agent_memory_chunks WHERE id = %s",
                        (chunk,)).fetchone()[0] is False


def test_f23_an_assertion_no_memory_cites_can_still_be_deleted(conn, instance):
    gate = rows.assertion(conn, instance)
    memory = rows.memory(conn, instance, assertion_id=gate)
    conn.execute("DELETE FROM agent_memories WHERE id = %s", (memory,))
    conn.execute("DELETE FROM agent_memory_assertions WHERE id = %s", (gate,))
    assert conn.execute("SELECT count(*) FROM agent_memory_assertions WHERE id = %s",
                        (gate,)).fetchone()[0] == 0
