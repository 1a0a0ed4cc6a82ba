"""What a listing costs at scale (``GET /api/v1/memories``, issue 33): the library's
``list_memories`` beside ``search_memories`` on one corpus.

``python -m bench.memory_listing [--memories 100000] [--rounds 5] [--calls 40]``

A fresh embedded database with ``--memories`` rows of bench.common's synthetic corpus
(bulk import, hash embeddings of 256 dimensions), VACUUM ANALYZE. Random callers (the mix of
bench/retrieval_latency.py: users, channel members, system contexts). Per round, in an order
that alternates, ``--calls`` calls of each kind:

- ``search``: ``search_memories`` of a natural question (limit 10), the reference;
- ``list``: the first page of 50, no filter;
- ``list_selective``: a filter that about 0.2 % of the memories meet (``metadata.batch``);
- ``list_none``: a filter no memory meets (the worst case: every visible row is read);
- ``list_page_20``: the 20th page of 50 (the cursor after 950 memories, read untimed).

Prints p50/p95 per kind and its ratio to ``search``; writes
bench/results/memory_listing.json with the machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, percentile, synthetic_corpus, write_result
from bench.retrieval_latency import QUESTIONS, random_context
from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.retrieval.criteria import parse_criteria
from memory_platform.features.retrieval.memories import list_memories
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-listing"
DIMS = 256


def _kinds(conn: psycopg.Connection, settings: Settings, provider: HashEmbeddingProvider,
           rng: random.Random) -> dict[str, Callable[[AccessContext], Callable[[], object]]]:
    """Each kind prepares its call for a caller (untimed) and answers the call to time."""
    selective = parse_criteria({"metadata.batch": {"eq": 7}})
    nothing = parse_criteria({"metadata.batch": {"eq": -1}})

    def page_20(ctx: AccessContext) -> Callable[[], object]:
        cursor = None
        for _ in range(19):          # the cursor after 950 memories, read page by page
            cursor = list_memories(conn, ctx, limit=50, cursor=cursor).next_cursor
            if cursor is None:       # fewer memories visible: the last page instead
                break
        return lambda: list_memories(conn, ctx, limit=50, cursor=cursor)

    def search(ctx: AccessContext) -> Callable[[], object]:
        question = rng.choice(QUESTIONS)
        return lambda: search_memories(conn, settings, ctx, question, limit=10,
                                       embedder=provider, stamp=False)

    return {
        "search": search,
        "list": lambda ctx: lambda: list_memories(conn, ctx, limit=50),
        "list_selective": lambda ctx: lambda: list_memories(conn, ctx, criteria=selective,
                                                            limit=50),
        "list_none": lambda ctx: lambda: list_memories(conn, ctx, criteria=nothing, limit=50),
        "list_page_20": page_20,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=40, help="calls of each kind per round")
    p.add_argument("--database-url", default=None, help="a server to create the database on")
    p.add_argument("--result-name", default="memory_listing")
    args = p.parse_args(argv)

    with fresh_database(args.database_url) as url, psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider="hash",
                            hash_embedding_dimensions=DIMS, _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(DIMS)
        started = time.perf_counter()
        print(f"importing {args.memories:,} memories ...", flush=True)
        stats = import_memories(conn, settings, context_from_row(INSTANCE),
                                synthetic_corpus(args.memories, seed=7), embedder=provider,
                                expected_rows=args.memories, rebuild_index=True)
        conn.execute("VACUUM ANALYZE")
        print(f"imported {stats.accepted:,} in {time.perf_counter() - started:.0f} s", flush=True)
        rng = random.Random(11)
        kinds = _kinds(conn, settings, provider, rng)
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for prepare in kinds.values():                        # warm up every kind
            prepare(random_context(rng, INSTANCE))()
        for r in range(args.rounds):
            order = list(kinds) if r % 2 == 0 else list(kinds)[::-1]
            for name in order:
                for _ in range(args.calls):
                    call = kinds[name](random_context(rng, INSTANCE))
                    begun = time.perf_counter()
                    call()
                    times[name].append(time.perf_counter() - begun)
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{k} {statistics.median(v) * 1000:.2f} ms" for k, v in times.items()),
                flush=True)
        machine = machine_info(conn)

    search_p50 = statistics.median(times["search"])
    summary = {name: {"p50_ms": round(statistics.median(v) * 1000, 2),
                      "p95_ms": round(percentile(v, 95) * 1000, 2),
                      "p50_vs_search": round(statistics.median(v) / search_p50, 2),
                      "calls": len(v)} for name, v in times.items()}
    print(f"\n{'kind':16} {'p50 ms':>8} {'p95 ms':>8} {'p50 / search':>13}")
    for name, row in summary.items():
        print(f"{name:16} {row['p50_ms']:8} {row['p95_ms']:8} {row['p50_vs_search']:13}")
    path = write_result(args.result_name, {
        "machine": machine, "settings": {"memories": args.memories, "accepted": stats.accepted,
                                         "dims": DIMS, "rounds": args.rounds,
                                         "calls_per_kind_per_round": args.calls},
        "summary": summary})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
