"""Op jobs: ``dream_batch`` (many audience partitions in one run) and ``outbox_job``.

Why a batch job: a Dagster run process costs seconds of start-up (process, imports, code
location, resource set-up, event writes) while an extractive Dream costs a fraction of a
second, so one run per partition would spend most of the day starting processes. The batch
runs partitions one after another in one process and one connection pool and still records,
per partition, one dream row, one materialisation of every Dream asset it reached (with the
same metadata as the per-partition asset) and the same three invariant checks. A partition
that fails does not stop the others; the run fails at the end, naming them.
"""

from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    Backoff,
    Config,
    Failure,
    MetadataValue,
    OpExecutionContext,
    Output,
    RetryPolicy,
    job,
    op,
)
from pydantic import Field

from memory_platform.assets.partitions import AUDIENCES
from memory_platform.dreaming.partitions import Partition
from memory_platform.dreaming.runs import TRIGGERS
from memory_platform.orchestration.dreams import dream_partition, partition_checks
from memory_platform.orchestration.home import DREAMING_RUN_TAG, WRITER_POOL
from memory_platform.orchestration.report import check_metadata, dream_summary, md_table
from memory_platform.projection.outbox import OutboxResult, process_outbox
from memory_platform.resources import (
    EmbeddingsResource,
    MaintenanceModelResource,
    PostgresResource,
    run_settings,
)

__all__ = ["DreamBatchConfig", "batch_run_config", "dream_batch", "outbox_job"]

BATCH_OP = "dream_partitions"


class DreamBatchConfig(Config):
    partition_keys: list[str] = Field(description="Audience partition keys "
                                      "(instance/kind/key), dreamed in this order.")
    model: str | None = Field(default=None, description="Exact model (explicit choice).")
    dry_run: bool = False
    trigger: str = Field(default="manual", description=f"One of {', '.join(TRIGGERS)}.")
    dream_date: str | None = Field(default=None, description="The day a scheduled batch "
                                   "belongs to (the date is run config, not a partition).")


def batch_run_config(partition_keys: list[str], *, model: str | None = None,
                     dry_run: bool = False, trigger: str = "manual",
                     dream_date: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"partition_keys": list(partition_keys), "dry_run": dry_run,
                              "trigger": trigger}
    if model:
        config["model"] = model
    if dream_date:
        config["dream_date"] = dream_date
    return {"ops": {BATCH_OP: {"config": config}}}


def _ensure_partitions(context: OpExecutionContext, keys: list[str]) -> None:
    missing = [k for k in keys if not context.instance.has_dynamic_partition(AUDIENCES, k)]
    if missing:
        context.instance.add_dynamic_partitions(AUDIENCES, missing)


@op(name=BATCH_OP, pool=WRITER_POOL, tags={"kind": "postgres"},
    description="Dream each configured audience partition in turn (one dream row, one set "
    "of Dream-asset materialisations and checks per partition).")
def dream_partitions(context: OpExecutionContext, config: DreamBatchConfig,
                     postgres: PostgresResource, embeddings: EmbeddingsResource,
                     maintenance_model: MaintenanceModelResource):
    if config.trigger not in TRIGGERS:
        raise Failure(f"trigger must be one of {TRIGGERS}, not {config.trigger!r}")
    keys = list(dict.fromkeys(config.partition_keys))
    try:
        for key in keys:
            Partition.from_partition_key(key)
    except ValueError as exc:
        raise Failure(f"bad partition key: {exc}") from exc
    _ensure_partitions(context, keys)
    settings = run_settings(postgres, embeddings, maintenance_model)
    summaries: list[dict[str, Any]] = []
    failures: list[list[str]] = []
    with postgres.connection(settings) as conn:
        for number, key in enumerate(keys, 1):
            try:
                outcome = dream_partition(
                    conn, settings, key, model=config.model, dry_run=config.dry_run,
                    trigger=config.trigger, run_id=context.run.run_id,
                    on_wait=lambda s, key=key: context.log.info(
                        f"{key}: Dreaming lock held; retrying in {s:.0f}s"))
            except Exception as exc:  # recorded; the batch goes on
                context.log.error(f"[{number}/{len(keys)}] {key}: {type(exc).__name__}: {exc}")
                failures.append([key, "-", f"{type(exc).__name__}: {exc}"])
                continue
            result = outcome.result
            for asset in outcome.assets:   # yielded: stored at once, whatever comes later
                yield AssetMaterialization(asset_key=asset, partition=key,
                                           metadata=outcome.metadata[asset])
            try:
                checks = partition_checks(conn, key, set(outcome.assets))
            except Exception as exc:  # a check that cannot run is a problem, not a pass
                checks = []
                failures.append([key, str(result.dream_id),
                                 f"checks did not run: {type(exc).__name__}: {exc}"])
            for asset, check in checks:
                context.log_event(AssetCheckEvaluation(
                    asset_key=AssetKey(asset), check_name=check.name, passed=check.passed,
                    metadata=check_metadata(check), severity=AssetCheckSeverity.ERROR,
                    description=check.description, blocking=True, partition=key))
                if not check.passed:
                    failures.append([key, str(result.dream_id),
                                     f"check {check.name} failed: {check.description}"])
            if outcome.failed:
                codes = ", ".join(d["code"] for d in result.diagnostics) or "error"
                failures.append([key, str(result.dream_id), f"dream failed ({codes})"])
            summary = dream_summary(result)
            summaries.append(summary)
            context.log.info(
                f"[{number}/{len(keys)}] {key}: {result.status} dream {result.dream_id} "
                f"model={result.model} inputs={summary['inputs']} "
                f"accepted={summary['accepted']} rejected={summary['rejected']} "
                f"in {outcome.seconds:.2f}s")
    # The output flushes the logged check evaluations before a failure ends the step.
    yield Output(summaries)
    if failures:
        raise Failure(
            description=f"{len(failures)} problem(s) in {len(keys)} partition(s); the other "
            "partitions were dreamed",
            metadata={"failures": MetadataValue.md(md_table(
                ["partition", "dream id", "problem"], failures)),
                "dreamed": MetadataValue.int(len(summaries))})


@job(tags={DREAMING_RUN_TAG: "true"},
     description="Dream a list of audience partitions in one run (run config "
     "ops.dream_partitions.config.partition_keys); the schedule and sensors launch this.")
def dream_batch() -> None:
    dream_partitions()


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    retry_policy=RetryPolicy(max_retries=3, delay=10, backoff=Backoff.EXPONENTIAL),
    description="Work off due projection jobs (idempotent: a retry repeats nothing).")
def process_projection_outbox(context: OpExecutionContext, postgres: PostgresResource,
                              embeddings: EmbeddingsResource) -> dict[str, int]:
    settings = run_settings(postgres, embeddings)
    total = OutboxResult()
    with postgres.connection(settings) as conn:
        for _ in range(20):  # bounded: the sensor launches another run for the rest
            result = process_outbox(conn, settings, limit=100)
            total.claimed += result.claimed
            total.done += result.done
            total.failed += result.failed
            total.outcomes += result.outcomes
            if result.claimed < 100:
                break
    summary = total.summary()
    context.log_event(AssetObservation(
        asset_key="agent_memory_ingestion_outbox",
        metadata={k: MetadataValue.int(v) for k, v in summary.items()}))
    context.log.info(f"outbox: {summary}")
    return summary


@job(description="The projection outbox worker (launched by outbox_sensor when work is due).")
def outbox_job() -> None:
    process_projection_outbox()
