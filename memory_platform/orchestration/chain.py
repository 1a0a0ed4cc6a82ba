"""The daily chain, declared once: a :class:`Step` per partitioned asset after the Dream (with
its blocking checks), declared in its feature's module under ``memory_platform/assets/``;
this kit builds both Dagster shapes from the same steps.

* :func:`asset_defs`: a step's ``@asset`` (partitioned by ``audiences``, upstream ``after``)
  and an ``@asset_check`` per check (blocking), for ``dream_audience_job``.
* :func:`batch_events`: what ``dream_batch`` does per partition after its Dream. It walks the
  steps in order; a step runs when every upstream of it materialised and passed its checks
  (a skipped, failed or blocked step stops what follows, as Dagster does in the asset job),
  and yields the same materialisations and check evaluations. :func:`batch_finish` runs the
  steps' end-of-batch work once (the consolidation sweep).

Both shapes hand every step one :class:`StepContext`: the partition decoded once, and the
partition's latest Dream looked up once (:mod:`memory_platform.orchestration.dream_row`).
(No ``from __future__ import annotations``: Dagster reads the annotations of the generated
functions.)
"""

import functools
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    PreviewWarning,
    asset,
    asset_check,
)

from memory_platform.features.dreaming.checks import CheckOutcome
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.dream_row import latest
from memory_platform.orchestration.dream_step import check_fields
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.metadata import error_label
from memory_platform.orchestration.partitions import audiences
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["Check", "Finish", "Step", "StepContext", "StepReport", "asset_defs",
           "batch_events", "batch_finish", "ordered"]

KINDS = {"python", "postgres"}


@dataclass(frozen=True)
class StepContext:
    """What every step of one partition is handed."""

    conn: psycopg.Connection
    settings: Settings
    partition: Partition            # the one partition type, decoded once
    dream_id: UUID | None           # the partition's latest Dream, looked up once
    config: Any = None              # the asset's run config; None in the batch
    in_batch: bool = False

    @property
    def partition_key(self) -> str:
        return self.partition.partition_key

    def option(self, name: str, default: Any = False) -> Any:
        """A run-config field of the asset (the batch always runs the defaults)."""
        return getattr(self.config, name, default) if self.config is not None else default


@dataclass
class StepReport:
    """A step's materialisation: its metadata and the (content-free) lines it logs."""

    metadata: dict[str, MetadataValue]
    log: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Check:
    """A blocking, partitioned check of a step's asset."""

    name: str
    description: str
    run: Callable[[StepContext], CheckOutcome]


@dataclass(frozen=True)
class Finish:
    """A step's work once per batch, after its partitions (the consolidation sweep): given the
    (partition key, dream id) of every partition the step was run for, in order; yields an
    unpartitioned materialisation of ``key``."""

    key: str
    label: str                       # how a failure names it: "<step> <label>"
    run: Callable[[psycopg.Connection, Settings, list[tuple[str, UUID | None]]], StepReport]


@dataclass(frozen=True)
class Step:
    """One partitioned asset of the daily chain after the Dream."""

    key: str                                          # the asset key
    after: tuple[str, ...]                            # upstream asset keys
    run: Callable[[StepContext], StepReport | None]   # None: skipped (nothing downstream)
    group: str
    description: str
    checks: tuple[Check, ...] = ()
    config: type | None = None                        # a dagster Config class
    skipped: str | None = None                        # the log line of a skip; skippable
    finish: Finish | None = None


def ordered(steps: Iterable[Step]) -> tuple[Step, ...]:
    """``steps`` in an order where every step follows the steps it names in ``after``
    (declaration order among independent ones); a cycle is an error."""
    pending = list(steps)
    keys = {step.key for step in pending}
    done: list[Step] = []
    placed: set[str] = set()
    while pending:
        ready = next((s for s in pending
                      if all(a in placed or a not in keys for a in s.after)), None)
        if ready is None:
            raise ValueError(f"the chain has a cycle among {[s.key for s in pending]}")
        pending.remove(ready)
        done.append(ready)
        placed.add(ready.key)
    return tuple(done)


def step_context(conn: psycopg.Connection, settings: Settings, partition_key: str, *,
                 config: Any = None) -> StepContext:
    partition = Partition.from_partition_key(partition_key)
    return StepContext(conn, settings, partition, latest(conn, partition), config)


# --- one partition per run: the assets and their checks -------------------------------


def _materialise(step: Step, context: AssetExecutionContext, config: Any,
                 postgres: PostgresResource, embeddings: EmbeddingsResource
                 ) -> Iterator[MaterializeResult]:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        report = step.run(step_context(conn, settings, context.partition_key, config=config))
    if report is None:
        context.log.info(step.skipped or "skipped")
        return
    for line in report.log:
        context.log.info(line)
    for line in report.warnings:
        context.log.warning(line)
    yield MaterializeResult(metadata=report.metadata)


def _asset(step: Step):
    options: dict[str, Any] = {
        "name": step.key, "deps": list(step.after), "partitions_def": audiences,
        "group_name": step.group, "pool": WRITER_POOL, "kinds": KINDS,
        "description": step.description}
    if step.skipped is not None:
        options["output_required"] = False
    config_class = step.config
    if config_class is None:
        @asset(**options)
        def _step(context: AssetExecutionContext, postgres: PostgresResource,
                  embeddings: EmbeddingsResource):
            yield from _materialise(step, context, None, postgres, embeddings)
    else:
        @asset(**options)
        def _step(context: AssetExecutionContext, config: config_class,  # type: ignore
                  postgres: PostgresResource, embeddings: EmbeddingsResource):
            yield from _materialise(step, context, config, postgres, embeddings)
    return _step


def _asset_check(step: Step, check: Check):
    with warnings.catch_warnings():  # partitioned asset checks are a preview in 1.13
        warnings.simplefilter("ignore", PreviewWarning)

        @asset_check(asset=step.key, name=check.name, blocking=True, partitions_def=audiences,
                     description=check.description)
        def _check(context, postgres: PostgresResource) -> AssetCheckResult:
            settings = postgres.settings()
            with postgres.connection(settings) as conn:
                outcome = check.run(step_context(conn, settings, context.partition_key))
            return AssetCheckResult(**check_fields(outcome))
    return _check


@functools.cache
def asset_defs(step: Step) -> tuple[Any, tuple[Any, ...]]:
    """The step's asset and its checks (built once per step)."""
    return _asset(step), tuple(_asset_check(step, check) for check in step.checks)


# --- many partitions per run: the batch walks the same steps ---------------------------


def batch_events(context: OpExecutionContext, steps: tuple[Step, ...], ctx: StepContext,
                 reached: set[str], problems: list[list[str]],
                 ran: dict[str, list[tuple[str, UUID | None]]]) -> Iterator[Any]:
    """The chain of one partition after its Dream, as the assets record it. ``reached``: the
    assets materialised with their checks passed so far (the Dream's); ``ran`` collects, per
    step with a :class:`Finish`, the partitions it was run for. A failure is a problem row;
    the batch goes on with the next partition."""
    key, dream = ctx.partition_key, str(ctx.dream_id or "-")
    reached = set(reached)
    for step in steps:
        if not all(upstream in reached for upstream in step.after):
            continue     # upstream skipped, failed or blocked: so is this step
        if step.finish is not None:
            ran.setdefault(step.key, []).append((key, ctx.dream_id))
        try:
            report = step.run(ctx)
        except Exception as exc:  # recorded; this partition's chain stops here
            problems.append([key, dream, f"{step.key}: {error_label(exc)}"])
            continue
        if report is None:
            continue     # skipped: no materialisation, no check
        for line in report.log:
            context.log.info(line)
        for line in report.warnings:
            context.log.warning(line)
        yield AssetMaterialization(asset_key=step.key, partition=key, metadata=report.metadata)
        passed = True
        for check in step.checks:
            try:
                outcome = check.run(ctx)
            except Exception as exc:  # a check that cannot run is a problem, not a pass
                problems.append([key, dream, f"check {check.name} did not run: "
                                 f"{error_label(exc)}"])
                passed = False
                continue
            context.log_event(AssetCheckEvaluation(
                asset_key=AssetKey(step.key), check_name=check.name, blocking=True,
                partition=key, **check_fields(outcome)))
            if not outcome.passed:
                problems.append([key, dream, f"check {check.name} failed: "
                                 f"{outcome.description}"])
                passed = False
        if passed:
            reached.add(step.key)


def batch_finish(context: OpExecutionContext, steps: tuple[Step, ...],
                 conn_factory: Callable[[], Any], settings: Settings,
                 ran: dict[str, list[tuple[str, UUID | None]]],
                 problems: list[list[str]]) -> Iterator[AssetMaterialization]:
    """Each step's end-of-batch work, once, for the partitions it was run for."""
    for step in steps:
        if step.finish is None or not ran.get(step.key):
            continue
        try:
            with conn_factory() as conn:
                report = step.finish.run(conn, settings, ran[step.key])
        except Exception as exc:  # recorded; the batch's output stands
            problems.append([step.finish.label, "-",
                             f"{step.key} {step.finish.label}: {error_label(exc)}"])
            continue
        for line in report.log:
            context.log.info(line)
        yield AssetMaterialization(asset_key=step.finish.key, metadata=report.metadata)
