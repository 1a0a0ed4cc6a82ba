"""Wiki output of a Dream: always a draft proposal for people to review, never a page.

A proposal records the exact assertion ids it summarises and the evidence (memory id,
source id, excerpt) behind it. Dreaming never approves or publishes one; when a supporting
assertion is rejected (by the safety pass, or later), the draft becomes ``rejected`` by
policy. A draft for the same page over the same assertions is not stored twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.dreaming.promote import Promoted
from memory_platform.features.dreaming.validate import AcceptedWiki, Rejection

SUPPORTING_ASSERTION_REJECTED = "supporting_assertion_rejected"
MISSING_ASSERTION = "wiki_ref_not_promoted"


@dataclass(frozen=True)
class StoredProposal:
    id: UUID
    created: bool


def store_proposals(
    conn: psycopg.Connection,
    partition: Partition,
    dream_id: UUID,
    proposals: list[AcceptedWiki],
    promoted: list[Promoted],
    sources: dict[str, UUID],
) -> tuple[list[StoredProposal], list[Rejection]]:
    """Store each proposal as a draft (inside the caller's transaction)."""
    by_index = {p.item.index: p.assertion_id for p in promoted}
    stored, rejected = [], []
    for proposal in proposals:
        missing = [r for r in proposal.assertion_refs if r not in by_index]
        if missing:
            rejected.append(Rejection("wikiProposal", proposal.index, MISSING_ASSERTION,
                                      {"assertionRefs": missing}))
            continue
        assertion_refs = [str(by_index[r]) for r in proposal.assertion_refs]
        evidence_refs = [{"memoryId": e.memory_id,
                          "sourceId": str(sources[e.memory_id]) if e.memory_id in sources
                          else None,
                          "excerpt": e.excerpt} for e in proposal.evidence]
        existing = next((ident for ident, refs in conn.execute(
            """
            SELECT id, assertion_refs FROM wiki_change_proposals
             WHERE instance_key = %s AND audience_kind = %s AND audience_key = %s
               AND page_slug = %s AND state = 'draft'
            """,
            (partition.instance_key, partition.kind, partition.key, proposal.slug))
            if sorted(refs) == sorted(assertion_refs)), None)
        if existing:
            stored.append(StoredProposal(existing, False))
            continue
        row = conn.execute(
            """
            INSERT INTO wiki_change_proposals
                   (instance_key, audience_kind, audience_key, dream_id, state, page_slug,
                    title, body_markdown, assertion_refs, evidence_refs)
            VALUES (%s, %s, %s, %s, 'draft', %s, %s, %s, %s, %s)
            RETURNING id
            """,
            (partition.instance_key, partition.kind, partition.key, dream_id, proposal.slug,
             proposal.title, proposal.body, Jsonb(assertion_refs), Jsonb(evidence_refs)),
        ).fetchone()
        stored.append(StoredProposal(row[0], True))
    return stored, rejected


def reject_dependent_proposals(conn: psycopg.Connection, instance_key: str,
                               assertion_ids: list[UUID]) -> list[UUID]:
    """Drafts citing any rejected assertion of ``assertion_ids`` become rejected (policy).
    Approved and published proposals are people's decisions and stay as they are."""
    if not assertion_ids:
        return []
    rows = conn.execute(
        """
        UPDATE wiki_change_proposals p
           SET state = 'rejected', decided_by = 'policy', decided_at = now(),
               decision_reason = %s
         WHERE p.instance_key = %s AND p.state = 'draft'
           AND EXISTS (
               SELECT 1
                 FROM jsonb_array_elements_text(p.assertion_refs) AS ref(id)
                 JOIN agent_memory_assertions a
                   ON a.instance_key = p.instance_key AND a.id::text = ref.id
                WHERE a.id = ANY(%s::uuid[]) AND a.status = 'rejected')
        RETURNING p.id
        """,
        (SUPPORTING_ASSERTION_REJECTED, instance_key, list(assertion_ids)),
    ).fetchall()
    return [r[0] for r in rows]
