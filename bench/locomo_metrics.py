"""The numbers of ``python -m bench.locomo``: per question the ranks of its evidence turns and
of its evidence sessions, recall and MRR per category, per fold and overall, the 2-fold
choice of a variant, and the BM25 reference ranking over the same turns.

Pure functions over rankings (no database): tested on hand-made rankings.

* Recall@k: the share of a question's evidence turns within the top k answers (a multi-hop
  question needs all of them for full credit); MRR@10: 1 / rank of the first evidence turn.
* Session recall@k: the share of the question's evidence sessions that some turn of the top
  k answers belongs to.
* A memory can hold several turns (identical texts of one user are one memory): each of them
  takes the memory's rank.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory_platform.features.benchmarks.conversations.corpus import CATEGORIES, Conversation
from memory_platform.features.retrieval.stopwords import ALL as STOPWORDS
from memory_platform.features.retrieval.terms import words

RECALL_AT = (1, 3, 6, 10)
MRR_WITHIN = 10
METRICS = (*(f"R@{k}" for k in RECALL_AT), f"MRR@{MRR_WITHIN}",
           *(f"sR@{k}" for k in RECALL_AT))
FOLDS = ("A", "B")


def fold_of(position: int, total: int) -> str:
    """The fold of the conversation at ``position`` of ``total`` in the data: the first half
    (LoCoMo: conversations 0-4) is A, the rest B."""
    return "A" if position < (total + 1) // 2 else "B"


def session_of(turn_id: str) -> str:
    """``"conv-26:D3:7"`` -> ``"conv-26:D3"``."""
    return turn_id.rsplit(":", 1)[0]


@dataclass(frozen=True)
class Ranked:
    """One question answered: the rank of each evidence turn and of each evidence session
    (None: not within the answers)."""

    question: str
    conversation: str
    category: str
    fold: str
    evidence: tuple[str, ...]
    ranks: tuple[int | None, ...]
    session_ranks: tuple[int | None, ...]

    def recall(self, k: int) -> float:
        return sum(r is not None and r <= k for r in self.ranks) / len(self.ranks)

    def session_recall(self, k: int) -> float:
        return sum(r is not None and r <= k for r in self.session_ranks) / len(self.session_ranks)

    def reciprocal_rank(self) -> float:
        found = [r for r in self.ranks if r is not None and r <= MRR_WITHIN]
        return 1 / min(found) if found else 0.0

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "category": self.category, "fold": self.fold,
                "evidence": list(self.evidence), "ranks": list(self.ranks),
                "session_ranks": list(self.session_ranks)}


def ranked(question: str, conversation: str, category: str, fold: str,
           evidence: Sequence[str], answered_turns: Sequence[Sequence[str]]) -> Ranked:
    """``answered_turns[i]``: the turns the answer at rank i + 1 holds."""
    turn_rank: dict[str, int] = {}
    session_rank: dict[str, int] = {}
    for rank, turns in enumerate(answered_turns, 1):
        for turn in turns:
            turn_rank.setdefault(turn, rank)
            session_rank.setdefault(session_of(turn), rank)
    sessions = list(dict.fromkeys(session_of(t) for t in evidence))
    return Ranked(question, conversation, category, fold, tuple(evidence),
                  tuple(turn_rank.get(t) for t in evidence),
                  tuple(session_rank.get(s) for s in sessions))


def metrics(results: Sequence[Ranked]) -> dict[str, float | None]:
    """Means over ``results`` (None for each metric without a question)."""
    if not results:
        return dict.fromkeys(METRICS)
    n = len(results)
    values = {f"R@{k}": sum(r.recall(k) for r in results) / n for k in RECALL_AT}
    values[f"MRR@{MRR_WITHIN}"] = sum(r.reciprocal_rank() for r in results) / n
    values.update({f"sR@{k}": sum(r.session_recall(k) for r in results) / n
                   for k in RECALL_AT})
    return {name: round(value, 4) for name, value in values.items()}


def summary(results: Sequence[Ranked]) -> dict[str, Any]:
    """Per category, per fold and overall: the question count and the metrics."""
    rows: dict[str, Any] = {}
    for category in (*CATEGORIES, "all"):
        chosen = [r for r in results if category in ("all", r.category)]
        rows[category] = {"n": len(chosen), **metrics(chosen)}
    folds = {}
    for fold in FOLDS:
        chosen = [r for r in results if r.fold == fold]
        if chosen:
            folds[fold] = {"n": len(chosen), **metrics(chosen)}
    return {"by_category": rows, "by_fold": folds}


TABLE_METRICS = ("R@1", "R@3", "R@6", "R@10", "MRR@10", "sR@10")


def markdown_table(results: Sequence[Ranked]) -> str:
    """Rows: the categories, the folds and ``all``."""
    body = summary(results)
    rows = {**body["by_category"], **{f"fold {f}": v for f, v in body["by_fold"].items()}}
    lines = ["| rows | n | " + " | ".join(TABLE_METRICS) + " |",
             "|---|---:|" + "---:|" * len(TABLE_METRICS)]
    for name, row in rows.items():
        cells = ["-" if row[m] is None else f"{row[m]:.3f}" for m in TABLE_METRICS]
        lines.append(f"| {name} | {row['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def cross_validated(per_variant: Mapping[str, Sequence[Ranked]],
                    select_by: str = "R@10") -> dict[str, Any]:
    """The 2-fold choice: for each fold, the variant best by ``select_by`` on it, and that
    variant's numbers on the other fold (the held-out half); ties go to the earlier variant."""
    chosen: dict[str, Any] = {}
    for tuned, held_out in (("A", "B"), ("B", "A")):
        scores = {}
        for name, results in per_variant.items():
            on = [r for r in results if r.fold == tuned]
            if on:
                scores[name] = metrics(on)[select_by]
        if not scores:
            continue
        best = max(scores, key=lambda name: (scores[name], -list(scores).index(name)))
        held = [r for r in per_variant[best] if r.fold == held_out]
        chosen[f"chosen_on_{tuned}"] = {"variant": best, "select_by": select_by,
                                        f"on_{tuned}": scores[best],
                                        f"held_out_{held_out}": (
                                            {"n": len(held), **metrics(held)} if held else None)}
    return chosen


# --- BM25 over the same turns -----------------------------------------------------------------

BM25_K1, BM25_B = 1.5, 0.75


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased words, stopwords dropped (the platform's list), no stemming."""
    return [w for w in words(text.lower()) if w not in STOPWORDS]


class BM25:
    """Okapi BM25 (k1 1.5, b 0.75, the idf of ``rank_bm25``'s BM25Okapi without its floor)
    over one conversation's turns."""

    def __init__(self, documents: Iterable[tuple[str, str]]) -> None:
        self.ids: list[str] = []
        self.counts: list[Counter[str]] = []
        self.lengths: list[int] = []
        frequency: Counter[str] = Counter()
        for doc_id, text in documents:
            tokens = bm25_tokens(text)
            self.ids.append(doc_id)
            self.counts.append(Counter(tokens))
            self.lengths.append(len(tokens))
            frequency.update(set(tokens))
        n = len(self.ids)
        self.average = sum(self.lengths) / n if n else 0.0
        self.idf = {t: math.log((n - f + 0.5) / (f + 0.5) + 1) for t, f in frequency.items()}

    def top(self, query: str, k: int) -> list[str]:
        terms = [t for t in dict.fromkeys(bm25_tokens(query)) if t in self.idf]
        scored = []
        for index, counts in enumerate(self.counts):
            score = 0.0
            norm = BM25_K1 * (1 - BM25_B + BM25_B * self.lengths[index] / (self.average or 1))
            for term in terms:
                tf = counts.get(term)
                if tf:
                    score += self.idf[term] * tf * (BM25_K1 + 1) / (tf + norm)
            if score > 0:
                scored.append((score, -index))
        scored.sort(reverse=True)
        return [self.ids[-negative] for _, negative in scored[:k]]


def bm25_results(conversations: Sequence[Conversation], folds: Mapping[str, str],
                 k: int) -> list[Ranked]:
    """Every question answered by BM25 over its conversation's turns (the stored text,
    ``"<speaker>: <text>"``), top ``k``."""
    results = []
    for conversation in conversations:
        index = BM25((t.id, t.content()) for t in conversation.turns())
        for question in conversation.questions:
            answered = [[turn] for turn in index.top(question.text, k)]
            results.append(ranked(question.id, conversation.key, question.category,
                                  folds[conversation.key], question.evidence, answered))
    return results
