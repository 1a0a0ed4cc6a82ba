"""One Dream partition execution, start to finish (specification, "Memory Dreaming").

1. take the runtime-wide Dreaming lock (a concurrent Dream gets :class:`DreamLocked`);
2. select the partition's inputs; below ``dream_min_inputs`` the row is ``skipped`` and no
   model is called;
3. resolve the model and commit a ``running`` row naming it exactly, before generation;
4. one strict JSON generation (the client enforces the phase timeout);
5. strict validation: a structural failure fails closed (``skipped``, no mutation at all);
6. dry run: proposals, policy preview and diagnostics go to the dream row only;
7. otherwise, in one transaction: ledger promotion, the targeted safety pass, draft wiki
   proposals, projection work enqueued; then this run's outbox jobs are processed;
8. the row ends ``completed``, ``partial`` (items rejected, embeddings deferred, projection
   jobs failed), ``skipped`` (malformed output or nothing valid: there is no fallback
   publication) or ``failed`` (model unavailable, timeout, mismatch, internal error), with
   ``stats_json`` and diagnostics.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg

from memory_platform.features.dreaming import contract, prompt
from memory_platform.features.dreaming import model as dream_model
from memory_platform.features.dreaming.inputs import DreamInputs, select_inputs
from memory_platform.features.dreaming.lock import dream_lock
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.promote import promote
from memory_platform.features.dreaming.runs import (
    TRIGGERS,
    Trigger,
    finish_dream,
    heartbeat,
    record_finished_dream,
    start_dream,
)
from memory_platform.features.dreaming.safety import SafetyResult, preview, run_safety_pass
from memory_platform.features.dreaming.validate import Validation, validate_output
from memory_platform.features.dreaming.wiki import reject_dependent_proposals, store_proposals
from memory_platform.features.projection.outbox import (
    EMBEDDING_DEFERRED,
    OutboxResult,
    enqueue_assertion_projection,
    process_outbox,
)
from memory_platform.foundation import tracing
from memory_platform.foundation.db.units import committed_unit, require_idle, rollback_if_open
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.llm.base import JsonRequest, ModelError
from memory_platform.shared.llm.cost import ModelUsage

log = logging.getLogger(__name__)

# ModelError codes that mean "the output was unusable" (skipped) rather than "the model
# could not be used" (failed).
MALFORMED_CODES = frozenset({"malformed_output", "truncated", "length", "empty"})


@dataclass
class DreamResult:
    dream_id: UUID
    status: str
    partition: Partition
    model: str | None
    model_source: str | None
    dry_run: bool
    stats: dict[str, Any]
    diagnostics: list[dict[str, Any]]
    proposals: dict[str, Any] | None = None
    assertion_ids: list[UUID] = field(default_factory=list)
    activated_ids: list[UUID] = field(default_factory=list)
    wiki_proposal_ids: list[UUID] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"dreamId": str(self.dream_id), "status": self.status,
                "partitionKey": self.partition.partition_key, "model": self.model,
                "modelSource": self.model_source, "dryRun": self.dry_run, "stats": self.stats,
                "diagnostics": self.diagnostics,
                "assertionIds": [str(a) for a in self.assertion_ids],
                "activatedIds": [str(a) for a in self.activated_ids],
                "wikiProposalIds": [str(w) for w in self.wiki_proposal_ids]}


def _resolve(run: _Run, model: Any):
    """The client of the exact model; ``run.model``/``run.model_source`` are set first, so a
    model that cannot be built is still named on the failed row. A MaintenanceModel
    instance is used as given."""
    if model is not None and not isinstance(model, str):
        run.model, run.model_source = model.name, "explicit"
        return model
    run.model, run.model_source = dream_model.resolve_model_name(
        run.conn, run.settings, run.partition.instance_key, model)
    return dream_model.model_client(run.settings, run.model)


class _Run:
    """The state of one execution: timings, stats and diagnostics as they accumulate."""

    def __init__(self, conn, settings: Settings, partition: Partition, *, dry_run: bool,
                 trigger: Trigger, orchestrator_run_id: str | None) -> None:
        self.conn, self.settings, self.partition = conn, settings, partition
        self.dry_run, self.trigger, self.orchestrator_run_id = dry_run, trigger, orchestrator_run_id
        self.started = time.perf_counter()
        self.mark = self.started
        self.durations: dict[str, float] = {}
        self.stats: dict[str, Any] = {"trigger": trigger, "dryRun": dry_run,
                                      "orchestratorRunId": orchestrator_run_id,
                                      "partitionKey": partition.partition_key}
        self.diagnostics: list[dict[str, Any]] = []
        self.dream_id: UUID | None = None
        self.model: str | None = None
        self.model_source: str | None = None

    def phase(self, name: str) -> None:
        now = time.perf_counter()
        self.durations[name] = round(now - self.mark, 4)
        self.mark = now

    def diagnose(self, code: str, phase: str, message: str, **details: Any) -> None:
        self.diagnostics.append({"code": code, "phase": phase, "message": message, **details})

    def final_stats(self) -> dict[str, Any]:
        self.durations["total"] = round(time.perf_counter() - self.started, 4)
        return {**self.stats, "durations": dict(self.durations), "model": self.model,
                "modelSource": self.model_source}

    def finish(self, status: str, *, proposals: dict[str, Any] | None = None,
               error: str | None = None, **result: Any) -> DreamResult:
        stats = self.final_stats()
        with committed_unit(self.conn):
            if self.dream_id is None:
                self.dream_id = record_finished_dream(
                    self.conn, self.partition, status, model=self.model, trigger=self.trigger,
                    dry_run=self.dry_run, orchestrator_run_id=self.orchestrator_run_id,
                    stats=stats, diagnostics=self.diagnostics, error=error)
            else:
                finish_dream(self.conn, self.dream_id, status, stats=stats,
                             diagnostics=self.diagnostics, proposals=proposals, error=error)
        log.info("dream %s %s: %s", self.dream_id, self.partition.partition_key, status)
        return DreamResult(self.dream_id, status, self.partition, self.model, self.model_source,
                           self.dry_run, stats, self.diagnostics, proposals, **result)


def run_dream_partition(
    conn: psycopg.Connection,
    settings: Settings,
    partition: Partition,
    *,
    model: Any = None,
    dry_run: bool = False,
    trigger: Trigger = "manual",
    orchestrator_run_id: str | None = None,
    embedder: EmbeddingProvider | None = None,
) -> DreamResult:
    """Dream one audience partition. ``model`` is an exact model name (an explicit choice),
    a MaintenanceModel instance, or None (resolution order of dreaming.model).

    The connection must not be inside a transaction: the run commits its units itself (the
    running row before generation, the ledger change set, each outbox job). Raises
    :class:`DreamLocked` when another Dream holds the lock; nothing is written then."""
    if trigger not in TRIGGERS:
        raise ValueError(f"trigger must be one of {TRIGGERS}")
    require_idle(conn, "run_dream_partition")
    with tracing.span("dream", **{"memory.partition": partition.partition_key,
                                  "memory.dream.trigger": trigger,
                                  "memory.dream.dry_run": dry_run}) as current:
        with dream_lock(conn):
            run = _Run(conn, settings, partition, dry_run=dry_run, trigger=trigger,
                       orchestrator_run_id=orchestrator_run_id)
            try:
                result = _execute(run, model, embedder)
            except Exception as exc:
                if run.dream_id is None:
                    raise
                log.exception("dream %s failed", run.dream_id)
                rollback_if_open(conn)
                run.diagnose("internal_error", "engine", f"{type(exc).__name__}: {exc}"[:500])
                result = run.finish("failed", error=f"{type(exc).__name__}: {exc}"[:500])
        if current.is_recording():
            current.set_attributes(_span_attributes(result))
        return result


def _span_attributes(result: DreamResult) -> dict[str, Any]:
    """What the ``dream`` span tells: ids, status, model, counts, tokens, cost."""
    usage = ModelUsage.from_json(result.stats.get("modelUsage"))
    return tracing.attributes({
        "memory.dream.id": str(result.dream_id), "memory.dream.status": result.status,
        "gen_ai.request.model": result.model,
        "memory.dream.inputs": result.stats.get("inputsTotal"),
        "memory.dream.accepted": result.stats.get("accepted"),
        "memory.dream.model_calls": usage.calls,
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "memory.llm.estimated_cost_usd": usage.estimated_cost_usd,
        "memory.llm.unpriced_calls": usage.unpriced_calls})


def _execute(run: _Run, model: Any, embedder: EmbeddingProvider | None) -> DreamResult:
    conn, settings, partition = run.conn, run.settings, run.partition
    with committed_unit(conn):
        inputs = select_inputs(conn, settings, partition)
    run.stats.update(inputs.stats())
    run.phase("select")
    if len(inputs.rows) < settings.dream_min_inputs:
        run.diagnose("below_min_inputs", "select",
                     f"{len(inputs.rows)} eligible inputs; the partition needs "
                     f"{settings.dream_min_inputs}", inputs=len(inputs.rows),
                     required=settings.dream_min_inputs)
        return run.finish("skipped")

    try:
        with committed_unit(conn):
            client = _resolve(run, model)
    except Exception as exc:  # recorded on the row; there is no fallback model
        run.diagnose("model_unavailable", "resolve", str(exc)[:500],
                     **_model_error_details(exc))
        return run.finish("failed", error=str(exc)[:500])
    run.phase("resolve")
    with committed_unit(conn):
        run.dream_id = start_dream(conn, partition, model=run.model, trigger=run.trigger,
                                   dry_run=run.dry_run,
                                   orchestrator_run_id=run.orchestrator_run_id,
                                   stats={**run.stats, "model": run.model,
                                          "modelSource": run.model_source})

    completion = _generate(run, client, inputs)
    if isinstance(completion, DreamResult):
        return completion
    validation = validate_output(completion.data, inputs.rows, settings)
    run.phase("validate")
    run.stats["proposed"] = {"assertions": validation.proposed_assertions,
                             "wikiProposals": validation.proposed_wiki}
    if not validation.ok:
        failure = validation.failure or {}
        run.diagnose(failure.get("code", "schema_violation"), "validate",
                     "the model output does not satisfy the Dream contract; nothing was "
                     "written", problems=failure.get("problems", []),
                     problemCount=failure.get("problemCount", 0),
                     finishReason=completion.finish_reason, outputChars=len(completion.text or ""))
        run.stats["rejected"] = {failure.get("code", "schema_violation"): 1}
        return run.finish("skipped", proposals={"failure": failure})
    if run.dry_run:
        return _dry_run(run, validation, inputs)
    return _apply(run, validation, inputs, embedder)


def _model_error_details(exc: Exception) -> dict[str, Any]:
    details = getattr(exc, "diagnostic", None)
    return {"model": details} if isinstance(details, dict) else {}


def _generate(run: _Run, client, inputs: DreamInputs):
    """The completion, or the finished DreamResult when the model call failed closed."""

    settings = run.settings
    request = JsonRequest(
        system=prompt.system_prompt(settings), user=prompt.user_prompt(settings, inputs),
        schema=contract.dream_schema(settings), schema_name=contract.SCHEMA_NAME,
        inputs=prompt.model_inputs(settings, inputs),
        max_completion_tokens=settings.dream_completion_tokens,
        topic=f"{run.partition.kind}-memory")
    usage = ModelUsage()
    try:
        completion = client.complete_json(request)
    except ModelError as exc:
        usage.add(run.model or getattr(client, "name", "?"), None, settings.model_prices)
        run.stats["modelUsage"] = usage.as_json()
        run.phase("generate")
        status = "skipped" if exc.code in MALFORMED_CODES else "failed"
        run.diagnose(exc.code, "generate", exc.reason, model=exc.diagnostic)
        return run.finish(status, error=None if status == "skipped" else str(exc)[:500])
    run.phase("generate")
    usage.add(completion.model, completion.usage, settings.model_prices)
    run.stats["modelUsage"] = usage.as_json()
    run.stats["generation"] = {"finishReason": completion.finish_reason,
                               "usage": completion.usage,
                               "durationSeconds": round(completion.duration_seconds, 4),
                               "events": completion.events}
    if completion.model != run.model:
        run.diagnose("model_mismatch", "generate",
                     f"asked for {run.model!r}, the client answered as {completion.model!r}",
                     requested=run.model, answered=completion.model)
        return run.finish("failed", error="model mismatch")
    with committed_unit(run.conn):
        heartbeat(run.conn, run.dream_id)
    return completion


def _proposals(validation: Validation) -> dict[str, Any]:
    return {"assertions": [a.as_json() for a in validation.assertions],
            "wikiProposals": [w.as_json() for w in validation.wiki],
            "rejected": [r.as_json() for r in validation.rejected]}


def _count(counts: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    total = Counter(counts)
    total.update(more)
    return dict(total)


def _dry_run(run: _Run, validation: Validation, inputs: DreamInputs) -> DreamResult:
    with committed_unit(run.conn):
        decisions = preview(run.conn, run.settings, run.partition, validation.assertions,
                            inputs.by_id)
    run.phase("policy_preview")
    proposals = {**_proposals(validation), "policyPreview": decisions}
    would = [d for d in decisions if d["decision"] == "reject"]
    run.stats.update({"accepted": len(validation.assertions),
                      "wouldActivate": sum(d["decision"] == "activate" for d in decisions),
                      "rejected": _count(validation.rejected_by_reason(),
                                         _reasons(d["reasonCode"] for d in would)),
                      "wikiProposals": len(validation.wiki)})
    if not validation.assertions and not validation.wiki:
        run.diagnose("no_valid_proposals", "validate", "no valid, evidence-backed proposal")
        return run.finish("skipped", proposals=proposals)
    status = "partial" if validation.rejected or would else "completed"
    return run.finish(status, proposals=proposals)


def _reasons(codes) -> dict[str, int]:
    return dict(Counter(codes))


def _apply(run: _Run, validation: Validation, inputs: DreamInputs,
           embedder: EmbeddingProvider | None) -> DreamResult:
    conn, settings, partition, dream_id = run.conn, run.settings, run.partition, run.dream_id
    assert dream_id is not None
    by_id = inputs.by_id
    with committed_unit(conn):
        promotion = promote(conn, partition, dream_id, validation.assertions, by_id)
        run.phase("promote")
        safety: SafetyResult = run_safety_pass(conn, settings, partition, dream_id,
                                               promotion.promoted)
        run.phase("safety")
        sources = {m: s for p in promotion.promoted for m, s in p.source_ids.items()}
        stored, wiki_rejected = store_proposals(conn, partition, dream_id, validation.wiki,
                                                promotion.promoted, sources)
        policy_rejected_wiki = reject_dependent_proposals(
            conn, partition.instance_key, [p.assertion_id for p in promotion.promoted])
        relations = {p.assertion_id: {m: "updates" for m in p.source_ids}
                     for p in promotion.promoted if p.item.relation == "updates"}
        job_ids = [enqueue_assertion_projection(
                       conn, partition.instance_key, assertion_id,
                       {"dreamId": str(dream_id),
                        "relations": {str(k): v for k, v in
                                      relations.get(assertion_id, {}).items()}})
                   for assertion_id in dict.fromkeys(safety.changed)]
        run.phase("wiki_and_enqueue")
    outbox: OutboxResult = process_outbox(conn, settings, limit=max(1, len(job_ids)),
                                          embedder=embedder, job_ids=job_ids)
    run.phase("outbox")

    rejected = _count(_count(validation.rejected_by_reason(),
                             _reasons(r.reason for r in promotion.rejected + wiki_rejected)),
                      safety.rejected_by_reason())
    deferred = outbox.deferred_embeddings
    for assertion_id in deferred:
        run.diagnose(EMBEDDING_DEFERRED, "outbox",
                     "the assertion is active and keyword-recallable; its embedding waits "
                     "for the re-embed backlog", assertionId=str(assertion_id))
    for outcome in outbox.outcomes:
        if outcome.outcome == "failed":
            run.diagnose("projection_failed", "outbox", outcome.error or "failed",
                         assertionId=str(outcome.subject_id), jobId=outcome.job_id)
    for rejection in validation.rejected + promotion.rejected + wiki_rejected:
        run.diagnose(rejection.reason, "validate", f"{rejection.kind} {rejection.index} "
                     "rejected", item=rejection.as_json())
    run.stats.update({
        "accepted": len(promotion.promoted),
        "created": promotion.created,
        "reused": promotion.reused,
        "activated": len(safety.activated),
        "deferred": sum(d.decision == "defer" for d in safety.decisions),
        "rejected": rejected,
        "deferredEmbeddings": len(deferred),
        "wikiProposals": sum(1 for s in stored if s.created),
        "wikiProposalsRejectedByPolicy": len(policy_rejected_wiki),
        "safety": safety.summary(),
        "outbox": outbox.summary(),
    })
    proposals = {**_proposals(validation),
                 "rejected": [r.as_json() for r in
                              validation.rejected + promotion.rejected + wiki_rejected]}
    result = {"assertion_ids": [p.assertion_id for p in promotion.promoted],
              "activated_ids": safety.activated,
              "wiki_proposal_ids": [s.id for s in stored]}
    if not promotion.promoted and not stored:
        run.diagnose("no_valid_proposals", "validate",
                     "no valid, evidence-backed proposal; nothing was published")
        return run.finish("skipped", proposals=proposals, **result)
    partial = bool(rejected or deferred or outbox.failed)
    return run.finish("partial" if partial else "completed", proposals=proposals, **result)
