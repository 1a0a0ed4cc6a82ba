"""The same answer from every process (issue 29, deliverable 6): two separate Python
processes asking the same questions over the same rows get the same rankings and the same
scores, bit for bit: a process that has been answering for a while and a fresh one, after
writes and after an ANALYZE that drew a different sample of the chunks.

The rarity weights and the common-word rule used to read the planner statistics
(``pg_stats``) and cache them per process: the process started before the ANALYZE kept the
old sample, the fresh one read the new (retrieval/lexicon.py now reads exact counts).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from tests.support.settings import hash_embedding_settings

ROOT = Path(__file__).resolve().parents[2]
USER = "ada"
NAMES = ["Anna", "Ben", "Clara", "Dieter"]
TOPICS = ["invoice", "payroll", "audit", "pension", "lease", "merger", "dividend", "tariff",
          "insurance", "mortgage", "customs", "royalty", "warranty", "subsidy", "escrow",
          "annuity"]
QUESTIONS = [
    "What did Anna say about the invoice and the audit?",
    "Ben escrow annuity subsidy",
    "Which pension or lease did Clara mention?",
    "Dieter royalty warranty customs tariff",
    "merger dividend insurance",
    "Anna Ben Clara payroll",
]

# A process that answers every line it reads: each question searched with the hash
# embedding and keyword-only (the embedding service down), as the JSON of its hits.
CHILD = """
import json, sys
import psycopg
from pgvector.psycopg import register_vector
from memory_platform.shared.access import AccessContext
from memory_platform.features.retrieval.search import search_memories
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

url, instance, user, data_dir = sys.argv[1:5]
questions = json.loads(sys.argv[5])
settings = hash_embedding_settings(url, data_dir=data_dir)
ctx = AccessContext(instance, user_id=user)
with psycopg.connect(url, autocommit=True) as conn:
    register_vector(conn)
    for _ in sys.stdin:
        answers = [[[str(h.memory_id), h.score, h.keyword_score, h.vector_score]
                    for h in search_memories(conn, settings, ctx, q, limit=10, stamp=False,
                                             embedder=embedder)]
                   for q in questions for embedder in (None, OutageEmbedder())]
        print(json.dumps(answers), flush=True)
"""


class Searcher:
    """One separate Python process of this checkout, kept running between questions."""

    def __init__(self, database_url: str, instance: str, data_dir: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, database_url, instance, USER, str(data_dir),
             json.dumps(QUESTIONS)],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def ask(self) -> list:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write("ask\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise AssertionError(f"the search process died: {self.process.stderr.read()}")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def searchers(database_url: str, instance: str, tmp_path: Path) -> Iterator:
    started: list[Searcher] = []

    def start() -> Searcher:
        started.append(Searcher(database_url, instance, tmp_path / f"state-{len(started)}"))
        return started[-1]

    yield start
    for searcher in started:
        searcher.close()


def turns(rng: random.Random, count: int, start: int) -> list[dict]:
    """Lines of a bulk import: a speaker (some far more often than others) and topics of
    very different frequency, so every weight and the common-word rule matter."""
    lines = []
    for n in range(start, start + count):
        name = rng.choices(NAMES, weights=[8, 4, 2, 1])[0]
        topics = rng.choices(TOPICS, weights=[1 / (i + 1) for i in range(len(TOPICS))], k=3)
        lines.append({"content": f"{name}: note {n} on the {topics[0]}, the {topics[1]} and"
                                 f" the {topics[2]}.", "visibility": "private",
                      "user_id": USER})
    return lines


def load(conn, database_url: str, instance: str, tmp_path: Path, lines: list[dict]) -> None:
    """The bulk import, as the searching processes' provider embeds (hash, 1536)."""
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    outcome = import_memories(conn, settings, context_from_row(instance), lines,
                              rebuild_index=False)
    assert outcome.accepted == len(lines), outcome


def test_two_processes_rank_alike_after_writes_and_a_new_analyze_sample(
        conn, database_url, instance, tmp_path, searchers):
    rng = random.Random(29)
    load(conn, database_url, instance, tmp_path, turns(rng, 900, 0))
    conn.execute("ANALYZE agent_memory_chunks")

    running = searchers()
    first = running.ask()
    assert first == searchers().ask()                  # two fresh processes
    assert any(any(h[2] for h in hits) for hits in first)  # keyword scores take part

    load(conn, database_url, instance, tmp_path, turns(rng, 300, 900))   # writes
    after_writes = running.ask()
    assert after_writes != first
    assert after_writes == searchers().ask()

    # A sample of 300 rows instead of all of them: other words, other frequencies.
    conn.execute("SET default_statistics_target = 1")
    conn.execute("ANALYZE agent_memory_chunks")
    conn.execute("RESET default_statistics_target")
    assert running.ask() == searchers().ask() == after_writes
