"""The retrieval-quality benchmark (``memory-platform bench retrieval``).

Seeds labelled German/English fixture memories through the normal write path (chunking,
embedding, dedup), asks one paraphrased question per fixture through ``search_memories``
as the right user, and reports per-query ranks, Precision@1, Recall@3, Recall@6 and MRR;
then the same ranking under other vector/keyword weights, and how many off-topic questions
(the generated conversations suite's, about people's lives, asked of this tax-advisory
workspace) answer anything above ``minScore`` (docs/retrieval-scores.md). Fixtures are
deleted afterwards
unless kept. By default it runs in its own instance per provider, so switching the embedding
model for the benchmark never touches a real instance's active generation; ``--instance``
runs it among real memories instead, which is what production retrieval competes with.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider

FIXTURES = Path(__file__).with_name("retrieval_fixtures.json")
WEIGHTINGS = ((0.8, 0.2), (1.0, 0.0), (0.5, 0.5), (0.0, 1.0))
TEAM_MEMBER = "bench-team-member"
MEMORY_CLASS = "benchmark"


@dataclass
class QueryResult:
    key: str
    query: str
    rank: int | None  # 1-based rank of the labelled memory, None when not in the results


@dataclass
class Report:
    provider: str
    model: str
    weights: tuple[float, float]
    results: list[QueryResult] = field(default_factory=list)
    seconds_per_query: float = 0.0
    off_topic: dict[str, Any] | None = None  # {"questions", "answered": share}

    def metric(self, name: str) -> float:
        ranks = [r.rank for r in self.results]
        n = len(ranks) or 1
        if name == "precision@1":
            return sum(r == 1 for r in ranks) / n
        if name.startswith("recall@"):
            k = int(name.split("@")[1])
            return sum(r is not None and r <= k for r in ranks) / n
        if name == "mrr":
            return sum(1 / r for r in ranks if r) / n
        raise KeyError(name)

    def summary(self) -> dict[str, Any]:
        return {
            "provider": self.provider, "model": self.model,
            "weights": {"vector": self.weights[0], "keyword": self.weights[1]},
            "queries": len(self.results),
            **{m: round(self.metric(m), 4) for m in ("precision@1", "recall@3", "recall@6",
                                                      "mrr")},
            "ms_per_query": round(self.seconds_per_query * 1000, 2),
            **({"off_topic": self.off_topic} if self.off_topic is not None else {}),
        }


def load_fixtures(path: Path = FIXTURES) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["memories"]


def _context(instance_key: str, fixture: dict[str, Any], *, asking: bool) -> AccessContext:
    user = fixture["query"]["asked_by"] if asking else fixture.get("user_id")
    if fixture["visibility"] == "private":
        return AccessContext(instance_key, user_id=user or fixture["user_id"])
    return AccessContext(instance_key, user_id=user or TEAM_MEMBER)


def seed(conn: psycopg.Connection, settings: Settings, instance_key: str,
         fixtures: list[dict[str, Any]], provider: EmbeddingProvider) -> dict[str, str]:
    """Write each fixture through store_memory; answer key -> memory id."""
    ids = {}
    for fixture in fixtures:
        stored = store_memory(
            conn, settings, _context(instance_key, fixture, asking=False),
            MemoryWrite(content=fixture["content"], source_type="manual",
                        memory_class=MEMORY_CLASS, visibility=fixture["visibility"],
                        subject_refs=fixture.get("subject_refs") or {},
                        metadata={"benchmarkKey": fixture["key"]}),
            embedder=provider,
        )
        ids[fixture["key"]] = str(stored.id)
    return ids


def cleanup(conn: psycopg.Connection, instance_key: str) -> int:
    """Delete the benchmark's memories (chunks cascade) and their source envelopes."""
    with conn.transaction():
        deleted = conn.execute(
            "DELETE FROM agent_memories WHERE instance_key = %s"
            " AND metadata ->> 'memoryClass' = %s RETURNING source_id",
            (instance_key, MEMORY_CLASS),
        ).fetchall()
        conn.execute(
            "DELETE FROM agent_memory_sources WHERE instance_key = %s AND id = ANY(%s)",
            (instance_key, [r[0] for r in deleted if r[0]]),
        )
    return len(deleted)


def evaluate(conn: psycopg.Connection, settings: Settings, instance_key: str,
             fixtures: list[dict[str, Any]], ids: dict[str, str], provider: EmbeddingProvider,
             weights: tuple[float, float], limit: int = 6) -> Report:
    tuned = settings.model_copy(update={"retrieval_vector_weight": weights[0],
                                        "retrieval_keyword_weight": weights[1]})
    report = Report(provider.provider, provider.model, weights)
    started = time.perf_counter()
    for fixture in fixtures:
        hits = search_memories(conn, tuned, _context(instance_key, fixture, asking=True),
                               fixture["query"]["text"], limit=limit, embedder=provider,
                               stamp=False)
        found = [str(h.memory_id) for h in hits]
        wanted = ids[fixture["key"]]
        rank = found.index(wanted) + 1 if wanted in found else None
        report.results.append(QueryResult(fixture["key"], fixture["query"]["text"], rank))
    report.seconds_per_query = (time.perf_counter() - started) / max(1, len(fixtures))
    return report


def off_topic(conn: psycopg.Connection, settings: Settings, instance_key: str,
              provider: EmbeddingProvider, limit: int = 6) -> dict[str, Any]:
    """The generated conversations' questions asked as a team member of the fixtures'
    workspace: the share that answers anything (scores above ``minScore``)."""
    from memory_platform.features.benchmarks.conversations.generate import generate
    questions = [q.text for c in generate() for q in c.questions]
    ctx = AccessContext(instance_key, user_id=TEAM_MEMBER)
    answered = sum(bool(search_memories(conn, settings, ctx, text, limit=limit,
                                        embedder=provider, stamp=False))
                   for text in questions)
    return {"questions": len(questions), "answered": round(answered / len(questions), 4)}


def run(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider, *,
        instance_key: str | None = None, keep: bool = False,
        echo: Callable[[str], None] = print) -> list[Report]:
    instance_key = instance_key or f"bench-retrieval-{provider.provider}"
    fixtures = load_fixtures()
    echo(f"seeding {len(fixtures)} fixtures into instance {instance_key!r} "
         f"with {provider.provider}:{provider.model} ...")
    started = time.perf_counter()
    cleanup(conn, instance_key)
    ids = seed(conn, settings, instance_key, fixtures, provider)
    echo(f"seeded in {time.perf_counter() - started:.1f}s")
    try:
        reports = [evaluate(conn, settings, instance_key, fixtures, ids, provider, w)
                   for w in WEIGHTINGS]
        reports[0].off_topic = off_topic(conn, settings, instance_key, provider)
    finally:
        if not keep:
            echo(f"deleted {cleanup(conn, instance_key)} fixture memories")
    main = reports[0]
    for result in main.results:
        echo(f"  {result.rank or '-':>2}  {result.key:<40} {result.query[:70]}")
    for report in reports:
        echo(json.dumps(report.summary()))
    return reports

