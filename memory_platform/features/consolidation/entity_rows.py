"""The active entities of one consolidation partition, as the merge passes see them, and the
two rules about a pair: which pairs may never merge (:func:`refusal_reason`) and which one
survives (:func:`survivor_of`). See :mod:`.entities` for the passes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from memory_platform.features.consolidation.types import Partition
from memory_platform.features.graph.store import normalized_label


@dataclass
class EntityRow:
    """What the candidate passes know of an active entity."""

    id: UUID
    instance_key: str
    visibility_scope: str
    audience_key: str
    entity_type: str
    label: str
    aliases: list[str]
    linked_record_type: str | None
    linked_record_id: str | None
    created_at: datetime
    evidence: int
    active: bool = True

    def names(self) -> set[str]:
        return {normalized_label(n) for n in (self.label, *self.aliases) if n.strip()}

    def link(self) -> tuple[str, str] | None:
        if self.linked_record_id is None:
            return None
        return (self.linked_record_type or "", self.linked_record_id)


_ENTITIES = """
    SELECT e.id, e.instance_key, e.visibility_scope, e.audience_key, e.entity_type, e.label,
           e.aliases, e.linked_record_type, e.linked_record_id, e.created_at,
           (SELECT count(*) FROM agent_knowledge_evidence v
             WHERE v.instance_key = e.instance_key AND v.entity_id = e.id)
      FROM agent_knowledge_entities e
     WHERE e.instance_key = %s AND e.visibility_scope = %s AND e.audience_key = %s
       AND e.status = 'active'
     ORDER BY e.created_at, e.id
"""


def load_entities(conn: psycopg.Connection, partition: Partition) -> dict[UUID, EntityRow]:
    """The partition's active entities, oldest first."""
    rows = conn.execute(_ENTITIES, (partition.instance_key, partition.audience_kind,
                                    partition.audience_key)).fetchall()
    return {row[0]: EntityRow(*row[:6], list(row[6]), *row[7:]) for row in rows}


def refusal_reason(left: EntityRow, right: EntityRow) -> str | None:
    """Why two entities may never be merged, or None. Candidates come from one partition and
    type already; this is the rule itself, checked again before every merge."""
    if left.id == right.id:
        return "the same entity"
    if left.instance_key != right.instance_key:
        return "cross-instance pair"
    if (left.visibility_scope, left.audience_key) != (right.visibility_scope,
                                                      right.audience_key):
        return "cross-visibility pair (another audience partition)"
    if left.entity_type != right.entity_type:
        return "cross-type pair"
    a, b = left.link(), right.link()
    if a is not None and b is not None and a != b:
        return f"conflicting linked records ({a[0]}:{a[1]} vs {b[0]}:{b[1]})"
    return None


def survivor_of(left: EntityRow, right: EntityRow) -> tuple[EntityRow, EntityRow]:
    """(survivor, loser): more evidence rows, then older, then the smaller id."""
    ranked = sorted((left, right), key=lambda e: (-e.evidence, e.created_at, str(e.id)))
    return ranked[0], ranked[1]


def next_name_pair(entities: dict[UUID, EntityRow],
                    decided: set[frozenset[UUID]]) -> tuple[EntityRow, EntityRow] | None:
    """The first undecided pair of active same-type entities sharing a name (in the order
    the entities were created)."""
    seen: dict[tuple[str, str], list[EntityRow]] = {}
    for entity in entities.values():
        if not entity.active:
            continue
        for name in sorted(entity.names()):
            for earlier in seen.get((entity.entity_type, name), []):
                if frozenset((earlier.id, entity.id)) not in decided:
                    return earlier, entity
            seen.setdefault((entity.entity_type, name), []).append(entity)
    return None

