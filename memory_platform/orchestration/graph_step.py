"""The knowledge graph of one audience partition as Dagster reports it: the step that both the
``knowledge_graph`` asset and the Dream batch run, its metadata and its invariant check.

The step builds the graph from the partition's latest Dream that wrote to the ledger (its
approved assertions, with Dream evidence), together with the partition's other due graph
work (approved assertions written outside Dreaming), through
:func:`memory_platform.features.graph.build.build_dream_graph`; without such a Dream it only works
off
the partition's due jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from dagster import MetadataValue

from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.graph.build import (
    GraphBuild,
    build_dream_graph,
    process_graph_jobs,
)
from memory_platform.features.graph.checks import graph_support_check
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.dream_row import LOOKUP, resolve
from memory_platform.orchestration.metadata import md_table, partition_label, snake_key
from memory_platform.shared.embeddings.base import EmbeddingProvider

__all__ = ["GRAPH_CHECK", "GRAPH_CHECK_DESCRIPTION", "GraphStep", "graph_check",
           "graph_metadata", "graph_step"]

GRAPH_CHECK = "graph_items_have_current_support"
GRAPH_CHECK_DESCRIPTION = ("Every active claim and edge of the partition has a source ref "
                           "whose assertion is told now (active, approved, valid).")
GRAPH_WRITES = ("agent_knowledge_entities, agent_knowledge_claims, agent_knowledge_edges, "
                "agent_knowledge_evidence, agent_knowledge_entity_embeddings, "
                "agent_knowledge_claim_embeddings, agent_memory_ingestion_outbox, "
                "agent_memory_dreams (stats_json.graph)")


@dataclass
class GraphStep:
    partition_key: str
    dream_id: Any
    build: GraphBuild

    @property
    def metadata(self) -> dict[str, MetadataValue]:
        return graph_metadata(self.build, self.dream_id)

    def summary(self) -> str:
        s = self.build.summary()
        return (f"{self.partition_key}: graph from dream {self.dream_id or '-'}: "
                f"{s['jobs']} jobs, {s['batches']} batches, +{s['entitiesAdded']} entities, "
                f"+{s['claimsAdded']} claims, +{s['edgesAdded']} edges, "
                f"{s['entitiesQuarantined']} quarantined, {s['failedBatches']} failed batches")


def graph_step(conn: psycopg.Connection, settings: Settings, partition: Partition | str, *,
               rebuild: bool = False, embedder: EmbeddingProvider | None = None,
               dream_id: Any = LOOKUP) -> GraphStep:
    """Build the partition's graph (see the module docstring) from its latest Dream
    (``dream_id``, looked up when not handed in); ``rebuild`` removes that Dream's refs
    first and extracts its assertions again."""
    partition = Partition.of(partition)
    dream_id = resolve(conn, partition, dream_id)
    if dream_id is not None:
        build = build_dream_graph(conn, settings, dream_id, rebuild=rebuild, embedder=embedder)
    else:
        build = process_graph_jobs(conn, settings, instance_key=partition.instance_key,
                                   audience=(partition.kind, partition.key), embedder=embedder)
    return GraphStep(partition.partition_key, dream_id, build)


# Shown first (the UI lists metadata in order): what changed, then the new claims.
_LEADING = ("entitiesAdded", "claimsAdded", "edgesAdded", "claimsReinforced",
            "entitiesQuarantined", "claimsRetracted", "failedBatches")


def graph_metadata(build: GraphBuild, dream_id: Any) -> dict[str, MetadataValue]:
    """Numbers the UI plots, the new claims' ids with their source assertions, failures
    (codes): no label, predicate or text (orchestration.metadata: content-free)."""
    summary = build.summary()
    meta: dict[str, MetadataValue] = {"dream_id": MetadataValue.text(
        str(dream_id) if dream_id else "-")}
    meta.update({snake_key(name): MetadataValue.int(int(summary[name])) for name in _LEADING})
    meta["new_claims"] = MetadataValue.md(md_table(
        ["claim id", "source assertions"],
        [[c.get("claimId"), ", ".join(str(a) for a in c.get("assertionIds", []))]
         for c in build.changes.new_claims],
        empty="_no new claims_"))
    if build.failures:
        meta["failures"] = MetadataValue.md(md_table(
            ["partition", "code", "assertions"],
            [[partition_label(f.partition_key), f.code, len(f.assertion_ids)]
             for f in build.failures]))
    meta.update({snake_key(name): MetadataValue.int(int(value))
                 for name, value in summary.items() if name not in _LEADING})
    meta["models"] = MetadataValue.json(build.models)
    meta["writes"] = MetadataValue.text(GRAPH_WRITES)
    return meta


def graph_check(conn: psycopg.Connection, partition: Partition | str) -> CheckOutcome:
    partition = Partition.of(partition)
    result = graph_support_check(conn, partition.instance_key, partition.kind, partition.key)
    violations = int(result["unsupported_claims"]) + int(result["unsupported_edges"])
    return CheckOutcome(
        GRAPH_CHECK, bool(result["passed"]), int(result.get("checked", violations)),
        violations, GRAPH_CHECK_DESCRIPTION,
        [{"id": str(i)} for i in result.get("sample", [])])
