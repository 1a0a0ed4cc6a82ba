"""The graph worker: ``graph_projection`` outbox jobs become graph rows (specification,
"Knowledge graph").

Jobs are written by triggers on the assertion table (migration 0020) whenever an assertion
is created approved and active or changes state, and by :func:`build_dream_graph` for the
assertions a Dream created or reused (payload ``dreamId``: the Dream's evidence rows). A pass
(:func:`process_graph_jobs`):

1. claims due jobs (``FOR UPDATE SKIP LOCKED``; any number of workers), optionally of one
   instance or one audience partition;
2. retracts assertions that are no longer told (revoked, superseded, rejected, expired):
   their refs leave claims and edges, orphaned entities are quarantined; those jobs are done;
3. loads the told ones with their recall rows (a told assertion whose projection is not
   written yet waits: its job is retried), plans bounded batches per (instance, audience
   kind, audience key): Personal, Team and Channel evidence never share a provider request;
4. per batch: the exact graph model extracts with no transaction open, the answer is
   validated strictly (repair only by removal), then the graph is upserted and the batch's
   jobs are marked done in ONE transaction. A retryable failure (malformed or ambiguous
   output, unavailable model, incomplete block, instance mismatch) keeps the batch's jobs
   pending with backoff; other batches go on;
5. embeds new or changed entities and claims (a failed embedding never fails the build).

Every function here commits its own units (``db/units.py``): call it outside a transaction.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.graph.embed import embed_graph_items
from memory_platform.features.graph.model import GraphModel, extract, resolve_graph_model
from memory_platform.features.graph.retract import retract_assertions, retract_unsupported
from memory_platform.features.graph.sources import load_sources, plan_batches
from memory_platform.features.graph.store import apply_extraction, remove_dream_refs
from memory_platform.features.graph.types import GraphBatch, GraphChanges, GraphWorkRetryable
from memory_platform.features.projection.outbox import (
    GRAPH_PROJECTION,
    Job,
    claim,
    enqueue,
    mark_done,
    mark_failed,
)
from memory_platform.foundation.db.units import (
    commit_if_idle,
    committed_unit,
    require_idle,
    rollback_if_open,
)
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.ledger.recall import TOLD

log = logging.getLogger(__name__)

WAITING_FOR_PROJECTION = "projection_pending"


@dataclass
class BatchFailure:
    partition_key: str
    code: str
    message: str
    assertion_ids: list[UUID]

    def as_json(self) -> dict[str, Any]:
        return {"partitionKey": self.partition_key, "code": self.code,
                "message": self.message[:500],
                "assertionIds": [str(a) for a in self.assertion_ids]}


@dataclass
class GraphBuild:
    """What one pass (or a Dream's build) did; :meth:`summary` is numeric for metadata."""

    jobs: int = 0
    batches: int = 0
    sources: int = 0
    retracted_assertions: int = 0
    waiting: int = 0
    failures: list[BatchFailure] = field(default_factory=list)
    changes: GraphChanges = field(default_factory=GraphChanges)
    repairs: dict[str, int] = field(default_factory=dict)
    embeddings: dict[str, int] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)     # instance -> exact model

    def add_counts(self, target: dict[str, int], more: dict[str, int]) -> None:
        for key, value in more.items():
            target[key] = target.get(key, 0) + int(value)

    def merge(self, other: GraphBuild) -> None:
        self.jobs += other.jobs
        self.batches += other.batches
        self.sources += other.sources
        self.retracted_assertions += other.retracted_assertions
        self.waiting += other.waiting
        self.failures += other.failures
        self.changes = self.changes + other.changes
        self.add_counts(self.repairs, other.repairs)
        self.add_counts(self.embeddings, other.embeddings)
        self.models.update(other.models)

    def summary(self) -> dict[str, int]:
        return {"jobs": self.jobs, "batches": self.batches, "sources": self.sources,
                "failedBatches": len(self.failures), "waiting": self.waiting,
                "retractedAssertions": self.retracted_assertions,
                **{_camel(k): v for k, v in self.changes.counts().items()},
                **{f"repairs{k[0].upper()}{k[1:]}": v for k, v in self.repairs.items()},
                **{f"embeddings{k.title()}": v for k, v in self.embeddings.items()}}

    def as_json(self) -> dict[str, Any]:
        return {**self.summary(), "models": self.models,
                "failures": [f.as_json() for f in self.failures[:20]],
                "newClaims": self.changes.new_claims[:50]}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_STATES = sql.SQL("""
    SELECT a.id, {told}
      FROM agent_memory_assertions a
     WHERE a.instance_key = %s AND a.id = ANY(%s)
""").format(told=TOLD)


def _dream_ids(jobs: list[Job]) -> dict[UUID, list[UUID]]:
    """Assertion -> the Dreams the jobs name as supporting it in this build."""
    dreams: dict[UUID, list[UUID]] = defaultdict(list)
    for job in jobs:
        dream = job.payload.get("dreamId")
        if dream and UUID(dream) not in dreams[job.subject_id]:
            dreams[job.subject_id].append(UUID(dream))
    return dreams


def _fail(conn, settings: Settings, jobs: list[Job], error: str) -> None:
    for job in jobs:
        mark_failed(conn, settings, job, error)


def process_graph_jobs(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    instance_key: str | None = None,
    audience: tuple[str, str] | None = None,
    embedder: EmbeddingProvider | None = None,
    model: GraphModel | None = None,
    limit: int | None = None,
    dream_id: UUID | None = None,
) -> GraphBuild:
    """One bounded pass over due graph jobs (see the module docstring). ``audience`` =
    ``(kind, key)`` narrows it to one partition of ``instance_key``; ``model`` replaces the
    resolution (tests, a benchmark); ``dream_id``: the Dream the pass follows, whose model
    it uses (graph/model.py)."""
    require_idle(conn, "process_graph_jobs")
    jobs = claim(conn, settings, limit or settings.graph_jobs_per_pass, types=[GRAPH_PROJECTION],
                 instance_key=instance_key, audience=audience)
    build = GraphBuild(jobs=len(jobs))
    by_instance: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_instance[job.instance_key].append(job)
    for instance, instance_jobs in by_instance.items():
        build.merge(_process_instance(conn, settings, instance, instance_jobs, embedder, model,
                                      dream_id))
    return build


def _process_instance(conn, settings: Settings, instance: str, jobs: list[Job],
                      embedder: EmbeddingProvider | None, model: GraphModel | None,
                      dream_id: UUID | None = None) -> GraphBuild:
    build = GraphBuild()
    by_assertion: dict[UUID, list[Job]] = defaultdict(list)
    for job in jobs:
        by_assertion[job.subject_id].append(job)
    with committed_unit(conn):
        told = dict(conn.execute(_STATES, (instance, list(by_assertion))).fetchall())
    gone = [a for a in by_assertion if not told.get(a)]
    if gone:
        with committed_unit(conn):
            build.changes += retract_assertions(conn, instance, gone)
            for assertion_id in gone:
                for job in by_assertion[assertion_id]:
                    mark_done(conn, job)
        build.retracted_assertions = len(gone)

    wanted = [a for a in by_assertion if told.get(a)]
    if not wanted:
        return build
    with committed_unit(conn):
        sources = load_sources(conn, instance, wanted, _dream_ids(jobs))
    loaded = {s.assertion_id for s in sources}
    waiting = [j for a in wanted if a not in loaded for j in by_assertion[a]]
    if waiting:   # told, but its recall row is not written yet: the projection job runs first
        _fail(conn, settings, waiting, f"{WAITING_FOR_PROJECTION}: the assertion has no "
              "active recall row yet")
        build.waiting = len(waiting)
    if not sources:
        return build

    try:
        with committed_unit(conn):
            chosen = model or resolve_graph_model(conn, settings, instance, dream_id)
    except GraphWorkRetryable as exc:
        pending = [j for s in sources for j in by_assertion[s.assertion_id]]
        _fail(conn, settings, pending, f"{exc.code}: {exc.message}")
        build.failures.append(BatchFailure(instance, exc.code, exc.message,
                                           [s.assertion_id for s in sources]))
        return build
    build.models[instance] = chosen.name

    for batch in plan_batches(sources, settings):
        build.batches += 1
        build.sources += len(batch.sources)
        batch_jobs = [j for s in batch.sources for j in by_assertion[s.assertion_id]]
        _run_batch(conn, settings, batch, batch_jobs, chosen, build)

    if build.changes.changed_entity_ids or build.changes.changed_claim_ids:
        build.add_counts(build.embeddings, embed_graph_items(
            conn, settings, instance, build.changes.changed_entity_ids,
            build.changes.changed_claim_ids, embedder=embedder))
    return build


def _run_batch(conn, settings: Settings, batch: GraphBatch, jobs: list[Job],
               model: GraphModel, build: GraphBuild) -> None:
    """Extract (no transaction open), then upsert and complete the jobs in one transaction;
    a failure leaves the jobs retryable and the graph untouched."""
    try:
        extraction = extract(batch, model, settings)
        with committed_unit(conn):
            changes = apply_extraction(conn, batch, extraction)
            for job in jobs:
                mark_done(conn, job)
    except GraphWorkRetryable as exc:
        rollback_if_open(conn)
        log.warning("graph batch %s (%d sources) kept for retry: %s", batch.partition_key,
                    len(batch.sources), exc)
        _fail(conn, settings, jobs, f"{exc.code}: {exc.message}")
        build.failures.append(BatchFailure(batch.partition_key, exc.code, exc.message,
                                           [s.assertion_id for s in batch.sources]))
        return
    except Exception as exc:   # recorded and retried; the other batches go on
        rollback_if_open(conn)
        log.exception("graph batch %s failed", batch.partition_key)
        message = f"{type(exc).__name__}: {exc}"
        _fail(conn, settings, jobs, f"internal_error: {message}")
        build.failures.append(BatchFailure(batch.partition_key, "internal_error", message,
                                           [s.assertion_id for s in batch.sources]))
        return
    build.changes += changes
    build.add_counts(build.repairs, extraction.repairs)


# --- a Dream's graph -------------------------------------------------------------------------


@dataclass(frozen=True)
class DreamRef:
    dream_id: UUID
    instance_key: str
    audience_kind: str
    audience_key: str


def _dream(conn, dream_id: UUID) -> DreamRef | None:
    row = conn.execute(
        "SELECT id, instance_key, audience_kind, audience_key FROM agent_memory_dreams"
        " WHERE id = %s", (dream_id,)).fetchone()
    return DreamRef(*row) if row else None


def latest_dream(conn: psycopg.Connection, instance_key: str, audience_kind: str,
                 audience_key: str) -> UUID | None:
    """The partition's latest Dream that wrote to the ledger (completed or partial, not a
    dry run), or None."""
    row = conn.execute(
        """
        SELECT id FROM agent_memory_dreams
         WHERE instance_key = %s AND audience_kind = %s AND audience_key = %s
           AND status IN ('completed', 'partial') AND NOT dry_run
         ORDER BY started_at DESC LIMIT 1
        """, (instance_key, audience_kind, audience_key)).fetchone()
    return row[0] if row else None


def build_dream_graph(
    conn: psycopg.Connection,
    settings: Settings,
    dream_id: UUID,
    *,
    rebuild: bool = False,
    embedder: EmbeddingProvider | None = None,
    model: GraphModel | None = None,
) -> GraphBuild:
    """Extend the graph from the approved assertions of a completed Dream partition (those its
    evidence rows name, created or reused), with ``dream`` evidence and ``dreamId`` refs,
    together with any other due graph work of the partition; record the counts on the dream
    row (``stats_json.graph``). ``rebuild`` first removes only this Dream's refs and evidence
    (stable memory refs shared with earlier Dreams stay), then extracts again."""
    require_idle(conn, "build_dream_graph")
    with committed_unit(conn):
        dream = _dream(conn, dream_id)
        if dream is None:
            raise LookupError(f"no dream {dream_id}")
        assertions = [r[0] for r in conn.execute(
            "SELECT DISTINCT assertion_id FROM agent_memory_assertion_evidence"
            " WHERE instance_key = %s AND dream_id = %s ORDER BY assertion_id",
            (dream.instance_key, dream_id)).fetchall()]
        cleared = remove_dream_refs(conn, dream.instance_key, dream_id) if rebuild else None
        suffix = f":rebuild:{uuid4()}" if rebuild else ""
        payload = {"dreamId": str(dream_id), "audienceKind": dream.audience_kind,
                   "audienceKey": dream.audience_key}
        for assertion_id in assertions:
            enqueue(conn, dream.instance_key, GRAPH_PROJECTION, assertion_id,
                    f"{GRAPH_PROJECTION}:{assertion_id}:dream:{dream_id}{suffix}", payload)
    build = GraphBuild()
    if cleared is not None:
        build.changes += cleared
    while True:   # the partition's due work, in bounded passes
        passed = process_graph_jobs(conn, settings, instance_key=dream.instance_key,
                                    audience=(dream.audience_kind, dream.audience_key),
                                    embedder=embedder, model=model, dream_id=dream_id)
        build.merge(passed)
        if passed.jobs < settings.graph_jobs_per_pass or passed.failures:
            break
    with committed_unit(conn):
        conn.execute(
            "UPDATE agent_memory_dreams SET stats_json = stats_json || %s WHERE id = %s",
            (Jsonb({"graph": build.as_json()}), dream_id))
    return build


def sweep_unsupported(conn: psycopg.Connection, instance_key: str | None = None) -> GraphChanges:
    """Refs of assertions that stopped being told without an event (their validity window
    ended) leave the graph (bounded; the outbox worker calls it every pass)."""
    require_idle(conn, "sweep_unsupported")
    with committed_unit(conn):
        changes = retract_unsupported(conn, instance_key)
    commit_if_idle(conn)
    return changes
