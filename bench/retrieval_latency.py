"""Latency of the library-level hybrid search (``search_memories``) over a large corpus.

Imports a synthetic German/English corpus (default 100,000 memories, hash embeddings) into a
fresh database through the bulk import (HNSW and GIN indexes built), then runs natural
questions from random callers (private, team, workspace and channel contexts) and reports
p50/p95/p99 in milliseconds, the plan of the candidate query (HNSW + GIN in use) and the
machine. Results: stdout and bench/results/retrieval_latency.json (``--results-dir``: another
directory, e.g. one per run of bench/retrieval_compare.py).

    .venv/bin/python bench/retrieval_latency.py --n 100000 --queries 1000

``--reuse URL`` measures a database that already holds a corpus (e.g. the one
``python -m bench.load --import-only --keep`` left; pending migrations are applied) instead
of importing a new one: iterate on the query path without a four-minute import each time.

The issue's target: p95 <= 10 ms at 100,000 memories with hash embeddings.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import (
    PROJECT_ROOT,
    RESULTS_DIR,
    fresh_database,
    machine_info,
    percentile,
    synthetic_corpus,
    write_result,
)
from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.db import migrations
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

DEFAULT_INSTANCE = "bench-latency"
QUESTIONS = (
    "Wann ist die Umsatzsteuervoranmeldung für {company} fällig?",
    "Who covers the account while {person} is on parental leave?",
    "Welche Bankverbindung hat {company} jetzt?",
    "What caused the {product} outage?",
    "Wie möchte {person} Unterlagen erhalten?",
    "When is the quarterly review with {company}?",
    "Wer betreut die Lohnabrechnung von {company}?",
    "Why was the invoice for {company} disputed?",
    "Wann ist die Inventur bei {company} geplant?",
    "Who owns the migration of the {product}?",
    # Identifiers: the keyword arm (GIN) finds these; common words alone do not.
    "Why was invoice {number} disputed?",
    "Welche Belege fehlen zur Position {number}?",
)
COMPANIES = ("Nordlicht GmbH", "Alpen Logistik AG", "Elbtal Software", "Isar Energie",
             "Brandt Steuerberatung", "Spree Medien")
PEOPLE = ("Anna Müller", "Jonas Schmidt", "Lea Weber", "Paul Becker", "Emma Koch")
PRODUCTS = ("billing service", "customer portal", "search API", "payment gateway")


def random_context(rng: random.Random, instance: str) -> AccessContext:
    user = f"user-{rng.randint(0, 49):03d}"
    pick = rng.random()
    if pick < 0.6:
        return AccessContext(instance, user_id=user)
    if pick < 0.8:
        return AccessContext(instance, user_id=user, channel_type="slack",
                             channel_thread_key=f"C{rng.randint(100, 999)}/1700000000.0001")
    return AccessContext(instance)


@contextmanager
def reused_database(url: str) -> Iterator[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, PROJECT_ROOT / "migrations")
    yield url


def largest_instance(conn: psycopg.Connection) -> tuple[str, int]:
    return conn.execute("SELECT instance_key, count(*) FROM agent_memories"
                        " GROUP BY 1 ORDER BY 2 DESC LIMIT 1").fetchone()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories in the corpus")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--reuse", default=None, metavar="URL",
                        help="measure this database's corpus instead of importing one")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR,
                        help="where retrieval_latency.json goes")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    database = reused_database(args.reuse) if args.reuse else fresh_database(args.database_url)
    with database as url:
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            if args.reuse:
                instance, corpus_size = largest_instance(conn)
            else:
                instance = DEFAULT_INSTANCE
                print(f"importing {args.n:,} memories ...", file=sys.stderr, flush=True)
                stats = import_memories(conn, settings, context_from_row(instance),
                                        synthetic_corpus(args.n), embedder=provider)
                corpus_size = stats.accepted
                print(f"imported {stats.accepted:,} in {stats.seconds:.0f}s", file=sys.stderr)
            conn.execute("VACUUM ANALYZE")
            print(f"querying {corpus_size:,} memories ...", file=sys.stderr, flush=True)

            def one() -> tuple[float, int]:
                question = rng.choice(QUESTIONS).format(
                    company=rng.choice(COMPANIES), person=rng.choice(PEOPLE),
                    product=rng.choice(PRODUCTS), number=rng.randint(1000, 99999))
                ctx = random_context(rng, instance)
                started = time.perf_counter()
                hits = search_memories(conn, settings, ctx, question, embedder=provider,
                                       stamp=False)
                return (time.perf_counter() - started) * 1000, len(hits)

            for _ in range(args.warmup):
                one()
            samples = [one() for _ in range(args.queries)]
            plan: list[str] = []
            search_memories(conn, settings, AccessContext(instance, user_id="user-001"),
                            "Why was invoice 48213 for Nordlicht GmbH disputed?",
                            embedder=provider, stamp=False, explain=plan)
            machine = machine_info(conn)

    latencies = [ms for ms, _ in samples]
    result = {
        "corpus_memories": corpus_size,
        "queries": len(samples),
        "embedding": {"provider": provider.provider, "dimensions": provider.dimensions},
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "p99_ms": round(percentile(latencies, 99), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        "mean_hits": round(statistics.fmean(h for _, h in samples), 2),
        "uses_hnsw": any("hnsw" in line for line in plan),
        "uses_gin": any("tsv_idx" in line for line in plan),
        "plan": plan,
        "target_p95_ms": 10,
        "machine": machine,
    }
    target = write_result("retrieval_latency", result, args.results_dir)
    print("\n".join(plan))
    print(f"{len(samples)} queries over {corpus_size:,} memories: p50 {result['p50_ms']} ms, "
          f"p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms (target p95 <= 10 ms); "
          f"HNSW {result['uses_hnsw']}, GIN {result['uses_gin']}")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
