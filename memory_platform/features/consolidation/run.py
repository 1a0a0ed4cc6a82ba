"""Consolidation of one audience partition, and the sweep of quiet partitions (specification,
"Consolidation").

:func:`consolidate_partition` runs the three mutation passes on the exact partition (instance,
audience kind, audience key), after promotion and graph extraction, never widening it:

1. same-slot assertion resolution (``slots.resolve_slots``: candidate pairs by slot and
   vector similarity, the model classifies, code decides: duplicate folded, contradiction
   superseded or an open conflict);
2. knowledge entity merging (``entities.merge_entities``: deterministic, then vector + model);
3. conservative stale pruning (``stale.prune_stale``), orphans quarantined;

then re-embeds the changed entities and works off the projection and graph jobs its ledger
changes queued (a superseded text leaves recall with the run). Every mutation is audited
before it happens (audit.py); a dry run runs candidate queries, judgments, rules and caps and
writes nothing but the result. Without an active embedding generation no pair is formed (no
lexical fallback); an unavailable model skips the model-backed passes with a diagnostic, the
deterministic ones run.

:func:`sweep` then takes the most recently updated quiet partitions with at least two
currently valid approved assertions embedded in the instance's active generation, up to
``consolidation_sweep_partitions``, skipping those processed in this run.

Both are self-committing (each applied outcome is its own transaction): call them outside a
transaction.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.consolidation.entities import merge_entities
from memory_platform.features.consolidation.slots import resolve_slots
from memory_platform.features.consolidation.stale import prune_stale
from memory_platform.features.consolidation.types import Partition, StepResult
from memory_platform.features.graph.build import process_graph_jobs
from memory_platform.features.graph.embed import embed_graph_items
from memory_platform.features.graph.model import GraphModel, resolve_graph_model
from memory_platform.features.graph.types import GraphWorkRetryable
from memory_platform.features.projection.outbox import process_outbox
from memory_platform.foundation.db.units import committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.ledger.recall import TOLD

log = logging.getLogger(__name__)


@dataclass
class ConsolidationResult:
    partition: Partition
    dry_run: bool
    model: str | None = None
    slots: StepResult = field(default_factory=StepResult)
    entities: StepResult = field(default_factory=StepResult)
    stale: StepResult = field(default_factory=StepResult)
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    embeddings: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> dict[str, int]:
        """Numeric counts (metadata the UI plots, stats_json)."""
        outcomes: dict[str, int] = {}
        for decision in self.slots.pair_decisions:
            outcomes[decision.outcome] = outcomes.get(decision.outcome, 0) + 1
        return {
            "pairsConsidered": self.slots.pairs_considered,
            "pairsJudged": len(self.slots.pair_decisions),
            "duplicates": outcomes.get("duplicate", 0),
            "superseded": outcomes.get("superseded", 0),
            "conflictsOpened": outcomes.get("conflict_opened", 0),
            "kept": outcomes.get("kept", 0),
            "skipped": outcomes.get("skipped", 0),
            "refused": outcomes.get("refused", 0),
            "entitiesMerged": sum(1 for m in self.entities.merges if m.merged),
            "mergesRefused": sum(1 for m in self.entities.merges if not m.merged),
            "claimsPruned": len(self.stale.pruned_claims),
            "edgesPruned": len(self.stale.pruned_edges),
            "entitiesQuarantined": self.entities.quarantined + self.stale.quarantined,
            "auditRows": self.slots.audit_rows + self.entities.audit_rows
            + self.stale.audit_rows,
            "diagnostics": len(self.all_diagnostics()),
        }

    def all_diagnostics(self) -> list[dict[str, Any]]:
        return (self.diagnostics + self.slots.diagnostics + self.entities.diagnostics
                + self.stale.diagnostics)

    def as_json(self) -> dict[str, Any]:
        return {"partitionKey": self.partition.partition_key, "dryRun": self.dry_run,
                "model": self.model, **self.summary(), "seconds": round(self.seconds, 4),
                "decisions": [d.as_json() for d in self.slots.pair_decisions][:100],
                "merges": [m.as_json() for m in self.entities.merges][:100],
                "prunedClaims": [str(i) for i in self.stale.pruned_claims][:100],
                "prunedEdges": [str(i) for i in self.stale.pruned_edges][:100],
                "diagnostics": self.all_diagnostics()[:50],
                "embeddings": self.embeddings}


def _model(conn, settings: Settings, partition: Partition, result: ConsolidationResult,
           dream_id: UUID | None) -> GraphModel | None:
    """The judge's model: the Dream's it follows (``dream_id``), else the graph model's
    resolution (graph/model.py)."""
    try:
        with committed_unit(conn):
            model = resolve_graph_model(conn, settings, partition.instance_key, dream_id)
    except GraphWorkRetryable as exc:
        result.diagnostics.append({"code": "model_unavailable", "phase": "resolve",
                                   "message": exc.message})
        return None
    result.model = model.name
    return model


def consolidate_partition(
    conn: psycopg.Connection,
    settings: Settings,
    partition: Partition,
    *,
    dry_run: bool = False,
    dream_id: UUID | None = None,
    model: GraphModel | None = None,
    embedder: EmbeddingProvider | None = None,
) -> ConsolidationResult:
    """The three passes over one partition (see the module docstring)."""
    require_idle(conn, "consolidate_partition")
    started = time.perf_counter()
    result = ConsolidationResult(partition, dry_run)
    chosen = model or _model(conn, settings, partition, result, dream_id)
    if model is not None:
        result.model = model.name
    if chosen is not None:
        result.slots = resolve_slots(conn, settings, partition, chosen, dry_run=dry_run,
                                     dream_id=dream_id)
    # Without a model the deterministic merge pass still runs (the vector pass is skipped).
    result.entities = merge_entities(conn, settings, partition, chosen, dry_run=dry_run,
                                     dream_id=dream_id)
    result.stale = prune_stale(conn, settings, partition, dry_run=dry_run, dream_id=dream_id)
    if dry_run:
        result.seconds = time.perf_counter() - started
        return result
    changed = list(dict.fromkeys(result.entities.changed_entity_ids))
    if changed:
        result.embeddings = embed_graph_items(conn, settings, partition.instance_key, changed,
                                              [], embedder=embedder)
    if result.summary()["auditRows"]:
        # The ledger changes' projections and graph retractions follow now, not at the next
        # outbox run: a superseded text leaves recall with the run that superseded it.
        process_outbox(conn, settings, instance_key=partition.instance_key,
                       limit=settings.graph_jobs_per_pass, embedder=embedder)
        process_graph_jobs(conn, settings, instance_key=partition.instance_key,
                           audience=(partition.audience_kind, partition.audience_key),
                           embedder=embedder, model=chosen)
    result.seconds = time.perf_counter() - started
    return result


_QUIET = sql.SQL("""
    SELECT a.instance_key, a.audience_kind, a.audience_key
      FROM agent_memory_assertions a
      JOIN agent_memory_embedding_generations g
        ON g.instance_key = a.instance_key AND g.status = 'active'
      JOIN agent_memory_assertion_embeddings v
        ON v.instance_key = a.instance_key AND v.assertion_id = a.id
       AND v.generation_id = g.id
     WHERE {told} AND (%(instance)s::text IS NULL OR a.instance_key = %(instance)s::text)
     GROUP BY a.instance_key, a.audience_kind, a.audience_key
    HAVING count(*) >= 2
     ORDER BY max(a.updated_at) DESC
     LIMIT %(limit)s
""").format(told=TOLD)


def quiet_partitions(conn: psycopg.Connection, *, instance_key: str | None, limit: int,
                     exclude: set[str]) -> list[Partition]:
    """The most recently updated partitions with at least two currently valid approved
    assertions embedded in their instance's active generation, not in ``exclude``."""
    if limit <= 0:
        return []
    rows = conn.execute(_QUIET, {"instance": instance_key,
                                 "limit": limit + len(exclude)}).fetchall()
    found = [Partition(*row) for row in rows]
    return [p for p in found if p.partition_key not in exclude][:limit]


def sweep(conn: psycopg.Connection, settings: Settings, *, instance_key: str | None = None,
          processed: set[str] | None = None, dry_run: bool = False,
          embedder: EmbeddingProvider | None = None) -> list[ConsolidationResult]:
    """Consolidate the quiet partitions (see the module docstring), one after another."""
    require_idle(conn, "sweep")
    with committed_unit(conn):
        chosen = quiet_partitions(conn, instance_key=instance_key,
                                  limit=settings.consolidation_sweep_partitions,
                                  exclude=set(processed or ()))
    results = []
    for partition in chosen:
        try:
            results.append(consolidate_partition(conn, settings, partition, dry_run=dry_run,
                                                 embedder=embedder))
        except Exception as exc:  # one partition's failure does not stop the sweep
            log.exception("consolidation sweep of %s failed", partition.partition_key)
            failed = ConsolidationResult(partition, dry_run)
            failed.diagnostics.append({"code": "internal_error", "phase": "sweep",
                                       "message": f"{type(exc).__name__}: {exc}"[:500]})
            results.append(failed)
    return results


def record_on_dream(conn: psycopg.Connection, dream_id: UUID, result: ConsolidationResult,
                    swept: list[ConsolidationResult] | None = None) -> None:
    """``stats_json.consolidation`` of the dream row: this partition's counts, decisions
    and diagnostics, and the sweep's envelopes with their results (a dry run's proposals
    live here too)."""
    payload = {**result.as_json(),
               "sweep": [{"envelope": {"instanceKey": s.partition.instance_key,
                                       "audienceKind": s.partition.audience_kind,
                                       "audienceKey": s.partition.audience_key},
                          "result": s.as_json()} for s in (swept or [])]}
    with committed_unit(conn):
        conn.execute("UPDATE agent_memory_dreams SET stats_json = stats_json || %s"
                     " WHERE id = %s", (Jsonb({"consolidation": payload}), dream_id))
