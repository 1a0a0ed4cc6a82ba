"""Write throughput of the bulk import (``import_memories``) with hash embeddings.

Generates a synthetic German/English corpus (default 100,000 memories), imports it into a
fresh database (an embedded server in a temporary directory, or ``--database-url``'s server)
and reports the load phase, the HNSW index build and the total, in seconds and rows/s, plus the
machine it ran on. Results go to stdout and bench/results/write_throughput.json.

    .venv/bin/python bench/write_throughput.py --n 100000
    .venv/bin/python bench/write_throughput.py --n 20000 --profile /tmp/import.prof

The issue's target: >= 1,000 memories/s for 100,000 memories, index build included.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import (
    fresh_database,
    machine_info,
    synthetic_corpus,
    write_result,
)
from memory_platform.features.memories.bulk import ImportStats, import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-import"


def _progress(every: float):
    last = [0.0]
    started = time.perf_counter()

    def report(stats: ImportStats) -> None:
        now = time.perf_counter()
        if now - last[0] >= every:
            last[0] = now
            rate = stats.rows / (now - started) if now > started else 0.0
            print(f"  {stats.rows:>9,} rows  {rate:>7,.0f} rows/s  accepted {stats.accepted:,}"
                  f"  deduplicated {stats.deduplicated:,}  rejected {len(stats.rejected):,}",
                  file=sys.stderr, flush=True)

    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories to import")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--database-url", default=None,
                        help="server to create the bench database on (default: embedded)")
    parser.add_argument("--rebuild-index", choices=("auto", "yes", "no"), default="auto")
    parser.add_argument("--dimensions", type=int, default=None,
                        help="hash embedding dimensions (default: the setting, 1536)")
    parser.add_argument("--loaders", type=int, default=None,
                        help="concurrent loader connections (default: the setting, 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", type=Path, default=None,
                        help="write a cProfile of the import to this file")
    parser.add_argument("--name", default="write_throughput", help="result file name")
    parser.add_argument("--keep", action="store_true",
                        help="keep the database on --database-url's server afterwards")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()
    print(f"generating {args.n:,} memories ...", file=sys.stderr)
    t0 = time.perf_counter()
    corpus = list(synthetic_corpus(args.n, seed=args.seed))
    generate_seconds = time.perf_counter() - t0
    chars = sum(len(row["content"]) for row in corpus)

    with fresh_database(args.database_url, keep=args.keep) as url:
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(args.dimensions or settings.hash_embedding_dimensions)
        rebuild = {"auto": None, "yes": True, "no": False}[args.rebuild_index]
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            machine = machine_info(conn)
            print(f"importing into PostgreSQL {machine['postgresql']} on {machine['cores']} "
                  f"cores ...", file=sys.stderr)
            profiler = cProfile.Profile() if args.profile else None
            if profiler:
                profiler.enable()
            stats = import_memories(conn, settings, context_from_row(INSTANCE), corpus,
                                    embedder=provider, batch_size=args.batch_size,
                                    progress=_progress(5.0), rebuild_index=rebuild,
                                    loaders=args.loaders)
            if profiler:
                profiler.disable()
                profiler.dump_stats(args.profile)
            machine["load_average_1m_after"] = round(os.getloadavg()[0], 2)
            chunks, size = conn.execute(
                "SELECT count(*), pg_size_pretty(pg_total_relation_size('agent_memory_chunks'))"
                " FROM agent_memory_chunks").fetchone()

    result = {
        "rows": stats.rows,
        "accepted": stats.accepted,
        "deduplicated": stats.deduplicated,
        "rejected": len(stats.rejected),
        "chunks": chunks,
        "assertions_created": stats.assertions_created,
        "embedding": {"provider": provider.provider, "model": provider.model,
                      "dimensions": provider.dimensions},
        "corpus": {"mean_chars": round(chars / max(1, len(corpus))),
                   "generate_seconds": round(generate_seconds, 2)},
        "batch_size": args.batch_size or settings.import_batch_size,
        "index_rebuilt": stats.index_rebuilt,
        "load_seconds": round(stats.load_seconds, 2),
        "load_rows_per_second": round(stats.load_rows_per_second, 1),
        "index_build_seconds": round(stats.index_seconds, 2),
        "fulltext_rebuilt": stats.fulltext_rebuilt,
        "fulltext_build_seconds": round(stats.fulltext_seconds, 2),
        "loaders": args.loaders or settings.import_loaders,
        "total_seconds": round(stats.seconds, 2),
        "total_rows_per_second": round(stats.rows_per_second, 1),
        "chunks_table_size": size,
        "target_rows_per_second": 1000,
        "machine": machine,
        "load_average_before": [round(x, 2) for x in load_before],
        "settings": {"maintenance_work_mem": settings.index_build_maintenance_work_mem,
                     "max_parallel_maintenance_workers": settings.index_build_parallel_workers},
    }
    target = write_result(args.name, result)
    print(f"rows {stats.rows:,}  accepted {stats.accepted:,}  deduplicated "
          f"{stats.deduplicated:,}  rejected {len(stats.rejected):,}  chunks {chunks:,}")
    print(f"load   {stats.load_seconds:8.1f} s  {stats.load_rows_per_second:8,.0f} rows/s")
    print(f"index  {stats.index_seconds:8.1f} s  (HNSW rebuilt: {stats.index_rebuilt}; GIN "
          f"rebuilt: {stats.fulltext_rebuilt}, {stats.fulltext_seconds:.1f} s of it)")
    print(f"total  {stats.seconds:8.1f} s  {stats.rows_per_second:8,.0f} rows/s  "
          f"(target >= 1,000)")
    print(f"load average before {load_before[0]:.2f}, after "
          f"{machine['load_average_1m_after']:.2f}")
    print(f"machine: {machine['cores']} cores, {machine['ram_gb']} GB RAM, {machine['cpu']}, "
          f"PostgreSQL {machine['postgresql']}, pgvector {machine['pgvector']}")
    if args.keep:
        print(f"kept the database: {url}")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
