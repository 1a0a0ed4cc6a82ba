"""Conservative stale pruning, the third consolidation pass (specification, "Consolidation").

An active claim or edge of the partition is superseded only when BOTH hold at mutation time:
its own ``updated_at`` is older than ``consolidation_stale_days``, and none of its
``source_refs`` has current support (``memory_v2_graph_refs_have_current_support``, the one
SQL definition of "a ref still backed by a told assertion", migration 0018). Supported rows
and newer unsupported rows are untouched; nothing is deleted (a superseded row is history).

Entities the superseded rows touched then go through ``graph.retract.quarantine_orphans``.
That helper answers only a count, so the orphans are found first with the same conditions
(active, no active claim names them, no active non-self edge ends at them), each gets its
``entity_quarantine`` audit row, and only those audited ids are handed to the helper: it can
quarantine nothing without a before-image.

One transaction per partition under the store's advisory lock; rows are read FOR UPDATE and
the support check is repeated in the UPDATE. A dry run makes the same queries (the orphan
check then treats the rows it would prune as gone) and writes nothing.
"""

from __future__ import annotations

from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.consolidation.audit import audit
from memory_platform.features.consolidation.types import Partition, StepResult
from memory_platform.features.graph.retract import (
    ITEM_TABLES,
    lock_partitions,
    orphans,
    quarantine_orphans,
)
from memory_platform.foundation.db.units import committed_unit, require_idle
from memory_platform.foundation.settings import Settings

REASON = "orphaned_by_stale_pruning"
_OPERATIONS = {"claim": "claim_stale", "edge": "edge_stale"}

# Old, unsupported active rows of one partition (``k``), with the entities they touch.
_STALE = """
    SELECT k.id, k.{a}, k.{b}
      FROM {table} k
     WHERE k.instance_key = %(instance)s AND k.visibility_scope = %(kind)s
       AND k.audience_key = %(key)s AND k.status = 'active'
       AND k.updated_at < now() - make_interval(secs => %(seconds)s)
       AND NOT memory_v2_graph_refs_have_current_support(k.instance_key, k.source_refs)
     ORDER BY k.updated_at, k.id
     FOR UPDATE
"""
_SUPERSEDE = """
    UPDATE {table} k SET status = 'superseded'
     WHERE k.id = %s AND k.status = 'active'
       AND NOT memory_v2_graph_refs_have_current_support(k.instance_key, k.source_refs)
"""
# The orphan rule of graph.retract.quarantine_orphans, as a read; rows in %(claims)s and
# %(edges)s count as no longer active (a dry run's proposals).



def stale_rows(conn: psycopg.Connection, settings: Settings, partition: Partition,
               kind: str) -> list[tuple[UUID, UUID, UUID | None]]:
    """(id, entity, other entity) of the partition's prunable claims or edges, locked."""
    table, (a, b) = ITEM_TABLES[kind]
    statement = sql.SQL(_STALE).format(table=sql.Identifier(table), a=sql.Identifier(a),
                                       b=sql.Identifier(b))
    return conn.execute(statement, {
        "instance": partition.instance_key, "kind": partition.audience_kind,
        "key": partition.audience_key,
        "seconds": settings.consolidation_stale_days * 86400.0}).fetchall()


def prune_stale(conn: psycopg.Connection, settings: Settings, partition: Partition, *,
                dry_run: bool = False, dream_id: UUID | None = None) -> StepResult:
    """Supersede the partition's old unsupported claims and edges and quarantine the
    entities they leave orphaned (module docstring); every mutation after its audit row, one
    committed transaction, so call it outside a transaction."""
    require_idle(conn, "prune_stale")
    result = StepResult()
    instance = partition.instance_key
    with committed_unit(conn):
        lock_partitions(conn, instance, [(partition.audience_kind, partition.audience_key)])
        touched: set[UUID] = set()
        pruned = {"claim": result.pruned_claims, "edge": result.pruned_edges}
        for kind, (table, _) in ITEM_TABLES.items():
            rows = stale_rows(conn, settings, partition, kind)
            for item_id, first, second in rows:
                touched |= {e for e in (first, second) if e is not None}
                if not dry_run:
                    audit(conn, instance, _OPERATIONS[kind], table, item_id,
                          dream_id=dream_id, after={"status": "superseded"},
                          mapping={"reason": "stale", "staleDays":
                                   settings.consolidation_stale_days})
                    result.audit_rows += 1
                    conn.execute(sql.SQL(_SUPERSEDE).format(table=sql.Identifier(table)),
                                 (item_id,))
                pruned[kind].append(item_id)
        orphaned = orphans(conn, instance, touched,
                           ignoring_claims=result.pruned_claims if dry_run else (),
                           ignoring_edges=result.pruned_edges if dry_run else ())
        if not dry_run and orphaned:
            for entity_id in orphaned:
                audit(conn, instance, "entity_quarantine", "agent_knowledge_entities",
                      entity_id, dream_id=dream_id, after={"status": "quarantined"},
                      mapping={"reason": REASON})
                result.audit_rows += 1
            result.quarantined = quarantine_orphans(conn, instance, orphaned, REASON)
        elif dry_run:
            result.quarantined = len(orphaned)
    return result
