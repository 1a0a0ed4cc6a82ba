"""The values the consolidation modules pass each other (specification, "Consolidation").

    run (one partition, or the sweep)
      -> slots: same-slot assertion pairs -> judge (model or offline) -> outcome rules
               -> lifecycle (supersede / duplicate / open conflict), audited
      -> entities: deterministic + vector merge passes, audited
      -> stale: unsupported old claims and edges superseded, orphans quarantined, audited

Every mutating step takes ``dry_run``: it still runs candidate queries, model judgments,
policy checks and caps, and returns the same decisions, but writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

Relation = Literal["duplicate", "contradiction", "unrelated"]
Outcome = Literal["superseded", "duplicate", "conflict_opened", "kept", "skipped",
                  "refused"]


class ConsolidationRetryable(RuntimeError):
    """A model answer that cannot be used (malformed, unknown ids, wrong model) or a model
    that cannot be reached: nothing of that batch is applied; the run records a diagnostic
    and goes on with the next batch."""

    def __init__(self, code: str, message: str,
                 problems: list[dict[str, Any]] | None = None) -> None:
        self.code, self.message, self.problems = code, message, problems or []
        super().__init__(f"{code}: {message}")


@dataclass(frozen=True)
class Partition:
    instance_key: str
    audience_kind: str
    audience_key: str

    @property
    def partition_key(self) -> str:
        return f"{self.instance_key}/{self.audience_kind}/{self.audience_key}"


@dataclass(frozen=True)
class PairDecision:
    """One judged assertion pair and what code made of the model's relation."""

    left: UUID
    right: UUID
    left_text: str
    right_text: str
    similarity: float
    relation: Relation               # the judge's classification (validated)
    outcome: Outcome                 # what code decided (see slots.py)
    survivor: UUID | None = None
    loser: UUID | None = None
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"left": str(self.left), "right": str(self.right),
                "leftText": self.left_text, "rightText": self.right_text,
                "similarity": round(self.similarity, 4), "relation": self.relation,
                "outcome": self.outcome,
                "survivor": str(self.survivor) if self.survivor else None,
                "loser": str(self.loser) if self.loser else None, "reason": self.reason}


@dataclass(frozen=True)
class MergeDecision:
    """One entity merge (or a refused candidate pair, ``merged`` False)."""

    survivor: UUID
    loser: UUID
    survivor_label: str
    loser_label: str
    method: Literal["deterministic", "vector"]
    merged: bool
    reason: str = ""
    mapping: dict[str, Any] = field(default_factory=dict)  # re-pointed ids (applied merges)

    def as_json(self) -> dict[str, Any]:
        return {"survivor": str(self.survivor), "loser": str(self.loser),
                "survivorLabel": self.survivor_label, "loserLabel": self.loser_label,
                "method": self.method, "merged": self.merged, "reason": self.reason}


@dataclass
class StepResult:
    """What one step (slots, entities, stale) decided and did in one partition."""

    pair_decisions: list[PairDecision] = field(default_factory=list)
    merges: list[MergeDecision] = field(default_factory=list)
    pruned_claims: list[UUID] = field(default_factory=list)
    pruned_edges: list[UUID] = field(default_factory=list)
    quarantined: int = 0
    audit_rows: int = 0
    pairs_considered: int = 0
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    changed_entity_ids: list[UUID] = field(default_factory=list)   # to re-embed
