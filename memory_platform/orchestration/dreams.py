"""One Dream partition as Dagster sees it: the engine call plus what to report about it.

Both Dagster shapes use this: the per-partition multi-asset (one partition per run) and the
``dream_batch`` job (many partitions per run). The engine does the work; this module only
waits for the runtime-wide Dreaming lock, and turns the :class:`DreamResult` into the
materialisations and check results of the Dream assets.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from memory_platform.dreaming.checks import CheckOutcome, run_checks
from memory_platform.dreaming.engine import DreamLocked, DreamResult, run_dream_partition
from memory_platform.dreaming.partitions import Partition
from memory_platform.embeddings.base import EmbeddingProvider
from memory_platform.orchestration.report import asset_metadata, materialized_assets
from memory_platform.settings import Settings

__all__ = ["DreamOutcome", "dream_partition", "partition_checks"]

_MAX_LOCK_DELAY = 30.0


@dataclass
class DreamOutcome:
    result: DreamResult
    assets: list[str]                                   # materialised, lineage order
    metadata: dict[str, dict[str, Any]]                 # per asset
    seconds: float                                      # wall time incl. lock wait
    lock_waits: int = 0

    @property
    def failed(self) -> bool:
        return self.result.status == "failed"


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


def dream_partition(
    conn: psycopg.Connection,
    settings: Settings,
    partition_key: str,
    *,
    model: str | None = None,
    dry_run: bool = False,
    trigger: str = "manual",
    run_id: str | None = None,
    embedder: EmbeddingProvider | None = None,
    lock_wait_seconds: float | None = None,
    on_wait: Callable[[float], None] | None = None,
) -> DreamOutcome:
    """Dream one partition (``instance/kind/key``) and describe the result per asset."""
    partition = Partition.from_partition_key(partition_key)
    started = time.perf_counter()
    wait = settings.dream_lock_wait_seconds if lock_wait_seconds is None else lock_wait_seconds
    result, waits = run_with_lock_wait(
        lambda: run_dream_partition(conn, settings, partition, model=model or None,
                                    dry_run=dry_run, trigger=trigger,
                                    orchestrator_run_id=run_id, embedder=embedder),
        wait, on_wait)
    return DreamOutcome(result, materialized_assets(result), asset_metadata(conn, result),
                        round(time.perf_counter() - started, 4), waits)


def partition_checks(conn: psycopg.Connection, partition_key: str,
                     assets: set[str]) -> list[tuple[str, CheckOutcome]]:
    """The invariant checks guarding ``assets`` of one partition."""
    return run_checks(conn, Partition.from_partition_key(partition_key), assets)
