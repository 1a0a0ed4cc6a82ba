"""The Dream row as the Dagster steps see it: "the partition's latest Dream" (looked up once
per partition, then handed to every step of the chain) and the batch sweep's section of its
``stats_json``. The row itself is owned by :mod:`memory_platform.features.dreaming.runs`; the graph
and
consolidation write their own sections through their domain functions."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import psycopg

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.graph.build import latest_dream
from memory_platform.foundation.db.units import committed_unit

__all__ = ["LOOKUP", "latest", "record_sweep", "resolve"]

LOOKUP: Any = object()   # "not handed in: look it up" (a step called on its own)


def latest(conn: psycopg.Connection, partition: Partition) -> UUID | None:
    """The partition's latest Dream that wrote to the ledger (completed or partial, not a dry
    run), or None; its own committed unit."""
    with committed_unit(conn):
        return latest_dream(conn, partition.instance_key, partition.kind, partition.key)


def resolve(conn: psycopg.Connection, partition: Partition, dream_id: Any) -> UUID | None:
    """``dream_id`` as handed in, or the latest Dream when it is :data:`LOOKUP`."""
    return latest(conn, partition) if dream_id is LOOKUP else dream_id


def record_sweep(conn: psycopg.Connection, dream_id: UUID, sweep: list[dict[str, Any]]) -> None:
    """``stats_json.consolidation.sweep`` of a Dream that was consolidated (a batch sweeps
    once, after its partitions, and records it on its last consolidated Dream)."""
    with committed_unit(conn):
        conn.execute(
            "UPDATE agent_memory_dreams SET stats_json = jsonb_set(stats_json,"
            " '{consolidation,sweep}', %s::jsonb, true) WHERE id = %s"
            " AND stats_json ? 'consolidation'",
            (json.dumps(sweep, default=str), dream_id))
