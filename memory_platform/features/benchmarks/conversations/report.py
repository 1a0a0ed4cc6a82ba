"""The numbers of the conversational benchmark: per question the ranks of its evidence turns,
per category and overall the recall at 1, 6 and 10 and the MRR within 10, as a markdown table
and as JSON.

Pure functions over ranks: nothing here touches the database, so the metrics are tested on
hand-made rankings (and the lead can recompute them from a results file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_platform.features.benchmarks.conversations.corpus import CATEGORIES

RECALL_AT = (1, 6, 10)
MRR_WITHIN = 10
METRICS = (*(f"R@{k}" for k in RECALL_AT), f"MRR@{MRR_WITHIN}")


@dataclass(frozen=True)
class QuestionResult:
    """One asked question: ``ranks[i]`` is the 1-based rank of ``evidence[i]`` among the
    answers (None: not answered within the limit)."""

    question: str
    conversation: str
    category: str
    evidence: tuple[str, ...]
    ranks: tuple[int | None, ...]

    def recall(self, k: int) -> float:
        """Share of the evidence turns within the top ``k`` (a multi-hop question needs all
        of its turns for full credit)."""
        return sum(r is not None and r <= k for r in self.ranks) / len(self.evidence)

    def reciprocal_rank(self, within: int = MRR_WITHIN) -> float:
        """1 / rank of the first evidence turn within ``within``, 0 without one."""
        found = [r for r in self.ranks if r is not None and r <= within]
        return 1 / min(found) if found else 0.0

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "conversation": self.conversation,
                "category": self.category, "evidence": list(self.evidence),
                "ranks": list(self.ranks)}


def evidence_ranks(evidence: Sequence[str], answered: Sequence[str],
                   turns_of: Mapping[str, Sequence[str]]) -> tuple[int | None, ...]:
    """The rank of each evidence turn, given the answered memory ids in order and which turns
    each memory holds (identical turn texts of one user are one memory: each of those turns
    takes the memory's rank)."""
    rank_of: dict[str, int] = {}
    for rank, memory_id in enumerate(answered, 1):
        for turn in turns_of.get(memory_id, ()):
            rank_of.setdefault(turn, rank)
    return tuple(rank_of.get(turn) for turn in evidence)


def metrics(results: Sequence[QuestionResult]) -> dict[str, float | None]:
    """The means over ``results`` (None for each metric without a question)."""
    if not results:
        return dict.fromkeys(METRICS)
    n = len(results)
    values = {f"R@{k}": sum(r.recall(k) for r in results) / n for k in RECALL_AT}
    values[f"MRR@{MRR_WITHIN}"] = sum(r.reciprocal_rank() for r in results) / n
    return {name: round(value, 4) for name, value in values.items()}


@dataclass
class VariantReport:
    """The questions of one corpus answered under one settings variant."""

    variant: str
    overrides: dict[str, Any]
    results: list[QuestionResult] = field(default_factory=list)
    seconds_per_query: float = 0.0

    def summary(self) -> dict[str, Any]:
        """Per category (every one of corpus.CATEGORIES, n 0 when the corpus has none) and
        ``all``: the question count and the metrics; plus ms per query."""
        rows: dict[str, Any] = {}
        for category in (*CATEGORIES, "all"):
            chosen = [r for r in self.results if category in ("all", r.category)]
            rows[category] = {"n": len(chosen), **metrics(chosen)}
        return {"variant": self.variant, "overrides": self.overrides, "by_category": rows,
                "ms_per_query": round(self.seconds_per_query * 1000, 2)}


def markdown_table(report: VariantReport) -> str:
    """Rows: the categories and ``all``; columns: n and the metrics ('-' without questions)."""
    rows = report.summary()["by_category"]
    lines = ["| category | n | " + " | ".join(METRICS) + " |",
             "|---|---:|" + "---:|" * len(METRICS)]
    for category, row in rows.items():
        cells = ["-" if row[m] is None else f"{row[m]:.3f}" for m in METRICS]
        lines.append(f"| {category} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def results_json(reports: Sequence[VariantReport]) -> dict[str, Any]:
    """Summaries of every variant and the per-question ranks under each."""
    return {"summaries": [r.summary() for r in reports],
            "questions": {r.variant: [q.as_json() for q in r.results] for r in reports}}
