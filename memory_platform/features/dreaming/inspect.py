"""One Dream in full, for a data engineer: what the model proposed, what was accepted or
rejected and why (reason codes), the policy preview and the dry-run proposals, the effective
model and where it came from, and the rollback state.

:func:`dream_detail` is what ``GET /internal/memory/dreams/{id}`` and ``memory-platform dream
show`` return; :func:`proposal_rows` (the proposals joined with their policy preview) is also
what the Dagster metadata of a dry run shows.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from memory_platform.features.dreaming.summary import dream_row_view
from memory_platform.foundation.errors import NotFound

__all__ = ["dream_detail", "proposal_rows", "rejected_items"]

_DREAM = """
    SELECT id, instance_key, audience_kind, audience_key, partition_key, status,
           trigger_kind, model, dry_run, stats_json, diagnostics, proposals_json,
           dagster_run_id, error, started_at, heartbeat_at, finished_at, rolled_back_at
      FROM agent_memory_dreams
     WHERE id = %s AND instance_key = %s
"""

# The assertions this Dream created or gave evidence to, with their state now and the
# newest review's decision and reason code.
_TOUCHED = """
    SELECT a.id, a.assertion_type, a.assertion_text, a.status, a.review_state,
           (a.dream_id = %(dream)s) AS created,
           r.decision, r.reviewer_kind, r.reason_code
      FROM agent_memory_assertions a
      LEFT JOIN LATERAL (
            SELECT decision, reviewer_kind, reason_code
              FROM agent_memory_assertion_reviews rv
             WHERE rv.instance_key = a.instance_key AND rv.assertion_id = a.id
             ORDER BY rv.created_at DESC, rv.id DESC
             LIMIT 1) r ON true
     WHERE a.instance_key = %(instance)s
       AND (a.dream_id = %(dream)s
            OR EXISTS (SELECT 1 FROM agent_memory_assertion_evidence e
                        WHERE e.instance_key = a.instance_key AND e.assertion_id = a.id
                          AND e.dream_id = %(dream)s))
     ORDER BY a.created_at, a.id
"""

_WIKI = """
    SELECT id, state, page_slug, title, decision_reason
      FROM wiki_change_proposals
     WHERE instance_key = %s AND dream_id = %s
     ORDER BY created_at, id
"""


def proposal_rows(proposals: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The proposed assertions, each with its evidence excerpts and (when the Dream made one)
    its policy preview decision and reason code."""
    proposals = proposals or {}
    preview = {p.get("index"): p for p in proposals.get("policyPreview") or []
               if isinstance(p, dict)}
    out = []
    for item in proposals.get("assertions") or []:
        if not isinstance(item, dict):
            continue
        decided = preview.get(item.get("index")) or {}
        out.append({"index": item.get("index"), "type": item.get("type"),
                    "text": item.get("text"), "confidence": item.get("confidence"),
                    "evidence": [e.get("excerpt") for e in item.get("evidence") or []
                                 if isinstance(e, dict)],
                    "decision": decided.get("decision"),
                    "reasonCode": decided.get("reasonCode"),
                    "existingAssertionId": decided.get("existingAssertionId")})
    return out


def rejected_items(proposals: dict[str, Any] | None,
                   stats: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every rejected item with its reason code: validation/promotion rejections of the
    proposals, then the safety pass's rejections (a real run) or the preview's (a dry run)."""
    proposals, stats = proposals or {}, stats or {}
    texts = {i.get("index"): i.get("text") for i in proposals.get("assertions") or []
             if isinstance(i, dict)}
    out = [{"kind": r.get("kind"), "item": r.get("index"), "reasonCode": r.get("reason"),
            "text": texts.get(r.get("index")) if r.get("kind") == "assertion" else None,
            "detail": r.get("detail"), "stage": "validation"}
           for r in proposals.get("rejected") or [] if isinstance(r, dict)]
    for d in (stats.get("safety") or {}).get("decisions") or []:
        if isinstance(d, dict) and d.get("decision") == "reject":
            out.append({"kind": "assertion", "item": d.get("assertionId"),
                        "reasonCode": d.get("reasonCode"), "text": None, "detail": None,
                        "stage": "safety"})
    for p in proposals.get("policyPreview") or []:
        if isinstance(p, dict) and p.get("decision") == "reject":
            out.append({"kind": "assertion", "item": p.get("index"),
                        "reasonCode": p.get("reasonCode"), "text": texts.get(p.get("index")),
                        "detail": None, "stage": "policy_preview"})
    return out


def _rollback(row: dict[str, Any]) -> dict[str, Any]:
    done = (row.get("stats_json") or {}).get("rollback")
    kept = [p for p in (done or {}).get("protected") or [] if isinstance(p, dict)]
    return {"rolledBack": row["status"] == "rolled_back",
            "rolledBackAt": row["rolled_back_at"].isoformat() if row["rolled_back_at"] else None,
            "reverted": len((done or {}).get("tombstoned") or [])
            + len((done or {}).get("restored") or []),
            "keptByPerson": sum(p.get("reason") == "human_review" for p in kept),
            "result": done}


def dream_detail(conn: psycopg.Connection, instance_key: str, dream_id: UUID) -> dict[str, Any]:
    """The full picture of one Dream of ``instance_key`` (another instance's is NotFound,
    like a missing one). Read-only; runs in the caller's transaction."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(_DREAM, (dream_id, instance_key)).fetchone()
        if row is None:
            raise NotFound(f"no dream {dream_id} in this instance")
        touched = cur.execute(_TOUCHED, {"dream": dream_id,
                                         "instance": instance_key}).fetchall()
        wiki = cur.execute(_WIKI, (instance_key, dream_id)).fetchall()
    stats = row["stats_json"] or {}
    proposals = row["proposals_json"] or {}
    rows = proposal_rows(proposals)
    return {
        **dream_row_view(row),
        "effectiveModel": {"model": row["model"], "source": stats.get("modelSource")},
        "proposals": proposals,
        "dryRunProposals": rows if row["dry_run"] else [],
        "policyPreview": proposals.get("policyPreview") or [],
        "accepted": [{"assertionId": str(a["id"]), "type": a["assertion_type"],
                      "text": a["assertion_text"], "created": bool(a["created"]),
                      "status": a["status"], "reviewState": a["review_state"],
                      "decision": a["decision"], "reviewerKind": a["reviewer_kind"],
                      "reasonCode": a["reason_code"]} for a in touched],
        "rejected": rejected_items(proposals, stats),
        "rejectedByReason": stats.get("rejected") if isinstance(stats.get("rejected"), dict)
        else {},
        "wikiProposals": [{"id": str(w["id"]), "state": w["state"], "slug": w["page_slug"],
                           "title": w["title"], "reason": w["decision_reason"]} for w in wiki],
        "diagnosticsFull": row["diagnostics"] or [],
        "rollback": _rollback(row),
    }
