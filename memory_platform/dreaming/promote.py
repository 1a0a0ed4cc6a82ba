"""Ingest validated Dream assertions into the canonical ledger.

Each cited memory gets its source envelope (the memory's own when it was written with one,
else an envelope keyed ``memory:<id>`` holding the memory's exact content, so the verbatim
excerpt check holds); each assertion is created, or reused when its identity already exists
in the partition's audience, with origin ``dream`` and the dream id; evidence rows carry the
dream id. Cited sources and memory rows are never rewritten. Each item runs in its own
savepoint: a row the database refuses rejects that item only (``ledger_rejected``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from uuid import UUID

import psycopg

from memory_platform.dreaming.inputs import HUMAN_TRUST, DreamInput
from memory_platform.dreaming.partitions import Partition
from memory_platform.dreaming.validate import AcceptedAssertion, Rejection
from memory_platform.ledger import assertions as ledger
from memory_platform.ledger.sources import ensure_source

log = logging.getLogger(__name__)

LEDGER_REJECTED = "ledger_rejected"
_TRUST_PRIORITY = (*HUMAN_TRUST, "imported", "assistant_inference", "dream_derived",
                   "automation", "system")


@dataclass(frozen=True)
class Promoted:
    item: AcceptedAssertion
    assertion_id: UUID
    created: bool
    status: str
    review_state: str
    source_ids: dict[str, UUID]          # memory id -> source envelope id


@dataclass
class Promotion:
    promoted: list[Promoted] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def created(self) -> int:
        return sum(1 for p in self.promoted if p.created)

    @property
    def reused(self) -> int:
        return sum(1 for p in self.promoted if not p.created)


def _projection_trust(conn, instance_key: str, row: DreamInput) -> str:
    """The trust class of a source-less row: a Dream projection is dream-derived; a fact
    projection inherits the best trust class of its assertion's evidence."""
    if row.source_type == "dream":
        return "dream_derived"
    if row.assertion_id is None:
        return "imported"
    classes = {r[0] for r in conn.execute(
        """
        SELECT s.trust_class
          FROM agent_memory_assertion_evidence e
          JOIN agent_memory_sources s ON s.instance_key = e.instance_key AND s.id = e.source_id
         WHERE e.instance_key = %s AND e.assertion_id = %s AND e.stance = 'supports'
        """, (instance_key, row.assertion_id))}
    return next((c for c in _TRUST_PRIORITY if c in classes), "assistant_inference")


def source_for_input(conn: psycopg.Connection, partition: Partition, row: DreamInput) -> UUID:
    """The immutable source envelope that evidence citing ``row`` points at."""
    if row.source_id is not None:
        return row.source_id
    return ensure_source(
        conn, instance_key=partition.instance_key, audience=partition.audience,
        source_key=f"memory:{row.memory_id}", source_kind="memory",
        trust_class=_projection_trust(conn, partition.instance_key, row),
        content=row.content, owner_user_id=partition.owner_user_id,
        session_key=row.session_key, memory_id=row.memory_id,
        locator={"memoryId": str(row.memory_id), "sourceType": row.source_type},
    )


def same_text_assertion(conn, partition: Partition,
                        item: AcceptedAssertion) -> ledger.AssertionRef | None:
    """An existing assertion of the audience with the same text, slot-less (as the write
    path stores facts) or in the item's slot: the same knowledge is one assertion."""
    identities = list(dict.fromkeys((
        ledger.identity_hash(item.text, item.subject, item.predicate),
        ledger.identity_hash(item.text))))
    row = conn.execute(
        """
        SELECT id, status, review_state
          FROM agent_memory_assertions
         WHERE instance_key = %s AND audience_kind = %s AND audience_key = %s
           AND identity_hash = ANY(%s)
         ORDER BY (status = 'active') DESC, created_at
         LIMIT 1
        """,
        (partition.instance_key, partition.kind, partition.key, identities)).fetchone()
    return ledger.AssertionRef(row[0], False, row[1], row[2]) if row else None


def promote(
    conn: psycopg.Connection,
    partition: Partition,
    dream_id: UUID,
    items: list[AcceptedAssertion],
    inputs: dict[str, DreamInput],
) -> Promotion:
    """Write the sources, assertions and evidence of ``items`` (inside the caller's
    transaction; one savepoint per item)."""
    result = Promotion()
    sources: dict[str, UUID] = {}
    for item in items:
        try:
            with conn.transaction():
                ref = same_text_assertion(conn, partition, item) or ledger.ensure_assertion(
                    conn, instance_key=partition.instance_key, audience=partition.audience,
                    text=item.text, assertion_type=item.type, origin="dream",
                    owner_user_id=partition.owner_user_id, subject=item.subject,
                    predicate=item.predicate, confidence=item.confidence,
                    metadata={"dreamRelation": item.relation, "timeBounded": item.time_bounded,
                              "transient": item.transient},
                    dream_id=dream_id,
                )
                # A projection of this very assertion is not evidence for it.
                cited = [ev for ev in item.evidence
                         if not (inputs[ev.memory_id].assertion_id == ref.id
                                 and inputs[ev.memory_id].source_id is None)]
                for ev in cited:
                    if ev.memory_id not in sources:
                        sources[ev.memory_id] = source_for_input(conn, partition,
                                                                 inputs[ev.memory_id])
                for ev in cited:
                    ledger.add_evidence(
                        conn, instance_key=partition.instance_key, audience=partition.audience,
                        assertion_id=ref.id, source_id=sources[ev.memory_id],
                        excerpt=ev.excerpt, dream_id=dream_id)
        except psycopg.Error as exc:
            # The savepoint is gone, and with it any envelope created for this item.
            for ev in item.evidence:
                if inputs[ev.memory_id].source_id is None:
                    sources.pop(ev.memory_id, None)
            log.warning("dream %s: the ledger refused assertion %d: %s", dream_id, item.index,
                        exc)
            result.rejected.append(Rejection("assertion", item.index, LEDGER_REJECTED,
                                             {"error": str(exc).splitlines()[0][:200]}))
            continue
        result.promoted.append(Promoted(
            item, ref.id, ref.created, ref.status, ref.review_state,
            {ev.memory_id: sources[ev.memory_id] for ev in cited}))
    return result
