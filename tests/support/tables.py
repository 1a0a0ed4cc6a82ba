"""The ledger tables a memory write, an import or a Dream may change (besides a Dream's own
row), all keyed by instance, and their row counts for one instance."""

from __future__ import annotations

import psycopg
from psycopg import sql

INSTANCE_TABLES = (
    "agent_memory_sources",
    "agent_memories",
    "agent_memory_chunks",
    "agent_memory_assertions",
    "agent_memory_assertion_evidence",
    "agent_memory_assertion_reviews",
    "agent_memory_assertion_conflicts",
    "agent_memory_assertion_embeddings",
    "agent_memory_embedding_generations",
    "agent_memory_relations",
    "agent_memory_ingestion_outbox",
    "wiki_change_proposals",
)


def row_counts(conn: psycopg.Connection, instance_key: str) -> dict[str, int]:
    """How many rows of ``instance_key`` each of :data:`INSTANCE_TABLES` holds."""
    query = sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s")
    return {table: conn.execute(query.format(sql.Identifier(table)),
                                (instance_key,)).fetchone()[0]
            for table in INSTANCE_TABLES}
