"""One compact, JSON-ready view of a dream row, shared by ``memory-platform dream list`` and
``GET /internal/memory/dreams``: identity, partition, status, exact model, times and the
key numbers of ``stats_json`` (the full stats stay on the row and in Dagster's metadata)."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def key_stats(stats: dict[str, Any] | None) -> dict[str, Any]:
    """The numbers an operator judges a Dream by: inputs (total, per pool, automation rows
    excluded), proposed, accepted (created/reused), activated, rejected (total and by
    reason), deferred embeddings, wiki proposals, total duration; what a rollback did."""
    stats = stats or {}
    rejected = stats.get("rejected")
    by_reason = ({str(k): v for k, v in rejected.items() if _int(v) is not None}
                 if isinstance(rejected, dict) else {})
    proposed = stats.get("proposed")
    durations = stats.get("durations")
    out: dict[str, Any] = {
        "inputs": _int(stats.get("inputsTotal")),
        "inputsByPool": stats.get("inputs") if isinstance(stats.get("inputs"), dict) else {},
        "excludedAutomation": _int(stats.get("excludedAutomation")),
        "proposed": _int(proposed.get("assertions")) if isinstance(proposed, dict) else None,
        "accepted": _int(stats.get("accepted")),
        "created": _int(stats.get("created")),
        "reused": _int(stats.get("reused")),
        "activated": _int(stats.get("activated")),
        "rejected": sum(by_reason.values()) if isinstance(rejected, dict) else None,
        "rejectedByReason": by_reason,
        "deferredEmbeddings": _int(stats.get("deferredEmbeddings")),
        "wikiProposals": _int(stats.get("wikiProposals")),
        "durationSeconds": (durations.get("total") if isinstance(durations, dict)
                            else None),
    }
    if "wouldActivate" in stats:
        out["wouldActivate"] = _int(stats.get("wouldActivate"))
    rollback = stats.get("rollback")
    if isinstance(rollback, dict):
        out["rollback"] = {
            "tombstoned": len(rollback.get("tombstoned") or []),
            "restored": len(rollback.get("restored") or []),
            "evidenceRemoved": _int(rollback.get("evidenceRemoved")),
            "proposalsRejected": len(rollback.get("proposalsRejected") or []),
            "protected": len(rollback.get("protected") or []),
        }
    return out


def dream_summary(row: dict[str, Any]) -> dict[str, Any]:
    """A row of :func:`memory_platform.dreaming.runs.list_dreams` (or ``get_dream``) as the
    listing shows it."""
    diagnostics = row.get("diagnostics") or []
    return {
        "id": str(row["id"]),
        "instanceKey": row["instance_key"],
        "partitionKey": row["partition_key"],
        "audience": {"kind": row["audience_kind"], "key": row["audience_key"]},
        "status": row["status"],
        "trigger": row.get("trigger_kind"),
        "model": row.get("model"),
        "dryRun": bool(row.get("dry_run")),
        "dagsterRunId": row.get("dagster_run_id"),
        "startedAt": _iso(row.get("started_at")),
        "finishedAt": _iso(row.get("finished_at")),
        "rolledBackAt": _iso(row.get("rolled_back_at")),
        "error": row.get("error"),
        "diagnostics": sorted({d.get("code") for d in diagnostics
                               if isinstance(d, dict) and d.get("code")}),
        "stats": key_stats(row.get("stats_json")),
    }
