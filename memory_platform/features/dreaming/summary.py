"""A Dream's key numbers, read once from its ``stats_json`` (what the engine writes), and the
compact view of a dream row built on them.

:class:`DreamStats` is what every reader shows: ``memory-platform dream list`` and
``dream run``, ``GET /internal/memory/dreams`` and the log lines of a Dagster batch. The full
stats stay on the row and in Dagster's metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class RollbackStats:
    """What a rollback of the Dream did (counts)."""

    tombstoned: int
    restored: int
    evidence_removed: int | None
    proposals_rejected: int
    protected: int

    @classmethod
    def from_stats(cls, rollback: dict[str, Any]) -> RollbackStats:
        return cls(tombstoned=len(rollback.get("tombstoned") or []),
                   restored=len(rollback.get("restored") or []),
                   evidence_removed=_int(rollback.get("evidenceRemoved")),
                   proposals_rejected=len(rollback.get("proposalsRejected") or []),
                   protected=len(rollback.get("protected") or []))

    def as_json(self) -> dict[str, Any]:
        return {"tombstoned": self.tombstoned, "restored": self.restored,
                "evidenceRemoved": self.evidence_removed,
                "proposalsRejected": self.proposals_rejected, "protected": self.protected}


@dataclass(frozen=True)
class DreamStats:
    """The numbers an operator judges a Dream by. ``None`` means the Dream did not get as far
    as the number (a skipped Dream has inputs but no accepted count)."""

    inputs: int | None = None
    inputs_by_pool: dict[str, Any] = field(default_factory=dict)
    excluded_automation: int | None = None
    proposed: int | None = None
    accepted: int | None = None
    created: int | None = None
    reused: int | None = None
    activated: int | None = None
    rejected: int | None = None
    rejected_by_reason: dict[str, int] = field(default_factory=dict)
    deferred_embeddings: int | None = None
    wiki_proposals: int | None = None
    duration_seconds: float | None = None
    would_activate: int | None = None
    previewed: bool = False                         # a dry run that reached the preview
    rollback: RollbackStats | None = None

    @classmethod
    def from_stats(cls, stats: dict[str, Any] | None) -> DreamStats:
        """The key numbers of a ``stats_json`` (or ``DreamResult.stats``)."""
        stats = stats or {}
        rejected = stats.get("rejected")
        by_reason = ({str(k): v for k, v in rejected.items() if _int(v) is not None}
                     if isinstance(rejected, dict) else {})
        proposed = stats.get("proposed")
        durations = stats.get("durations")
        rollback = stats.get("rollback")
        return cls(
            inputs=_int(stats.get("inputsTotal")),
            inputs_by_pool=stats["inputs"] if isinstance(stats.get("inputs"), dict) else {},
            excluded_automation=_int(stats.get("excludedAutomation")),
            proposed=_int(proposed.get("assertions")) if isinstance(proposed, dict) else None,
            accepted=_int(stats.get("accepted")),
            created=_int(stats.get("created")),
            reused=_int(stats.get("reused")),
            activated=_int(stats.get("activated")),
            rejected=sum(by_reason.values()) if isinstance(rejected, dict) else None,
            rejected_by_reason=by_reason,
            deferred_embeddings=_int(stats.get("deferredEmbeddings")),
            wiki_proposals=_int(stats.get("wikiProposals")),
            duration_seconds=durations.get("total") if isinstance(durations, dict) else None,
            would_activate=_int(stats.get("wouldActivate")),
            previewed="wouldActivate" in stats,
            rollback=RollbackStats.from_stats(rollback) if isinstance(rollback, dict) else None,
        )

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "inputs": self.inputs, "inputsByPool": self.inputs_by_pool,
            "excludedAutomation": self.excluded_automation, "proposed": self.proposed,
            "accepted": self.accepted, "created": self.created, "reused": self.reused,
            "activated": self.activated, "rejected": self.rejected,
            "rejectedByReason": self.rejected_by_reason,
            "deferredEmbeddings": self.deferred_embeddings,
            "wikiProposals": self.wiki_proposals, "durationSeconds": self.duration_seconds,
        }
        if self.previewed:
            out["wouldActivate"] = self.would_activate
        if self.rollback is not None:
            out["rollback"] = self.rollback.as_json()
        return out

    def line(self) -> str:
        """One log line of the counts (``-`` where the Dream did not get that far)."""
        def n(value: int | None) -> str:
            return "-" if value is None else str(value)

        return (f"inputs={n(self.inputs)} accepted={n(self.accepted)} "
                f"activated={n(self.activated)} rejected={n(self.rejected)}")


def reasons(diagnostics: list[dict[str, Any]] | None) -> list[str]:
    """Why a Dream ended as it did, one ``code: message`` line per diagnostic (the message
    says what to do where there is something to do)."""
    return [f"{d.get('code')}: {d.get('message')}" for d in diagnostics or []
            if isinstance(d, dict) and d.get("code")]


def dream_row_view(row: dict[str, Any]) -> dict[str, Any]:
    """A row of :func:`memory_platform.features.dreaming.runs.list_dreams` (or ``get_dream``) as the
    listings show it: identity, partition, status, exact model, times and key numbers."""
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
        "stats": DreamStats.from_stats(row.get("stats_json")).as_json(),
    }
