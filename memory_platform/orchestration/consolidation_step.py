"""Consolidation as Dagster reports it: one partition's step (the ``consolidation`` asset and
the Dream batch), the sweep (``consolidation_sweep``), their metadata and the audit check.

A partition's step consolidates it after its latest Dream that wrote to the ledger and records
the result on that dream row (``stats_json.consolidation``); the single-partition job also
sweeps quiet partitions there (``stats_json.consolidation.sweep``), the batch sweeps once at
its end, skipping every partition it processed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from dagster import MetadataValue

from memory_platform.features.consolidation.checks import unaudited_mutations
from memory_platform.features.consolidation.run import (
    ConsolidationResult,
    consolidate_partition,
    record_on_dream,
    sweep,
)
from memory_platform.features.consolidation.types import Partition
from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.features.dreaming.partitions import Partition as DreamPartition
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.dream_row import LOOKUP, record_sweep, resolve
from memory_platform.orchestration.metadata import md_table, partition_label, snake_key

__all__ = ["CONSOLIDATION_CHECK", "CONSOLIDATION_CHECK_DESCRIPTION", "ConsolidationStep",
           "consolidation_check", "consolidation_step", "sweep_metadata", "sweep_step"]

CONSOLIDATION_CHECK = "consolidation_mutations_audited"
CONSOLIDATION_CHECK_DESCRIPTION = (
    "Every assertion consolidation superseded or folded, every conflict it opened and every "
    "entity it merged has a before-image audit row.")
WRITES = ("agent_memory_assertions, agent_memory_assertion_reviews, "
          "agent_memory_assertion_conflicts, agent_memory_v2_cleanup_audit, "
          "agent_knowledge_entities, agent_knowledge_claims, agent_knowledge_edges, "
          "agent_knowledge_evidence, agent_memory_ingestion_outbox, "
          "agent_memory_dreams (stats_json.consolidation)")
_LEADING = ("pairsJudged", "duplicates", "superseded", "conflictsOpened", "entitiesMerged",
            "claimsPruned", "edgesPruned", "auditRows")


def _partition(partition: DreamPartition | str) -> Partition:
    """The consolidation package's value of the one partition type (its plain key is what
    the sweep compares)."""
    dream = DreamPartition.of(partition)
    return Partition(dream.instance_key, dream.kind, dream.key)


def _sweep_exclusions(partition_keys: set[str] | list[str]) -> set[str]:
    """The Dagster (percent-encoded) keys of processed partitions as the sweep compares
    them: the consolidation partition's plain ``instance/kind/key``. Passing the encoded keys
    made the sweep consolidate a processed partition whose key holds a space, ``/``, ``,``,
    a bracket or ``%`` a second time."""
    return {_partition(key).partition_key for key in partition_keys}


@dataclass
class ConsolidationStep:
    partition_key: str
    dream_id: UUID | None
    result: ConsolidationResult
    swept: list[ConsolidationResult] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, MetadataValue]:
        meta = result_metadata(self.result)
        meta["dream_id"] = MetadataValue.text(str(self.dream_id) if self.dream_id else "-")
        if self.swept:
            meta["sweep"] = MetadataValue.md(_sweep_table(self.swept))
        return meta

    def summary(self) -> str:
        s = self.result.summary()
        return (f"{self.partition_key}: consolidation{' (dry run)' if self.result.dry_run else ''}"
                f": {s['pairsJudged']} pairs judged, {s['duplicates']} duplicates, "
                f"{s['superseded']} superseded, {s['conflictsOpened']} conflicts, "
                f"{s['entitiesMerged']} entities merged, {s['claimsPruned']} claims pruned, "
                f"{s['auditRows']} audit rows; sweep: {len(self.swept)} partition(s)")


def consolidation_step(conn: psycopg.Connection, settings: Settings,
                       partition: DreamPartition | str, *, dry_run: bool = False,
                       with_sweep: bool = True, dream_id: Any = LOOKUP) -> ConsolidationStep:
    """Consolidate the partition (after its latest Dream, ``dream_id`` when handed in, whose
    row gets the result) and, ``with_sweep``, the quiet partitions."""
    dream_partition = DreamPartition.of(partition)
    partition_key = dream_partition.partition_key
    dream_id = resolve(conn, dream_partition, dream_id)
    partition = _partition(dream_partition)
    result = consolidate_partition(conn, settings, partition, dry_run=dry_run,
                                   dream_id=dream_id)
    swept = (sweep(conn, settings, instance_key=partition.instance_key,
                   processed=_sweep_exclusions({partition_key}), dry_run=dry_run)
             if with_sweep else [])
    if dream_id is not None:
        record_on_dream(conn, dream_id, result, swept)
    return ConsolidationStep(partition_key, dream_id, result, swept)


def sweep_step(conn: psycopg.Connection, settings: Settings, *,
               processed: set[str] | list[str],
               dry_run: bool = False, record_dream: UUID | None = None
               ) -> list[ConsolidationResult]:
    """The sweep of a batch (after its partitions, ``processed``: their Dagster keys),
    recorded on ``record_dream`` if given."""
    swept = sweep(conn, settings, processed=_sweep_exclusions(processed), dry_run=dry_run)
    if record_dream is not None:
        record_sweep(conn, record_dream, _sweep_json(swept))
    return swept


def _sweep_json(swept: list[ConsolidationResult]) -> list[dict[str, Any]]:
    return [{"envelope": {"instanceKey": s.partition.instance_key,
                                     "audienceKind": s.partition.audience_kind,
                                     "audienceKey": s.partition.audience_key},
                        "result": s.as_json()} for s in swept]


def result_metadata(result: ConsolidationResult) -> dict[str, MetadataValue]:
    """Counts (changes first), the decisions and merges by id, diagnostic codes: no
    assertion text, entity label or model reason (orchestration.metadata: content-free; the
    dream row's ``stats_json.consolidation`` keeps them)."""
    summary = result.summary()
    meta: dict[str, MetadataValue] = {
        snake_key(name): MetadataValue.int(int(summary[name])) for name in _LEADING}
    meta["decisions"] = MetadataValue.md(md_table(
        ["relation", "outcome", "left", "right", "survivor", "loser"],
        [[d.relation, d.outcome, d.left, d.right, d.survivor or "-", d.loser or "-"]
         for d in result.slots.pair_decisions], empty="_no pair judged_"))
    meta["merges"] = MetadataValue.md(md_table(
        ["method", "merged", "survivor", "loser"],
        [[m.method, m.merged, m.survivor, m.loser]
         for m in result.entities.merges], empty="_no entity merged_"))
    meta.update({snake_key(name): MetadataValue.int(int(value))
                 for name, value in summary.items() if name not in _LEADING})
    diagnostics = result.all_diagnostics()
    if diagnostics:
        meta["diagnostic_codes"] = MetadataValue.json(sorted(
            {str(d.get("code", "-")) for d in diagnostics}))
    meta["dry_run"] = MetadataValue.bool(result.dry_run)
    meta["model"] = MetadataValue.text(result.model or "-")
    meta["writes"] = MetadataValue.text(WRITES)
    return meta


def _sweep_table(swept: list[ConsolidationResult]) -> str:
    rows = []
    for s in swept:
        summary = s.summary()
        rows.append([partition_label(s.partition.partition_key), summary["pairsJudged"],
                     summary["duplicates"], summary["superseded"], summary["conflictsOpened"],
                     summary["entitiesMerged"], summary["claimsPruned"],
                     summary["diagnostics"]])
    return md_table(["partition", "pairs", "duplicates", "superseded", "conflicts",
                     "merged", "pruned", "diagnostics"], rows, empty="_no quiet partition_")


def sweep_metadata(swept: list[ConsolidationResult]) -> dict[str, MetadataValue]:
    totals: dict[str, int] = {}
    for s in swept:
        for name, value in s.summary().items():
            totals[name] = totals.get(name, 0) + int(value)
    meta: dict[str, MetadataValue] = {"partitions": MetadataValue.int(len(swept))}
    meta.update({snake_key(name): MetadataValue.int(value) for name, value in totals.items()})
    meta["partitions_swept"] = MetadataValue.md(_sweep_table(swept))
    return meta


def consolidation_check(conn: psycopg.Connection,
                        partition: DreamPartition | str) -> CheckOutcome:
    partition = _partition(partition)
    found: dict[str, Any] = unaudited_mutations(conn, partition.instance_key,
                                                partition.audience_kind,
                                                partition.audience_key)
    return CheckOutcome(CONSOLIDATION_CHECK, found["passed"], found["checked"],
                        found["violations"], CONSOLIDATION_CHECK_DESCRIPTION,
                        found["examples"])
