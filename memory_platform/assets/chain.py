"""The end of the daily chain on Dagster, per audience partition after ``consolidation``:
``user_profiles`` -> ``retention`` -> ``reembedding``, in the same run as the Dream
(``dream_audience_job``; ``dream_batch`` records them per partition too). Profiles and
retention always materialise and say ``nothing_to_do`` when they had nothing to do (a skipped
asset would skip the rest of the chain); re-embedding is skipped without a backlog. Also the
person-erasure job and the re-embedding backlog job. The steps are in
:mod:`memory_platform.orchestration.chain_step`; the assets, their checks and the Dream
batch's part are built from :data:`STEPS` (:mod:`memory_platform.orchestration.chain`).
(No ``from __future__ import annotations``: Dagster reads the Config annotations.)
"""

from dagster import Config, MetadataValue, OpExecutionContext, job, op
from pydantic import Field

from memory_platform.features.maintenance.erasure import erase_user
from memory_platform.features.maintenance.reembedding import convert
from memory_platform.features.maintenance.workspace import sync_workspace
from memory_platform.orchestration.chain import Check, Step, StepContext, StepReport, asset_defs
from memory_platform.orchestration.chain_step import (
    GENERATION_CHECK,
    GENERATION_CHECK_DESCRIPTION,
    PROFILES_CHECK,
    PROFILES_CHECK_DESCRIPTION,
    RETENTION_CHECK,
    RETENTION_CHECK_DESCRIPTION,
    generation_check,
    profiles_check,
    profiles_step,
    reembedding_step,
    retention_check,
    retention_step,
)
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import (
    CONSOLIDATION,
    REEMBED_BACKLOG_JOB,
    REEMBEDDING,
    RETENTION,
    USER_PROFILES,
    WORKSPACE_SYNC_JOB,
)
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

__all__ = ["CHAIN_GROUP", "PROFILES_STEP", "REEMBEDDING_STEP", "RETENTION_STEP", "STEPS",
           "erase_user_job", "generation_check_def", "profiles_check_def",
           "reembed_backlog_job",
           "reembedding", "retention", "retention_check_def", "user_profiles",
           "workspace_sync_job", "DEFINITIONS"]

CHAIN_GROUP = "maintenance"


def _profiles(ctx: StepContext) -> StepReport:
    return StepReport(profiles_step(ctx.conn, ctx.settings, ctx.partition,
                                    dream_id=ctx.dream_id))


class RetentionConfig(Config):
    dry_run: bool = Field(default=False, description="Count what would go; delete nothing.")


def _retention(ctx: StepContext) -> StepReport:
    return StepReport(retention_step(ctx.conn, ctx.settings, ctx.partition,
                                     dry_run=ctx.option("dry_run")))


def _reembedding(ctx: StepContext) -> StepReport | None:
    metadata = reembedding_step(ctx.conn, ctx.settings, ctx.partition)
    return None if metadata is None else StepReport(metadata)


PROFILES_STEP = Step(
    USER_PROFILES, after=(CONSOLIDATION,), run=_profiles, group=CHAIN_GROUP,
    description="Per-user profiles (static facts from the graph, recent context) of the "
    "users the partition's latest Dream concerned, rebuilt (memory_platform.features.maintenance"
    ".profiles).",
    checks=(Check(PROFILES_CHECK, PROFILES_CHECK_DESCRIPTION,
                  lambda ctx: profiles_check(ctx.conn, ctx.partition,
                                             dream_id=ctx.dream_id)),))

RETENTION_STEP = Step(
    RETENTION, after=(USER_PROFILES,), run=_retention, group=CHAIN_GROUP,
    config=RetentionConfig,
    description="Superseded and archived rows past MEMORY_RETENTION_DAYS deleted (never a "
    "row active evidence still references), graph evidence capped; rows deleted per "
    "table (memory_platform.features.maintenance.retention).",
    checks=(Check(RETENTION_CHECK, RETENTION_CHECK_DESCRIPTION,
                  lambda ctx: retention_check(ctx.conn, ctx.partition)),))

REEMBEDDING_STEP = Step(
    REEMBEDDING, after=(RETENTION,), run=_reembedding, group=CHAIN_GROUP,
    skipped="skipped: the active generation has no re-embedding backlog",
    description="A few batches of the instance's re-embedding backlog (chunks, "
    "assertions, graph entities and claims into the active generation); skipped "
    "without a backlog (memory_platform.features.maintenance.reembedding).",
    checks=(Check(GENERATION_CHECK, GENERATION_CHECK_DESCRIPTION,
                  lambda ctx: generation_check(ctx.conn, ctx.partition)),))

STEPS = (PROFILES_STEP, RETENTION_STEP, REEMBEDDING_STEP)

user_profiles, (profiles_check_def,) = asset_defs(PROFILES_STEP)
retention, (retention_check_def,) = asset_defs(RETENTION_STEP)
reembedding, (generation_check_def,) = asset_defs(REEMBEDDING_STEP)


class ErasureConfig(Config):
    instance_key: str = Field(description="The instance to erase the person from.")
    user_id: str = Field(description="The person (user id) to erase.")
    requested_by: str = Field(default="dagster", description="Who asked (kept in the "
                              "report).")


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    description="Erase one person from one instance "
    "(memory_platform.features.maintenance.erasure); the report keeps counts per table, never "
    "content.")
def erase_person(context: OpExecutionContext, config: ErasureConfig,
                 postgres: PostgresResource) -> dict:
    settings = postgres.settings()
    with postgres.connection(settings) as conn:
        report = erase_user(conn, settings, config.instance_key, config.user_id,
                            requested_by=config.requested_by)
    context.add_output_metadata({
        "erasure_id": MetadataValue.text(str(report.id)),
        "total_removed": MetadataValue.int(report.total_removed),
        "removed": MetadataValue.json(report.removed)})
    return report.as_dict()


@job(description="Erase a person (run config ops.erase_person.config: instance_key, "
     "user_id); what `memory-platform users erase` and POST /internal/memory/users/erase do.")
def erase_user_job() -> None:
    erase_person()


class ReembedConfig(Config):
    instance_key: str = Field(description="The instance whose backlog is converted.")
    batches: int = Field(default=20, ge=1, description="Most batches this run converts.")


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    description="Convert a bounded part of an instance's re-embedding backlog.")
def convert_backlog(context: OpExecutionContext, config: ReembedConfig,
                    postgres: PostgresResource, embeddings: EmbeddingsResource) -> dict:
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        result = convert(conn, settings, config.instance_key, batches=config.batches)
    counts = result.metadata()
    context.add_output_metadata({k: MetadataValue.int(int(v)) for k, v in counts.items()})
    return counts


@job(name=REEMBED_BACKLOG_JOB,
     description="Convert re-embedding backlog (launched by reembed_backlog_sensor).")
def reembed_backlog_job() -> None:
    convert_backlog()


@op(pool=WRITER_POOL, tags={"kind": "postgres"},
    description="Sync MEMORY_WORKSPACE_DIR (memory/**/*.md and the bootstrap files) into "
    "workspace memories of MEMORY_INSTANCE_KEY.")
def sync_workspace_files(context: OpExecutionContext, postgres: PostgresResource,
                         embeddings: EmbeddingsResource) -> dict:
    settings = run_settings(postgres, embeddings)
    if settings.workspace_dir is None:
        context.log.info("no workspace configured (MEMORY_WORKSPACE_DIR)")
        return {}
    with postgres.connection(settings) as conn:
        result = sync_workspace(conn, settings, settings.instance_key, settings.workspace_dir)
    context.add_output_metadata({
        name: MetadataValue.int(int(getattr(result, name)))
        for name in ("files", "added", "updated", "unchanged", "deleted")})
    return result.as_dict()


@job(name=WORKSPACE_SYNC_JOB,
     description="Sync the configured workspace's memory files now (launched by "
     "workspace_sync_sensor when a file changed).")
def workspace_sync_job() -> None:
    sync_workspace_files()


DEFINITIONS = FeatureDefinitions(jobs=[erase_user_job, reembed_backlog_job, workspace_sync_job])
