"""Roll back one Dream: compensate its partition's change set that no person has decided.

* assertions the Dream created get a system ``rollback`` review and become ``tombstoned``;
* assertions it reused and whose state its safety pass changed go back to their earlier
  state (recorded in that review's note), unless something decided them later;
* its evidence rows on reused assertions are removed (never an active assertion's last one);
* its draft wiki proposals become rejected;
* projections follow through the outbox (removed, or restored); the knowledge graph at once:
  the refs of the assertions it took out of recall leave their claims and edges in the same
  transaction (``graph.retract``), so no claim stands on a rolled-back row until the outbox
  worker's next pass, and a Dream run right after the rollback builds its own claims.

A human review of an assertion, or an approved or published wiki proposal citing it,
protects it: it is left exactly as it is and reported under ``protected``. The dream row
becomes ``rolled_back``; rolling back twice changes nothing. A later Dream that states a
tombstoned row again re-creates it as its own (``promote.reclaim``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.dreaming.lock import dream_lock
from memory_platform.features.graph.retract import retract_assertions
from memory_platform.features.projection.outbox import enqueue_assertion_projection, process_outbox
from memory_platform.foundation.db.units import require_idle
from memory_platform.foundation.errors import Conflict, NotFound
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.ledger import assertions as ledger

ROLLBACK_REASON = "dream_rollback"
_BEFORE = re.compile(r"^before=(?P<status>[a-z]+)/(?P<review>[a-z_]+)$")


@dataclass
class RollbackResult:
    dream_id: UUID
    status: str                                  # rolled_back | already_rolled_back
    tombstoned: list[UUID] = field(default_factory=list)
    restored: list[UUID] = field(default_factory=list)
    evidence_removed: int = 0
    proposals_rejected: list[UUID] = field(default_factory=list)
    protected: list[dict[str, Any]] = field(default_factory=list)
    projection_jobs: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"dreamId": str(self.dream_id), "status": self.status,
                "tombstoned": [str(a) for a in self.tombstoned],
                "restored": [str(a) for a in self.restored],
                "evidenceRemoved": self.evidence_removed,
                "proposalsRejected": [str(p) for p in self.proposals_rejected],
                "protected": self.protected, "projectionJobs": self.projection_jobs}


def _wiki_protected(conn, instance_key: str, dream_id: UUID) -> dict[UUID, UUID]:
    """Assertion id -> the approved/published proposal of this Dream that cites it."""
    out: dict[UUID, UUID] = {}
    for proposal_id, refs in conn.execute(
            "SELECT id, assertion_refs FROM wiki_change_proposals"
            " WHERE instance_key = %s AND dream_id = %s AND state IN ('approved', 'published')",
            (instance_key, dream_id)):
        for ref in refs:
            out.setdefault(UUID(ref), proposal_id)
    return out


def _compensate(conn, dream: dict[str, Any], result: RollbackResult) -> list[UUID]:
    instance, dream_id = dream["instance_key"], dream["id"]
    wiki = _wiki_protected(conn, instance, dream_id)
    for proposal_id in dict.fromkeys(wiki.values()):
        result.protected.append({"kind": "wikiProposal", "id": str(proposal_id),
                                 "reason": "wiki_proposal_approved_or_published"})
    protected: set[UUID] = set()

    def protect(assertion_id: UUID, reason: str) -> None:
        protected.add(assertion_id)
        result.protected.append({"kind": "assertion", "id": str(assertion_id), "reason": reason})

    created = conn.execute(
        "SELECT id, status FROM agent_memory_assertions"
        " WHERE instance_key = %s AND dream_id = %s ORDER BY created_at FOR UPDATE",
        (instance, dream_id)).fetchall()
    for assertion_id, status in created:
        if ledger.human_decided(conn, instance, assertion_id):
            protect(assertion_id, "human_review")
        elif assertion_id in wiki:
            protect(assertion_id, "wiki_proposal_approved_or_published")
        elif status != "tombstoned":
            ledger.record_decision(conn, instance_key=instance, assertion_id=assertion_id,
                                   decision="rollback", reviewer_kind="system",
                                   reason_code=ROLLBACK_REASON, dream_id=dream_id)
            result.tombstoned.append(assertion_id)

    # Reused assertions whose state this Dream's policy changed: put the earlier state back.
    created_ids = {row[0] for row in created}
    for review_id, assertion_id, note in conn.execute(
            """
            SELECT DISTINCT ON (r.assertion_id) r.id, r.assertion_id, r.note
              FROM agent_memory_assertion_reviews r
             WHERE r.instance_key = %s AND r.dream_id = %s AND r.reviewer_kind = 'policy'
               AND r.decision IN ('activate', 'reject')
             ORDER BY r.assertion_id, r.id DESC
            """, (instance, dream_id)).fetchall():
        if assertion_id in created_ids:
            continue
        match = _BEFORE.match(note or "")
        later = conn.execute(
            "SELECT 1 FROM agent_memory_assertion_reviews"
            " WHERE assertion_id = %s AND id > %s LIMIT 1", (assertion_id, review_id)).fetchone()
        if ledger.human_decided(conn, instance, assertion_id):
            protect(assertion_id, "human_review")
        elif assertion_id in wiki:
            protect(assertion_id, "wiki_proposal_approved_or_published")
        elif later or match is None:
            protect(assertion_id, "decided_after_this_dream")
        elif ledger.restore_state(conn, instance_key=instance, assertion_id=assertion_id,
                                  status=match["status"], review_state=match["review"],
                                  reason_code=ROLLBACK_REASON, dream_id=dream_id):
            result.restored.append(assertion_id)

    # This Dream's evidence on assertions it did not create, unless protected, and never the
    # last supporting evidence of an active assertion.
    removed = conn.execute(
        """
        DELETE FROM agent_memory_assertion_evidence e
         WHERE e.instance_key = %(instance)s AND e.dream_id = %(dream)s
           AND e.assertion_id <> ALL(%(created)s::uuid[])
           AND e.assertion_id <> ALL(%(protected)s::uuid[])
           AND NOT EXISTS (SELECT 1 FROM agent_memory_assertion_reviews r
                            WHERE r.assertion_id = e.assertion_id AND r.reviewer_kind = 'human')
           AND EXISTS (SELECT 1 FROM agent_memory_assertion_evidence other
                        WHERE other.assertion_id = e.assertion_id AND other.id <> e.id
                          AND other.stance = 'supports'
                          AND (other.dream_id IS DISTINCT FROM %(dream)s))
        RETURNING e.id
        """,
        {"instance": instance, "dream": dream_id, "created": list(created_ids),
         "protected": list(protected)}).fetchall()
    result.evidence_removed = len(removed)

    result.proposals_rejected = [r[0] for r in conn.execute(
        """
        UPDATE wiki_change_proposals
           SET state = 'rejected', decided_by = 'system', decided_at = now(),
               decision_reason = %s
         WHERE instance_key = %s AND dream_id = %s AND state = 'draft'
        RETURNING id
        """, (ROLLBACK_REASON, instance, dream_id))]
    compensated = result.tombstoned + result.restored
    if compensated:
        conn.execute(
            """
            UPDATE agent_memory_assertion_conflicts
               SET status = 'resolved', resolution = 'rejected', resolved_at = now(),
                   resolved_by = 'dream_rollback'
             WHERE instance_key = %s AND status = 'open' AND detected_by = 'dream'
               AND assertion_id = ANY(%s::uuid[])
            """, (instance, result.tombstoned))
        conn.execute(
            """
            DELETE FROM agent_memory_relations rel
             USING agent_memories m
             WHERE rel.instance_key = %s AND rel.dream_id = %s
               AND m.instance_key = rel.instance_key AND m.id = rel.from_memory_id
               AND m.assertion_id = ANY(%s::uuid[]) AND m.source_id IS NULL
            """, (instance, dream_id, result.tombstoned))
    return [enqueue_assertion_projection(conn, instance, a, {"dreamId": str(dream_id)})
            for a in compensated]


def rollback_dream(
    conn: psycopg.Connection,
    dream_id: UUID,
    *,
    settings: Settings | None = None,
    embedder: EmbeddingProvider | None = None,
    instance_key: str | None = None,
) -> RollbackResult:
    """Compensate one Dream (see the module docstring). Takes the Dreaming lock (raises
    DreamLocked while a Dream runs); the connection must be outside a transaction.
    ``instance_key``: only a Dream of this instance (another's is NotFound, like a missing
    one). A running Dream raises Conflict."""
    settings = settings or get_settings()
    require_idle(conn, "rollback_dream")
    with dream_lock(conn):
        with conn.transaction():
            from psycopg.rows import dict_row

            with conn.cursor(row_factory=dict_row) as cur:
                dream = cur.execute(
                    "SELECT id, instance_key, status, stats_json FROM agent_memory_dreams"
                    " WHERE id = %s FOR UPDATE", (dream_id,)).fetchone()
            if dream is None or instance_key not in (None, dream["instance_key"]):
                raise NotFound(f"no dream {dream_id}"
                               + (" in this instance" if instance_key else ""))
            if dream["status"] == "running":
                raise Conflict("a running Dream cannot be rolled back; wait for it to end "
                               "(or for reconcile_stale_dreams)", code="dream_running")
            if dream["status"] == "rolled_back":
                return RollbackResult(dream_id, "already_rolled_back")
            result = RollbackResult(dream_id, "rolled_back")
            job_ids = _compensate(conn, dream, result)
            result.projection_jobs = len(job_ids)
            # Only those no longer told lose their graph support (a restored row may be).
            retract_assertions(conn, dream["instance_key"], result.tombstoned + result.restored)
            conn.execute(
                """
                UPDATE agent_memory_dreams
                   SET status = 'rolled_back', rolled_back_at = now(),
                       stats_json = stats_json || jsonb_build_object('rollback', %s::jsonb)
                 WHERE id = %s
                """, (Jsonb(result.as_json()), dream_id))
        if not conn.autocommit:
            conn.commit()
        process_outbox(conn, settings, limit=max(1, len(job_ids)), embedder=embedder,
                       job_ids=job_ids)
    return result
