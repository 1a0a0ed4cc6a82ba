"""The Dagster code location of the platform (``workspace.yaml`` points here).

Asset graph (group ``memory_ledger`` = external tables, group ``dreaming`` = per audience
partition)::

    agent_memories, agent_memory_sources,            (read by input selection)
    agent_memory_assertions, ..._evidence
        -> dream_inputs -> dream_proposals -> dream_assertions -> assertion_projections
                               |                   |                  |      -> wiki_proposals
                               v                   v                  v              v
                      agent_memory_dreams   ..._reviews, ..._outbox  ..._chunks,  wiki_change_
                                                                     ..._embeddings, proposals
                                                                     ..._relations
                                                                          |
                                                      knowledge_graph  <--+  (group knowledge_graph)
                                                             |
                                                             v
                                  agent_knowledge_entities, _claims, _edges, _evidence

``dream_audience_job`` runs the Dream multi-asset, then ``knowledge_graph`` and
``consolidation`` (own ops, group ``knowledge_graph`` / ``consolidation``) with the blocking
checks of each, then ``user_profiles`` -> ``retention`` -> ``reembedding`` (group
``maintenance``); ``dream_batch`` does the same per partition in one run and sweeps quiet
partitions once at its end (``consolidation_sweep``, also its own job).

Session maintenance (group ``sessions``; the context tables in group ``session_context``)::

    agent_session_runs, agent_context_messages, ...      (read by the passes)
        -> shared_facts, flush_memories -> session_summaries     -> dream_inputs
                              |                   |
                              v                   v
                agent_session_maintenance_events, agent_context_summary_messages/_parents

``session_maintenance_job`` materialises them, launched by ``session_maintenance_sensor``.

Nothing is built at import: Dagster calls :func:`defs` (a lazy ``@definitions`` entry) when
it loads the code location, and the settings (cron, sensor intervals, resources) are read
then.
"""

from __future__ import annotations

from typing import Any

from dagster import Definitions, definitions

from memory_platform.assets.chain import erase_user_job, reembed_backlog_job, workspace_sync_job
from memory_platform.assets.consolidation import consolidation_sweep, consolidation_sweep_job
from memory_platform.assets.dreaming import (
    chain_assets,
    chain_checks,
    dream_audience,
    dream_audience_job,
    dream_batch,
    dream_checks,
)
from memory_platform.assets.ledger import ledger_tables
from memory_platform.assets.maintenance import outbox_job
from memory_platform.assets.rollback import rollback_dream_job
from memory_platform.assets.sessions import (
    session_assets,
    session_context_tables,
    session_maintenance_job,
)
from memory_platform.resources import default_resources
from memory_platform.sensors.dreaming import (
    audience_partitions_sensor,
    build_daily_dreaming_schedule,
)
from memory_platform.sensors.maintenance import (
    build_outbox_sensor,
    build_stale_dream_reconciler,
    reembed_backlog_sensor,
    workspace_sync_sensor,
)
from memory_platform.sensors.sessions import build_session_maintenance_sensor
from memory_platform.settings import Settings, get_settings


def build_definitions(resources: dict[str, Any] | None = None,
                      settings: Settings | None = None) -> Definitions:
    """The code location for ``settings`` (default: the process's); ``resources`` replaces
    the settings-derived defaults (tests)."""
    settings = settings or get_settings()
    return Definitions(
        assets=[*ledger_tables, *session_context_tables, *session_assets, dream_audience,
                *chain_assets, consolidation_sweep],
        asset_checks=[*dream_checks, *chain_checks],
        jobs=[dream_audience_job, dream_batch, outbox_job, session_maintenance_job,
              consolidation_sweep_job, erase_user_job, reembed_backlog_job,
              workspace_sync_job, rollback_dream_job],
        sensors=[audience_partitions_sensor, build_outbox_sensor(settings),
                 reembed_backlog_sensor, workspace_sync_sensor,
                 build_stale_dream_reconciler(settings),
                 build_session_maintenance_sensor(settings)],
        schedules=[build_daily_dreaming_schedule(settings)],
        resources=resources if resources is not None else default_resources(),
    )


@definitions
def defs() -> Definitions:
    """The entry Dagster loads (``workspace.yaml``)."""
    return build_definitions()
