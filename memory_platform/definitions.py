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

Graph extraction and consolidation will hang below ``assertion_projections``.
"""

from __future__ import annotations

from typing import Any

from dagster import Definitions

from memory_platform.assets.dreaming import dream_audience, dream_audience_job, dream_checks
from memory_platform.assets.ledger import ledger_tables
from memory_platform.orchestration.jobs import dream_batch, outbox_job
from memory_platform.resources import default_resources
from memory_platform.sensors.dreaming import audience_partitions_sensor, daily_dreaming_schedule
from memory_platform.sensors.maintenance import outbox_sensor, stale_dream_reconciler


def build_definitions(resources: dict[str, Any] | None = None) -> Definitions:
    """The code location; ``resources`` replaces the settings-derived defaults (tests)."""
    return Definitions(
        assets=[*ledger_tables, dream_audience],
        asset_checks=dream_checks,
        jobs=[dream_audience_job, dream_batch, outbox_job],
        sensors=[audience_partitions_sensor, outbox_sensor, stale_dream_reconciler],
        schedules=[daily_dreaming_schedule],
        resources=resources if resources is not None else default_resources(),
    )


defs = build_definitions()
