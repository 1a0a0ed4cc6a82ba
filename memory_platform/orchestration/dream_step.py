"""One Dream partition as Dagster reports it: the one step both Dagster shapes run.

The per-partition multi-asset (one partition per run) and the ``dream_batch`` op (many per
run) both call :func:`dream_step` and differ only in how they emit what it answers. Here, once:
which trigger a run records, the refusal of a partition the database does not know (a key
added by hand in the launch dialog), waiting for the runtime-wide Dreaming lock, the failure
text of a failed Dream, the materialised assets and their metadata, and which invariant checks
guard them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from dagster import AssetCheckSeverity, MetadataValue

from memory_platform.features.dreaming.checks import CheckOutcome, run_check
from memory_platform.features.dreaming.engine import DreamResult, run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.runs import Trigger
from memory_platform.features.dreaming.summary import DreamStats
from memory_platform.features.dreaming.targets import known_partitions
from memory_platform.foundation import tracing
from memory_platform.foundation.errors import DreamLocked, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.keys import CHECK_GUARDS, DREAM_PROPOSALS
from memory_platform.orchestration.metadata import (
    asset_metadata,
    check_metadata,
    failure_metadata,
    materialized_assets,
)
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.llm.cost import ModelUsage

__all__ = ["DreamStep", "check_fields", "dream_step", "evaluate_check", "guarding_checks",
           "run_with_lock_wait", "step_trigger", "usage_metadata"]

_MAX_LOCK_DELAY = 30.0


@dataclass
class DreamStep:
    """What one partition's step produced. ``problem`` is set when the step must fail: the
    partition was refused (then ``result`` is None and nothing was written) or the Dream
    failed."""

    partition_key: str
    result: DreamResult | None
    assets: list[str] = field(default_factory=list)          # materialised, lineage order
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)     # per asset
    seconds: float = 0.0                                      # wall time incl. lock wait
    lock_waits: int = 0
    problem: str | None = None

    @property
    def refused(self) -> bool:
        return self.result is None

    @property
    def failure_metadata(self) -> dict[str, MetadataValue]:
        if self.result is None:
            return {"partition": MetadataValue.text(self.partition_key)}
        return failure_metadata(self.result)

    def summary(self) -> str:
        """One log line: status, dream, exact model, key numbers, time."""
        if self.result is None:
            return f"{self.partition_key}: refused: {self.problem}"
        result = self.result
        return (f"{self.partition_key}: {result.status} dream {result.dream_id} "
                f"model={result.model or '-'} {DreamStats.from_stats(result.stats).line()} "
                f"in {self.seconds:.2f}s")


def step_trigger(run_tags: Mapping[str, str], configured: Trigger) -> Trigger:
    """The trigger a run records: a run of a Dagster backfill is a ``backfill``."""
    return "backfill" if "dagster/backfill" in run_tags else configured


def run_with_lock_wait(fn: Callable[[], DreamResult], wait_seconds: float,
                       on_wait: Callable[[float], None] | None = None) -> tuple[DreamResult, int]:
    """Call ``fn`` until it does not raise DreamLocked or ``wait_seconds`` are used up (then
    DreamLocked propagates). Nothing is written while the lock is refused, so retrying is
    safe; the delay doubles from one second up to thirty."""
    deadline = time.monotonic() + wait_seconds
    delay, waits = 1.0, 0
    while True:
        try:
            return fn(), waits
        except DreamLocked:
            if time.monotonic() + delay > deadline:
                raise
            if on_wait:
                on_wait(delay)
            time.sleep(delay)
            waits += 1
            delay = min(delay * 2, _MAX_LOCK_DELAY)


def _failure_text(result: DreamResult) -> str:
    """Codes only: a diagnostic's message may quote an excerpt (orchestration.metadata)."""
    codes = ", ".join(d["code"] for d in result.diagnostics) or "error"
    return (f"Dream {result.dream_id} of {result.partition.partition_key} failed ({codes}); "
            "the dream row holds the diagnostics")


def dream_step(
    conn: psycopg.Connection,
    settings: Settings,
    partition_key: str,
    *,
    model: str | None = None,
    dry_run: bool = False,
    trigger: Trigger = "manual",
    run_id: str | None = None,
    embedder: EmbeddingProvider | None = None,
    lock_wait_seconds: float | None = None,
    on_wait: Callable[[float], None] | None = None,
) -> DreamStep:
    """Dream one partition (``instance/kind/key``) if the database knows it, waiting up to
    ``lock_wait_seconds`` (default ``dream_lock_wait_seconds``) for the Dreaming lock
    (DreamLocked after that)."""
    try:
        (partition,) = known_partitions(conn, [partition_key])
    except (InvalidInput, NotFound) as exc:
        return DreamStep(partition_key, None, problem=exc.message)
    tracing.setup("memory-platform-dagster")  # once per process; off unless OTEL_* say so
    started = time.perf_counter()
    wait = settings.dream_lock_wait_seconds if lock_wait_seconds is None else lock_wait_seconds
    try:
        result, waits = run_with_lock_wait(
            lambda: run_dream_partition(conn, settings, partition, model=model or None,
                                        dry_run=dry_run, trigger=trigger,
                                        orchestrator_run_id=run_id, embedder=embedder),
            wait, on_wait)
    finally:
        tracing.flush()  # a run worker may exit right after the step
    metadata = asset_metadata(conn, result)
    if DREAM_PROPOSALS in metadata:
        metadata[DREAM_PROPOSALS].update(usage_metadata(result))
    return DreamStep(partition_key, result, materialized_assets(result),
                     metadata, round(time.perf_counter() - started, 4),
                     waits, _failure_text(result) if result.status == "failed" else None)


def usage_metadata(result: DreamResult) -> dict[str, MetadataValue]:
    """The Dream's model calls as numbers Dagster plots per partition: calls, tokens as the
    provider reported them, the estimated cost of the priced calls (0.0 when unpriced; then
    ``unpriced_model_calls`` counts them). docs/observability.md."""
    usage = ModelUsage.from_json(result.stats.get("modelUsage"))
    return {"model_calls": MetadataValue.int(usage.calls),
            "prompt_tokens": MetadataValue.int(usage.prompt_tokens),
            "completion_tokens": MetadataValue.int(usage.completion_tokens),
            "total_tokens": MetadataValue.int(usage.total_tokens),
            "estimated_cost_usd": MetadataValue.float(usage.estimated_cost_usd),
            "unpriced_model_calls": MetadataValue.int(usage.unpriced_calls)}


def guarding_checks(assets: list[str] | set[str]) -> list[tuple[str, str]]:
    """(check name, asset) of every invariant check guarding one of ``assets``."""
    return [(name, asset) for name, asset in CHECK_GUARDS.items() if asset in assets]


def evaluate_check(conn: psycopg.Connection, partition_key: str, name: str) -> CheckOutcome:
    return run_check(conn, Partition.from_partition_key(partition_key), name)


def check_fields(outcome: CheckOutcome) -> dict[str, Any]:
    """What a check result or evaluation reports (every Dream check is an error when it
    fails)."""
    return {"passed": outcome.passed, "severity": AssetCheckSeverity.ERROR,
            "description": outcome.description, "metadata": check_metadata(outcome)}
