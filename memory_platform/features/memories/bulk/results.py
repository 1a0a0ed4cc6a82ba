"""What a bulk import reports: its statistics, the rows it rejected, and what one committed
loader share wrote."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rejection:
    line: int
    reason: str
    code: str = "invalid_input"


@dataclass
class Outcome:
    """What one committed loader share wrote (merged into the stats only after the commit)."""

    accepted: int = 0
    deduplicated: int = 0
    chunks: int = 0
    embedded: int = 0
    assertions_created: int = 0
    assertions_activated: int = 0
    evidence: int = 0


@dataclass
class ImportStats:
    rows: int = 0  # input rows seen (blank lines not counted)
    accepted: int = 0  # new memories written
    deduplicated: int = 0  # rows that matched an existing memory (or an earlier row)
    rejected: list[Rejection] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0  # accepted memories written with vectors
    assertions_created: int = 0
    assertions_activated: int = 0
    evidence: int = 0
    turns_linked: int = 0  # conversation turns linked to the turn before (bulk/turns.py)
    batches: int = 0
    embedding_errors: list[str] = field(default_factory=list)
    generation_key: str | None = None
    index_rebuilt: bool = False
    fulltext_rebuilt: bool = False  # the GIN full-text indexes were dropped and rebuilt
    index_note: str | None = None
    load_seconds: float = 0.0  # validating, embedding and writing the rows
    index_seconds: float = 0.0  # swapping out and rebuilding the HNSW and GIN indexes
    fulltext_seconds: float = 0.0  # the GIN share of index_seconds
    seconds: float = 0.0  # all of it

    def merge(self, outcome: Outcome) -> None:
        """Add what a committed share wrote."""
        self.accepted += outcome.accepted
        self.deduplicated += outcome.deduplicated
        self.chunks += outcome.chunks
        self.embedded += outcome.embedded
        self.assertions_created += outcome.assertions_created
        self.assertions_activated += outcome.assertions_activated
        self.evidence += outcome.evidence

    @property
    def keyword_only(self) -> int:
        return self.accepted - self.embedded

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    @property
    def load_rows_per_second(self) -> float:
        return self.rows / self.load_seconds if self.load_seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows, "accepted": self.accepted, "deduplicated": self.deduplicated,
            "rejected": len(self.rejected), "chunks": self.chunks, "embedded": self.embedded,
            "keyword_only": self.keyword_only, "assertions_created": self.assertions_created,
            "assertions_activated": self.assertions_activated, "evidence": self.evidence,
            "turns_linked": self.turns_linked, "batches": self.batches,
            "embedding_errors": self.embedding_errors,
            "generation_key": self.generation_key, "index_rebuilt": self.index_rebuilt,
            "fulltext_rebuilt": self.fulltext_rebuilt,
            "index_note": self.index_note,
            "load_seconds": round(self.load_seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "fulltext_seconds": round(self.fulltext_seconds, 3),
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "load_rows_per_second": round(self.load_rows_per_second, 1),
        }
