"""The Dream assets of one audience partition: a thin multi-asset over the engine.

``run_dream_partition`` does a partition in one sequence of committed units (lock, inputs,
running row, generation, validation, promotion + safety + wiki + enqueue, outbox), so the
five assets are produced by ONE op calling the engine once; it yields a materialisation per
asset with the metadata that belongs to it. Assets the execution did not reach (a Dream below
the input minimum, a malformed answer, a dry run) are skipped, which also skips their checks
and anything downstream. Graph extraction and consolidation attach downstream of
``assertion_projections`` later.

The asset checks are separate, blocking ops over the SQL in
:mod:`memory_platform.dreaming.checks`: a failure stops every asset downstream of the one
checked (the future graph/consolidation assets) in the same run.
"""

import warnings

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetSelection,
    AssetSpec,
    Config,
    Failure,
    MaterializeResult,
    PreviewWarning,
    RetryRequested,
    asset_check,
    define_asset_job,
    multi_asset,
)
from pydantic import Field

from memory_platform.assets.ledger import DREAM_READS
from memory_platform.assets.partitions import audiences
from memory_platform.dreaming.checks import CHECKS
from memory_platform.dreaming.engine import DreamLocked
from memory_platform.dreaming.partitions import Partition
from memory_platform.dreaming.runs import TRIGGERS
from memory_platform.orchestration.dreams import dream_partition
from memory_platform.orchestration.home import DREAMING_RUN_TAG, WRITER_POOL
from memory_platform.orchestration.report import check_metadata, failure_metadata
from memory_platform.resources import (
    EmbeddingsResource,
    MaintenanceModelResource,
    PostgresResource,
    run_settings,
)

DREAMING_GROUP = "dreaming"
_KINDS = {"python", "postgres"}

DREAM_SPECS = [
    AssetSpec("dream_inputs", deps=list(DREAM_READS), group_name=DREAMING_GROUP, kinds=_KINDS,
              description="The partition's balanced Dream inputs (human summary/flush rows, "
              "approved facts and prior dreams; automation excluded, unowned quarantined)."),
    AssetSpec("dream_proposals", deps=["dream_inputs"], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="The maintenance model's strictly validated proposals (the exact "
              "model is on the dream row before generation)."),
    AssetSpec("dream_assertions", deps=["dream_proposals"], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="Valid proposals promoted into the assertion ledger with verbatim "
              "evidence, decided by the targeted safety pass."),
    AssetSpec("assertion_projections", deps=["dream_assertions"], group_name=DREAMING_GROUP,
              kinds=_KINDS, skippable=True,
              description="Recall projections, chunks and embeddings of the activated "
              "assertions (through the idempotent outbox)."),
    AssetSpec("wiki_proposals", deps=["assertion_projections", "dream_assertions"],
              group_name=DREAMING_GROUP, kinds=_KINDS, skippable=True,
              description="Draft Wiki change proposals with exact assertion/evidence refs; "
              "never published by a Dream."),
]


class DreamConfig(Config):
    """Run config of a Dream (``ops: {dream_audience: {config: ...}}``)."""

    model: str | None = Field(
        default=None, description="Exact model for this run (an explicit choice: it beats "
        "the persisted memory_dreaming_model setting). Unset: the resolution order.")
    dry_run: bool = Field(default=False, description="Write proposals and diagnostics to "
                          "the dream row only.")
    trigger: str = Field(default="manual", description=f"One of {', '.join(TRIGGERS)} "
                         "(a run of a Dagster backfill is recorded as 'backfill').")


def trigger_of(context_tags: dict[str, str], configured: str) -> str:
    if configured not in TRIGGERS:
        raise Failure(f"trigger must be one of {TRIGGERS}, not {configured!r}")
    return "backfill" if "dagster/backfill" in context_tags else configured


@multi_asset(name="dream_audience", specs=DREAM_SPECS, partitions_def=audiences,
             can_subset=False, pool=WRITER_POOL,
             description="Dream one audience partition (memory_platform.dreaming.engine).")
def dream_audience(context: AssetExecutionContext, config: DreamConfig,
                   postgres: PostgresResource, embeddings: EmbeddingsResource,
                   maintenance_model: MaintenanceModelResource):
    settings = run_settings(postgres, embeddings, maintenance_model)
    trigger = trigger_of(dict(context.run.tags), config.trigger)
    with postgres.connection(settings) as conn:
        try:
            outcome = dream_partition(
                conn, settings, context.partition_key, model=config.model,
                dry_run=config.dry_run, trigger=trigger, run_id=context.run.run_id,
                on_wait=lambda s: context.log.info(f"Dreaming lock held; retrying in {s:.0f}s"))
        except DreamLocked as exc:
            # Nothing was written while the lock was refused: a retry is safe.
            raise RetryRequested(max_retries=3, seconds_to_wait=60) from exc
    result = outcome.result
    context.log.info(f"dream {result.dream_id} {result.partition.partition_key}: "
                     f"{result.status} with model {result.model or '-'} in {outcome.seconds:.2f}s")
    if outcome.failed:
        raise Failure(description=f"Dream {result.dream_id} failed "
                      f"({', '.join(d['code'] for d in result.diagnostics) or 'error'}); "
                      "the dream row holds the diagnostics",
                      metadata=failure_metadata(result))
    for asset in outcome.assets:
        yield MaterializeResult(asset_key=asset, metadata=outcome.metadata[asset])


def _dream_check(name: str, asset: str, doc: str):
    with warnings.catch_warnings():  # partitioned asset checks are a preview in 1.13
        warnings.simplefilter("ignore", PreviewWarning)

        @asset_check(asset=asset, name=name, blocking=True, partitions_def=audiences,
                     description=doc)
        def _check(context, postgres: PostgresResource) -> AssetCheckResult:
            check = CHECKS[name][1]
            with postgres.connection() as conn:
                outcome = check(conn, Partition.from_partition_key(context.partition_key))
            return AssetCheckResult(passed=outcome.passed, severity=AssetCheckSeverity.ERROR,
                                    description=outcome.description,
                                    metadata=check_metadata(outcome))
    return _check


dream_checks = [
    _dream_check("active_assertions_cite_verbatim_evidence", "dream_assertions",
                 "Every active assertion of the partition cites an excerpt that occurs "
                 "verbatim in a source of the same audience (invariant 3)."),
    _dream_check("evidence_stays_in_audience", "dream_assertions",
                 "No evidence or projection links the partition to another audience or "
                 "instance (invariant 1)."),
    _dream_check("no_projection_of_inactive_assertion", "assertion_projections",
                 "No active recall projection of an assertion that is not active and "
                 "approved."),
]

dream_audience_job = define_asset_job(
    "dream_audience_job", selection=AssetSelection.assets(dream_audience),
    tags={DREAMING_RUN_TAG: "true"},
    description="Dream one audience partition (the five Dream assets and their checks).")
