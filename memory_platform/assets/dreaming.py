"""Dreaming on Dagster: the Dream assets of one audience partition, their invariant checks, and
the two jobs that materialise them.

``run_dream_partition`` does a partition in one sequence of committed units (lock, inputs,
running row, generation, validation, promotion + safety + wiki + enqueue, outbox), so the
five assets are produced by ONE op calling the engine once; it yields a materialisation per
asset with the metadata that belongs to it. Assets the execution did not reach (a Dream below
the input minimum, a malformed answer, a dry run) are skipped, which also skips their checks
and anything downstream.

* ``dream_audience_job``: one partition per run (the multi-asset plus its blocking checks).
* ``dream_batch``: many partitions per run. A Dagster run process costs seconds of start-up
  while an extractive Dream costs a fraction of a second, so the schedule and the sensors
  batch. It records, per partition, what the asset job records (one dream row, the
  materialisations it reached, the same checks); a partition that fails does not stop the
  others, and the run fails at the end, naming them.

Both run :func:`memory_platform.orchestration.dream_step.dream_step`, then the daily chain
:data:`CHAIN`: the steps declared once in the feature modules (``assets/graph.py``,
``consolidation.py``, ``chain.py``), as assets in the asset job and walked per partition by
the batch (:mod:`memory_platform.orchestration.chain`). (No ``from __future__
import annotations`` here: Dagster reads the ``Config`` annotations at definition time.)
"""

import warnings
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetSelection,
    AssetSpec,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    Output,
    PreviewWarning,
    RetryRequested,
    asset_check,
    define_asset_job,
    job,
    multi_asset,
    op,
)
from pydantic import Field

from memory_platform.features.dreaming.runs import TRIGGERS, Trigger
from memory_platform.features.dreaming.targets import parse_partition_keys
from memory_platform.foundation.errors import DreamLocked, InvalidInput
from memory_platform.foundation.features import modules
from memory_platform.orchestration.chain import (
    Step,
    asset_defs,
    batch_events,
    batch_finish,
    ordered,
    step_context,
)
from memory_platform.orchestration.dream_step import (
    check_fields,
    dream_step,
    evaluate_check,
    guarding_checks,
    step_trigger,
)
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.home import DREAMING_RUN_TAG, WRITER_POOL
from memory_platform.orchestration.keys import (
    ASSERTION_PROJECTIONS,
    CHECK_GUARDS,
    DREAM_ASSERTIONS,
    DREAM_INPUTS,
    DREAM_PROPOSALS,
    DREAM_READS,
    SESSION_ASSETS,
    WIKI_PROPOSALS,
)
from memory_platform.orchestration.metadata import error_label, md_table
from memory_platform.orchestration.partitions import audiences, register_partitions
from memory_platform.resources import (
    EmbeddingsResource,
    MaintenanceModelResource,
    PostgresResource,
    run_settings,
)

DREAMING_GROUP = "dreaming"
DREAM_AUDIENCE = "dream_audience"
DREAM_AUDIENCE_JOB = "dream_audience_job"
DREAM_BATCH_JOB = "dream_batch"
BATCH_OP = "dream_partitions"
_KINDS = {"python", "postgres"}
_TRIGGER_HELP = (f"One of {', '.join(TRIGGERS)} (a run of a Dagster backfill is recorded as "
                 "'backfill').")

DREAM_SPECS = [
    AssetSpec(DREAM_INPUTS, deps=[*DREAM_READS, *SESSION_ASSETS], group_name=DREAMING_GROUP,
              kinds=_KINDS,
              description="The partition's balanced Dream inputs (human summary/flush rows, "
              "approved facts and prior dreams; automation excluded, unowned quarantined)."),
    AssetSpec(DREAM_PROPOSALS, deps=[DREAM_INPUTS], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="The maintenance model's strictly validated proposals (the exact "
              "model is on the dream row before generation)."),
    AssetSpec(DREAM_ASSERTIONS, deps=[DREAM_PROPOSALS], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="Valid proposals promoted into the assertion ledger with verbatim "
              "evidence, decided by the targeted safety pass."),
    AssetSpec(ASSERTION_PROJECTIONS, deps=[DREAM_ASSERTIONS], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="Recall projections, chunks and embeddings of the activated "
              "assertions (through the idempotent outbox)."),
    AssetSpec(WIKI_PROPOSALS, deps=[ASSERTION_PROJECTIONS, DREAM_ASSERTIONS],
              group_name=DREAMING_GROUP, kinds=_KINDS, skippable=True,
              description="Draft Wiki change proposals with exact assertion/evidence refs; "
              "never published by a Dream."),
]

# What each check (memory_platform.features.dreaming.checks) verifies, as the UI shows it.
CHECK_DESCRIPTIONS = {
    "active_assertions_cite_verbatim_evidence":
        "Every active assertion of the partition cites an excerpt that occurs verbatim in a "
        "source of the same audience.",
    "evidence_stays_in_audience":
        "No evidence or projection links the partition to another audience or instance.",
    "no_projection_of_inactive_assertion":
        "No active recall projection of an assertion that is not active and approved.",
}


class DreamConfig(Config):
    """Run config of a Dream (``ops: {dream_audience: {config: ...}}``)."""

    model: str | None = Field(
        default=None, description="Exact model for this run (an explicit choice: it beats "
        "the persisted memory_dreaming_model setting). Unset: the resolution order.")
    dry_run: bool = Field(default=False, description="Write proposals and diagnostics to "
                          "the dream row only.")
    trigger: Trigger = Field(default="manual", description=_TRIGGER_HELP)


class DreamBatchConfig(Config):
    """Run config of a batch (``ops: {dream_partitions: {config: ...}}``)."""

    # A default, so the Launchpad's scaffold is a config that runs (an empty batch says so
    # and dreams nothing) and shows where the keys go.
    partition_keys: list[str] = Field(
        default=[], description="Audience partition keys (instance/kind/key, e.g. "
        "demo/team/demo: the partitions of the dream_audience asset), dreamed in this order. "
        "Empty: the run dreams nothing and says so.")
    model: str | None = Field(default=None, description="Exact model (explicit choice).")
    dry_run: bool = False
    trigger: Trigger = Field(default="manual", description=_TRIGGER_HELP)
    dream_date: str | None = Field(default=None, description="The day a scheduled batch "
                                   "belongs to (the date is run config, not a partition).")


def _config(model: str | None, dry_run: bool, trigger: Trigger) -> dict[str, Any]:
    config: dict[str, Any] = {"dry_run": dry_run, "trigger": trigger}
    if model:
        config["model"] = model
    return config


def asset_run_config(*, model: str | None = None, dry_run: bool = False,
                     trigger: Trigger = "manual") -> dict[str, Any]:
    """Run config of ``dream_audience_job``."""
    return {"ops": {DREAM_AUDIENCE: {"config": _config(model, dry_run, trigger)}}}


def batch_run_config(partition_keys: list[str], *, model: str | None = None,
                     dry_run: bool = False, trigger: Trigger = "manual",
                     dream_date: str | None = None) -> dict[str, Any]:
    """Run config of ``dream_batch``."""
    config = {"partition_keys": list(partition_keys), **_config(model, dry_run, trigger)}
    if dream_date:
        config["dream_date"] = dream_date
    return {"ops": {BATCH_OP: {"config": config}}}


# --- one partition per run -----------------------------------------------------------------


@multi_asset(name=DREAM_AUDIENCE, specs=DREAM_SPECS, partitions_def=audiences,
             can_subset=False, pool=WRITER_POOL,
             description="Dream one audience partition (memory_platform.features.dreaming.engine).")
def dream_audience(context: AssetExecutionContext, config: DreamConfig,
                   postgres: PostgresResource, embeddings: EmbeddingsResource,
                   maintenance_model: MaintenanceModelResource):
    settings = run_settings(postgres, embeddings, maintenance_model)
    with postgres.connection(settings) as conn:
        try:
            step = dream_step(
                conn, settings, context.partition_key, model=config.model,
                dry_run=config.dry_run, trigger=step_trigger(context.run.tags, config.trigger),
                run_id=context.run.run_id,
                on_wait=lambda s: context.log.info(f"Dreaming lock held; retrying in {s:.0f}s"))
        except DreamLocked as exc:
            # Nothing was written while the lock was refused: a retry is safe.
            raise RetryRequested(max_retries=3, seconds_to_wait=60) from exc
    context.log.info(step.summary())
    if step.problem:
        raise Failure(description=step.problem, metadata=step.failure_metadata)
    for asset in step.assets:
        yield MaterializeResult(asset_key=asset, metadata=step.metadata[asset])


def _dream_check(name: str, asset: str):
    with warnings.catch_warnings():  # partitioned asset checks are a preview in 1.13
        warnings.simplefilter("ignore", PreviewWarning)

        @asset_check(asset=asset, name=name, blocking=True, partitions_def=audiences,
                     description=CHECK_DESCRIPTIONS[name])
        def _check(context, postgres: PostgresResource) -> AssetCheckResult:
            with postgres.connection() as conn:
                outcome = evaluate_check(conn, context.partition_key, name)
            return AssetCheckResult(**check_fields(outcome))
    return _check


dream_checks = [_dream_check(name, asset) for name, asset in CHECK_GUARDS.items()]


def _chain_steps() -> tuple[Step, ...]:
    """The daily chain after the Dream: every feature's ``STEPS`` (each step declared once, in
    ``assets/<feature>.py``), collected over ``memory_platform.foundation.features`` and put in the
    order their ``after`` names. A new step is one declaration in its feature's module."""
    declared = [step for module in modules("memory_platform.assets")
                if module.__name__ != __name__ for step in getattr(module, "STEPS", ())]
    return ordered(declared)


# The asset job selects their assets, the batch walks them (orchestration.chain).
CHAIN = _chain_steps()
chain_assets = [asset_defs(step)[0] for step in CHAIN]
chain_checks = [check for step in CHAIN for check in asset_defs(step)[1]]

dream_audience_job = define_asset_job(
    DREAM_AUDIENCE_JOB,
    selection=AssetSelection.assets(dream_audience, *chain_assets),
    tags={DREAMING_RUN_TAG: "true"},
    description="Dream one audience partition: the five Dream assets, the knowledge graph, "
    "consolidation, user profiles, retention, re-embedding and their checks.")


# --- many partitions per run ---------------------------------------------------------------


@op(name=BATCH_OP, pool=WRITER_POOL, tags={"kind": "postgres"},
    description="Dream each configured audience partition in turn (one dream row, one set "
    "of Dream-asset materialisations and checks per partition).")
def dream_partitions(context: OpExecutionContext, config: DreamBatchConfig,
                     postgres: PostgresResource, embeddings: EmbeddingsResource,
                     maintenance_model: MaintenanceModelResource):
    keys = list(dict.fromkeys(config.partition_keys))
    try:
        parse_partition_keys(keys)
    except InvalidInput as exc:
        raise Failure(exc.message) from exc
    if not keys:
        context.log.warning("no partition_keys in the run config: nothing to dream (list "
                            "audience partition keys such as demo/team/demo in "
                            f"ops.{BATCH_OP}.config.partition_keys)")
        yield Output([])
        return
    settings = run_settings(postgres, embeddings, maintenance_model)
    trigger = step_trigger(context.run.tags, config.trigger)
    summaries: list[str] = []
    problems: list[list[str]] = []
    ran: dict[str, list[tuple[str, Any]]] = {}     # per step with a Finish: its partitions
    with postgres.connection(settings) as conn:
        for number, key in enumerate(keys, 1):
            progress = f"[{number}/{len(keys)}]"
            try:
                step = dream_step(
                    conn, settings, key, model=config.model, dry_run=config.dry_run,
                    trigger=trigger, run_id=context.run.run_id,
                    on_wait=lambda s, key=key: context.log.info(
                        f"{key}: Dreaming lock held; retrying in {s:.0f}s"))
            except Exception as exc:  # recorded; the batch goes on
                context.log.error(f"{progress} {key}: {error_label(exc)}")
                problems.append([key, "-", f"{error_label(exc)}"])
                continue
            if step.refused:
                context.log.error(f"{progress} {step.summary()}")
                problems.append([key, "-", str(step.problem)])
                continue
            dream_id = str(step.result.dream_id)
            register_partitions(context.instance, [key])
            for asset in step.assets:   # yielded: stored at once, whatever comes later
                yield AssetMaterialization(asset_key=asset, partition=key,
                                           metadata=step.metadata[asset])
            try:
                checks = [(name, asset, evaluate_check(conn, key, name))
                          for name, asset in guarding_checks(step.assets)]
                passed = True
            except Exception as exc:  # a check that cannot run is a problem, not a pass
                checks, passed = [], False
                problems.append([key, dream_id,
                                 f"checks did not run: {error_label(exc)}"])
            for name, asset, outcome in checks:
                context.log_event(AssetCheckEvaluation(
                    asset_key=AssetKey(asset), check_name=name, blocking=True, partition=key,
                    **check_fields(outcome)))
                if not outcome.passed:
                    passed = False
                    problems.append([key, dream_id,
                                     f"check {name} failed: {outcome.description}"])
            if passed and not config.dry_run:
                yield from batch_events(context, CHAIN, step_context(conn, settings, key),
                                        set(step.assets), problems, ran)
            if step.problem:
                problems.append([key, dream_id, step.problem])
            summaries.append(step.summary())
            context.log.info(f"{progress} {step.summary()}")
    yield from batch_finish(context, CHAIN, lambda: postgres.connection(settings), settings,
                            ran, problems)
    # The output flushes the logged check evaluations before a failure ends the step.
    yield Output(summaries)
    if problems:
        raise Failure(
            description=f"{len(problems)} problem(s) in {len(keys)} partition(s); the other "
            "partitions were dreamed",
            metadata={"failures": MetadataValue.md(md_table(
                ["partition", "dream id", "problem"], problems)),
                "dreamed": MetadataValue.int(len(summaries))})


@job(name=DREAM_BATCH_JOB, tags={DREAMING_RUN_TAG: "true"},
     description="Dream a list of audience partitions in one run (run config "
     "ops.dream_partitions.config.partition_keys); the schedule and sensors launch this.")
def dream_batch() -> None:
    dream_partitions()


DEFINITIONS = FeatureDefinitions(assets=[dream_audience, *chain_assets],
                                 asset_checks=[*dream_checks, *chain_checks],
                                 jobs=[dream_audience_job, dream_batch])
