"""Rolling a Dream back from the Dagster UI: ``rollback_dream_job``, launched with the dream id
as run config, calls :func:`memory_platform.features.dreaming.rollback.rollback_dream` and reports

* on the run (the op's output metadata): rows reverted, rows kept because a person decided
  them, evidence removed, wiki proposals rejected;
* on the Dream's partition: an *observation* of each Dream asset whose rows it reverted, with
  ``status: rolled_back`` and the description "Dream ... rolled back". An observation, not a
  materialisation: a rollback produces no new version of the asset, so it never shows as a
  green "Materialized" event, never becomes the partition's latest materialisation (a newer
  Dream that stands stays the latest), and never triggers the assets downstream.

A rollback launched from the CLI or the API is reported the same way with
:func:`rollback_observations` (``launch.show_rollback_in_dagster``). (No ``from __future__
import annotations``: Dagster reads the ``Config`` annotations at definition time.)
"""

import uuid
from typing import Any

from dagster import (
    AssetObservation,
    Config,
    Failure,
    MetadataValue,
    OpExecutionContext,
    Output,
    job,
    op,
)
from pydantic import Field

from memory_platform.features.dreaming.rollback import RollbackResult, rollback_dream
from memory_platform.foundation.errors import Conflict, DreamLocked, NotFound
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.keys import (
    ASSERTION_PROJECTIONS,
    DREAM_ASSERTIONS,
    DREAM_INPUTS,
    DREAM_PROPOSALS,
    WIKI_PROPOSALS,
)
from memory_platform.orchestration.metadata import md_table
from memory_platform.resources import EmbeddingsResource, PostgresResource, run_settings

ROLLBACK_JOB = "rollback_dream_job"
ROLLBACK_OP = "rollback_dream"

# The Dream assets a rollback changes (inputs and proposals stay what they were; the
# partition shows the rollback on the assets whose rows it reverted).
ROLLED_BACK_ASSETS = (DREAM_ASSERTIONS, ASSERTION_PROJECTIONS, WIKI_PROPOSALS)
_ALL_DREAM_ASSETS = (DREAM_INPUTS, DREAM_PROPOSALS, *ROLLED_BACK_ASSETS)


class RollbackConfig(Config):
    """Run config of ``rollback_dream_job`` (``ops: {rollback_dream: {config: ...}}``)."""

    dream_id: str = Field(description="The id of the Dream to roll back "
                          "(`memory-platform dream list` shows it).")


def rollback_metadata(result: RollbackResult, partition_key: str | None,
                      instance_key: str | None) -> dict[str, MetadataValue]:
    kept = [p for p in result.protected if p.get("reason") == "human_review"]
    return {
        "dream_id": MetadataValue.text(str(result.dream_id)),
        "status": MetadataValue.text("rolled_back"),
        "rollback_result": MetadataValue.text(result.status),
        "partition": MetadataValue.text(partition_key or "-"),
        "instance": MetadataValue.text(instance_key or "-"),
        "rows_reverted": MetadataValue.int(len(result.tombstoned) + len(result.restored)),
        "tombstoned": MetadataValue.int(len(result.tombstoned)),
        "restored": MetadataValue.int(len(result.restored)),
        "rows_kept_person_decided": MetadataValue.int(len(kept)),
        "protected": MetadataValue.int(len(result.protected)),
        "evidence_removed": MetadataValue.int(result.evidence_removed),
        "wiki_proposals_rejected": MetadataValue.int(len(result.proposals_rejected)),
        "projection_jobs": MetadataValue.int(result.projection_jobs),
        "protected_items": MetadataValue.md(md_table(
            ["kind", "id", "reason"], [[p.get("kind"), p.get("id"), p.get("reason")]
                                       for p in result.protected],
            empty="_nothing protected_")),
    }


def rollback_observations(result: RollbackResult, partition_key: str,
                          metadata: dict[str, Any]) -> list[AssetObservation]:
    """One observation per Dream asset a rollback reverts, on the Dream's partition (see the
    module docstring: never a materialisation)."""
    return [AssetObservation(asset_key=asset, partition=partition_key, metadata=metadata,
                             description=f"Dream {result.dream_id} rolled back")
            for asset in ROLLED_BACK_ASSETS]


def _dream_partition(conn, dream_id: uuid.UUID) -> tuple[str | None, str | None]:
    row = conn.execute("SELECT partition_key, instance_key FROM agent_memory_dreams"
                       " WHERE id = %s", (dream_id,)).fetchone()
    return (row[0], row[1]) if row else (None, None)


@op(name=ROLLBACK_OP, description="Roll one Dream back (rollback_dream): its assertions no "
    "person decided are tombstoned or put back, its draft wiki proposals rejected; "
    "human-reviewed rows are kept and reported.")
def rollback_dream_op(context: OpExecutionContext, config: RollbackConfig,
                      postgres: PostgresResource, embeddings: EmbeddingsResource):
    try:
        dream_id = uuid.UUID(config.dream_id)
    except ValueError as exc:
        raise Failure(description=f"not a dream id: {config.dream_id!r}") from exc
    settings = run_settings(postgres, embeddings)
    with postgres.connection(settings) as conn:
        partition_key, instance_key = _dream_partition(conn, dream_id)
        try:
            result = rollback_dream(conn, dream_id, settings=settings)
        except (NotFound, Conflict) as exc:
            raise Failure(description=exc.message) from exc
        except DreamLocked as exc:
            raise Failure(description=f"{exc}; launch again when the running Dream ends",
                          allow_retries=True) from exc
    metadata = rollback_metadata(result, partition_key, instance_key)
    context.log.info(f"dream {dream_id}: {result.status}, "
                     f"{len(result.tombstoned) + len(result.restored)} row(s) reverted, "
                     f"{len(result.protected)} protected")
    if partition_key and result.status == "rolled_back":
        yield from rollback_observations(result, partition_key, metadata)
    yield Output(result.as_json(), metadata=metadata)


@job(name=ROLLBACK_JOB, description="Roll a Dream back: give its id as run config "
     "(ops: rollback_dream: config: dream_id). Runs beside Dreaming under the Dreaming lock.",
     tags={"memory_platform/kind": "dream_rollback"})
def rollback_dream_job():
    rollback_dream_op()


DEFINITIONS = FeatureDefinitions(jobs=[rollback_dream_job])
