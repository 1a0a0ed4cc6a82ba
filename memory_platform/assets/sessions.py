"""Session maintenance on Dagster: the session assets, the context tables they read, and
``session_maintenance_job`` (launched by ``session_maintenance_sensor``).

A pass over one session is shared facts, then the flush, then compaction, under the
session's lock (:mod:`memory_platform.features.sessions.maintenance`); a run takes the due sessions
(oldest request first, at most ``session_maintenance_max_sessions``). The three assets stand
for what the operations write across all sessions (they are not partitioned: the sessions
of a run are scattered over instances and audiences, and the queue, not a partition, says
what is due):

* ``shared_facts``      facts of completed runs  -> ``source_type='fact'`` memories;
* ``flush_memories``    durable facts of recent turns -> ``source_type='flush'`` memories;
* ``session_summaries`` older turns -> leaf/condensed summaries (+ ``summary`` memories).

The flush and summary rows are Dream input, and so are approved facts: all three are drawn
upstream of ``dream_inputs``. The context tables they read are external assets upstream of
them; the tables only they write are drawn downstream. Each run yields a materialisation
per asset whose operation ran, with numeric metadata (the UI plots it per run).

(No ``from __future__ import annotations``: Dagster reads the ``Config`` annotations.)
"""

from dataclasses import dataclass
from typing import Any

import psycopg
from dagster import (
    AssetMaterialization,
    AssetSpec,
    Config,
    Failure,
    MetadataValue,
    OpExecutionContext,
    Output,
    job,
    op,
)
from pydantic import Field

from memory_platform.features.sessions.maintenance import MaintenanceBatch, run_due_sessions
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.feature_definitions import FeatureDefinitions
from memory_platform.orchestration.home import WRITER_POOL
from memory_platform.orchestration.keys import FLUSH_MEMORIES, SESSION_SUMMARIES, SHARED_FACTS
from memory_platform.orchestration.metadata import (
    error_class,
    md_table,
    session_label,
    session_line,
    session_metadata,
)
from memory_platform.resources import (
    EmbeddingsResource,
    MaintenanceModelResource,
    PostgresResource,
    run_settings,
)

__all__ = ["SESSION_MAINTENANCE_JOB", "SESSION_MAINTENANCE_OP", "SessionMaintenanceConfig",
           "session_assets", "session_maintenance_job", "session_maintenance_step", "DEFINITIONS"]

SESSIONS_GROUP = "sessions"
SESSION_CONTEXT_GROUP = "session_context"
SESSION_MAINTENANCE_JOB = "session_maintenance_job"
SESSION_MAINTENANCE_OP = "maintain_due_sessions"
_KINDS = {"python", "postgres"}

# The context tables: table -> (description, the session assets that write it, drawn as its
# upstream). A table an operation reads is drawn upstream of that asset instead (a table
# both read and written would be a cycle); each materialisation names what it writes.
_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "agent_session_runs": ("Runs (turns) of a session and the conversation context each was "
                           "said in; shared-fact state per completed run.", ()),
    "agent_context_messages": ("Raw session items, verbatim (the lossless context graph).",
                               ()),
    "agent_context_items": ("The ordered context assembly of a session (raw items and "
                            "summaries).", ()),
    "agent_context_summaries": ("Leaf and condensed summaries over contiguous item ranges.",
                                ()),
    "agent_session_state": ("Per-session maintenance state (memoryFlush, compaction) and the "
                            "maintenance queue.", ()),
    "agent_context_summary_messages": ("Links from a leaf summary to the raw items it "
                                       "covers.", (SESSION_SUMMARIES,)),
    "agent_context_summary_parents": ("Links from a condensed summary to the summaries "
                                      "below it.", (SESSION_SUMMARIES,)),
    "agent_session_maintenance_events": ("One row per maintenance operation of a session: "
                                         "the audit trail and the /metrics source.",
                                         (SHARED_FACTS, FLUSH_MEMORIES, SESSION_SUMMARIES)),
}

session_context_tables = [
    AssetSpec(key=table, description=text, group_name=SESSION_CONTEXT_GROUP,
              kinds={"postgres"}, deps=list(writers))
    for table, (text, writers) in _TABLES.items()
]

session_assets = [
    AssetSpec(SHARED_FACTS, group_name=SESSIONS_GROUP, kinds=_KINDS,
              deps=["agent_session_runs", "agent_context_messages"],
              description="Durable facts of completed runs as source_type='fact' memories "
              "(canonical assertions) in the audience the run was said in."),
    AssetSpec(FLUSH_MEMORIES, group_name=SESSIONS_GROUP, kinds=_KINDS,
              deps=["agent_session_runs", "agent_context_messages", "agent_session_state"],
              description="Durable facts of recent turns flushed before compaction, as "
              "source_type='flush' memories (Dream input)."),
    AssetSpec(SESSION_SUMMARIES, group_name=SESSIONS_GROUP, kinds=_KINDS,
              deps=["agent_session_runs", "agent_context_messages", "agent_context_items",
                    "agent_context_summaries", "agent_session_state", FLUSH_MEMORIES],
              description="Older turns compacted into leaf and condensed summaries "
              "(checkpointed per chunk), each also a source_type='summary' memory (Dream "
              "input); runs after the flush."),
]


class SessionMaintenanceConfig(Config):
    """Run config of ``session_maintenance_job`` (``ops: {maintain_due_sessions: ...}``)."""

    limit: int | None = Field(default=None, ge=1, le=1000, description="Most sessions this "
                              "run handles (unset: session_maintenance_max_sessions).")
    instance_key: str | None = Field(default=None, min_length=1, description="Only sessions "
                                     "of this instance (unset: every instance).")


@dataclass
class SessionStep:
    batch: MaintenanceBatch
    metadata: dict[str, dict[str, MetadataValue]]

    @property
    def problem(self) -> str | None:
        raised = self.batch.raised()
        return f"{len(raised)} error(s) escaped a session pass" if raised else None

    def failure_metadata(self) -> dict[str, MetadataValue]:
        return {"errors": MetadataValue.md(md_table(
            ["session", "error"],
            [[session_label(p.instance_key, p.session_key), error_class(text)]
             for p, text in self.batch.raised()]))}


def session_maintenance_step(conn: psycopg.Connection, settings: Settings, *,
                             limit: int | None = None, instance_key: str | None = None,
                             log: Any = None) -> SessionStep:
    """One run's work: the due sessions, then the metadata of each asset that ran."""

    def progress(number: int, total: int, session_pass) -> None:
        if log is not None:
            log.info(f"[{number}/{total}] {session_line(session_pass)}")

    batch = run_due_sessions(conn, settings, limit=limit, instance_key=instance_key,
                             progress=progress)
    return SessionStep(batch, session_metadata(batch))


@op(name=SESSION_MAINTENANCE_OP, pool=WRITER_POOL, tags={"kind": "postgres"},
    description="A maintenance pass over each due session (shared facts, flush, compaction; "
    "at most session_maintenance_max_sessions, oldest request first).")
def maintain_due_sessions(context: OpExecutionContext, config: SessionMaintenanceConfig,
                          postgres: PostgresResource, embeddings: EmbeddingsResource,
                          maintenance_model: MaintenanceModelResource):
    settings = run_settings(postgres, embeddings, maintenance_model)
    with postgres.connection(settings) as conn:
        step = session_maintenance_step(conn, settings, limit=config.limit,
                                        instance_key=config.instance_key, log=context.log)
    batch = step.batch
    context.log.info(batch.summary() if batch.passes else "no session due")
    for asset, metadata in step.metadata.items():
        yield AssetMaterialization(asset_key=asset, metadata=metadata)
    if batch.sessions_failed:
        context.log.warning(f"{batch.sessions_failed} session(s) had a failed operation; "
                            "each is due again after its backoff")
    yield Output({"sessions": len(batch.passes), "done": batch.sessions_done,
                  "failed": batch.sessions_failed, "busy": batch.sessions_busy})
    if step.problem:
        raise Failure(description=f"{step.problem}; the other sessions were maintained",
                      metadata=step.failure_metadata())


@job(name=SESSION_MAINTENANCE_JOB,
     description="Session maintenance: the due sessions' passes (launched by "
     "session_maintenance_sensor; run config ops.maintain_due_sessions.config.limit / "
     "instance_key).")
def session_maintenance_job() -> None:
    maintain_due_sessions()


DEFINITIONS = FeatureDefinitions(assets=[*session_context_tables, *session_assets],
                                 jobs=[session_maintenance_job])
