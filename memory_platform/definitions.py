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

from memory_platform.foundation.features import modules
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.resources import default_resources


def build_definitions(resources: dict[str, Any] | None = None,
                      settings: Settings | None = None) -> Definitions:
    """The code location for ``settings`` (default: the process's): every feature's
    ``assets/<feature>.py`` DEFINITIONS and ``sensors/<feature>.py`` automations, in the
    order of ``memory_platform.foundation.features.FEATURES``; ``resources`` replaces the
    settings-derived
    defaults (tests)."""
    settings = settings or get_settings()
    declared = [module.DEFINITIONS
                for module in modules("memory_platform.assets")
                if hasattr(module, "DEFINITIONS")]  # else only chain STEPS (assets.dreaming)
    automated = [module.automations(settings)
                 for module in modules("memory_platform.sensors")]
    return Definitions(
        assets=[a for feature in declared for a in feature.assets],
        asset_checks=[c for feature in declared for c in feature.asset_checks],
        jobs=[j for feature in declared for j in feature.jobs],
        sensors=[s for feature in automated for s in feature.sensors],
        schedules=[s for feature in automated for s in feature.schedules],
        resources=resources if resources is not None else default_resources(),
    )


@definitions
def defs() -> Definitions:
    """The entry Dagster loads (``workspace.yaml``)."""
    return build_definitions()
