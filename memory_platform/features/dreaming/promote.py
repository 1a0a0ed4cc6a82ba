"""Ingest validated Dream assertions into the canonical ledger.

Each cited memory gets its source envelope (the memory's own when it was written with one,
else an envelope keyed ``memory:<id>`` holding the memory's exact content, so the verbatim
excerpt check holds); each assertion is created, or reused when its identity already exists
in the partition's audience, with origin ``dream`` and the dream id; evidence rows carry the
dream id. Cited sources and memory rows are never rewritten. Each item runs in its own
savepoint: a row the database refuses rejects that item only (``ledger_rejected``).

A Dream that states again what a rolled-back Dream had made re-creates it (:func:`reclaim`):
the assertion that rollback tombstoned becomes the new Dream's candidate, and the evidence
rows it cites again carry the new Dream's id, so ``dream show``, the Dream's graph, the graph
refs and a later rollback name the Dream that made the row now, never the rolled-back one
(its rollback result, stored on its dream row, keeps what it had made).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.dreaming.inputs import HUMAN_TRUST, DreamInput
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.validate import AcceptedAssertion, Rejection
from memory_platform.shared.ledger import assertions as ledger
from memory_platform.shared.ledger.sources import ensure_source

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


# A rolled-back Dream's rows that a new Dream states again. The assertion its rollback
# tombstoned starts over as the new Dream's candidate (as if created now; the safety pass then
# decides it); never one a person has reviewed. The evidence rows it cites again: the
# idempotent insert kept the old row with the old dream id.
RECREATED = "dream_recreated"
_RECLAIM_ASSERTION = sql.SQL("""
    UPDATE agent_memory_assertions a
       SET dream_id = %(dream)s, status = 'candidate', review_state = 'pending'
      FROM agent_memory_assertions old
      JOIN agent_memory_dreams d ON d.instance_key = old.instance_key AND d.id = old.dream_id
     WHERE old.instance_key = %(instance)s AND old.id = %(assertion)s AND a.id = old.id
       AND old.status = 'tombstoned' AND old.dream_id IS DISTINCT FROM %(dream)s
       AND d.status = 'rolled_back'
       AND NOT {decided}
    RETURNING old.review_state
""").format(decided=ledger.person_decided("old"))
_RECLAIM_EVIDENCE = """
    UPDATE agent_memory_assertion_evidence e
       SET dream_id = %(dream)s
      FROM agent_memory_dreams d
     WHERE e.instance_key = %(instance)s AND e.assertion_id = %(assertion)s
       AND e.source_id = %(source)s AND e.stance = 'supports'
       AND md5(e.excerpt) = md5(%(excerpt)s)
       AND e.dream_id IS DISTINCT FROM %(dream)s
       AND d.instance_key = e.instance_key AND d.id = e.dream_id AND d.status = 'rolled_back'
"""


def reclaim(conn: psycopg.Connection, instance_key: str, dream_id: UUID, assertion_id: UUID,
            evidence: list[tuple[UUID, str]]) -> bool:
    """Give ``dream_id`` what it re-creates of a rolled-back Dream: the assertion, when that
    Dream's rollback tombstoned it (back to ``candidate``, a system review with reason
    ``dream_recreated`` saying so), and the ``evidence`` rows it cites again ((source id,
    excerpt) pairs). True when the assertion became this Dream's."""
    params = {"dream": dream_id, "instance": instance_key, "assertion": assertion_id}
    taken = conn.execute(_RECLAIM_ASSERTION, params).fetchone()
    if taken is not None:
        ledger.record_decision(conn, instance_key=instance_key, assertion_id=assertion_id,
                               decision="defer", reviewer_kind="system",
                               reason_code=RECREATED, note=f"before=tombstoned/{taken[0]}",
                               dream_id=dream_id)
    for source_id, excerpt in evidence:
        conn.execute(_RECLAIM_EVIDENCE, params | {"source": source_id, "excerpt": excerpt})
    return taken is not None


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
                    dream_id=dream_id, valid_to=item.valid_until,
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
                if not ref.created and reclaim(
                        conn, partition.instance_key, dream_id, ref.id,
                        [(sources[ev.memory_id], ev.excerpt) for ev in cited]):
                    ref = ledger.AssertionRef(ref.id, True, "candidate", "pending")
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
