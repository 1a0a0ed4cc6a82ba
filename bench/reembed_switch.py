"""Re-embedding throughput after a model switch, on a live instance.

Imports a synthetic corpus (default 2,000 memories) with the hash embedding at 64 dimensions
into a fresh database (an embedded server in a temporary directory, or ``--database-url``'s
server), switches the instance to the hash embedding at 32 dimensions (standing in for
another model: another generation key), and converts the whole backlog (chunks, assertions,
graph items) batch by batch. Between two batches another connection writes a memory and
runs a search, as a live system would; their latencies are reported, and their time is not
counted as conversion time. Reports rows/s converted. Results go to stdout and
bench/results/reembed_switch.json.

    .venv/bin/python -m bench.reembed_switch --memories 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, percentile, synthetic_corpus, write_result
from memory_platform.features.maintenance.reembedding import KINDS, convert
from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.projection.switch import switch_generation
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-reembed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=2_000, help="memories to import")
    parser.add_argument("--old-dimensions", type=int, default=64)
    parser.add_argument("--new-dimensions", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="rows per batch (default MEMORY_REEMBED_BATCH_SIZE's default)")
    parser.add_argument("--database-url", default=None,
                        help="server to create the bench database on (default: embedded)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--name", default="reembed_switch", help="result file name")
    args = parser.parse_args(argv)

    corpus = list(synthetic_corpus(args.memories, seed=args.seed))
    old = HashEmbeddingProvider(args.old_dimensions)
    new = HashEmbeddingProvider(args.new_dimensions)
    with fresh_database(args.database_url) as url:
        base = Settings(database_url=url, embedding_provider="hash", instance_key=INSTANCE,
                        hash_embedding_dimensions=args.new_dimensions,
                        _env_file=None)  # type: ignore[call-arg]
        settings = (base.model_copy(update={"reembed_batch_size": args.batch_size})
                    if args.batch_size else base)
        with psycopg.connect(url, autocommit=True) as conn, \
                psycopg.connect(url, autocommit=True) as live:
            register_vector(conn)
            register_vector(live)
            machine = machine_info(conn)
            print(f"importing {len(corpus):,} memories at {old.dimensions} d ...",
                  file=sys.stderr)
            stats = import_memories(conn, settings, context_from_row(INSTANCE), corpus,
                                    embedder=old)
            t0 = time.perf_counter()
            generation = switch_generation(conn, settings, new, instance_key=INSTANCE)
            switch_seconds = time.perf_counter() - t0
            ctx = AccessContext(INSTANCE, user_id=corpus[0].get("user_id") or "bench")
            writes: list[float] = []
            searches: list[float] = []
            words = corpus[0]["content"].split()[:3]

            def between_batches(totals) -> None:
                t = time.perf_counter()
                store_memory(live, settings, ctx, MemoryWrite(
                    f"Live write {len(writes)} while re-embedding.", visibility="team",
                    trust_class="human_direct"), embedder=new)
                writes.append(time.perf_counter() - t)
                t = time.perf_counter()
                search_memories(live, settings, ctx, " ".join(words), embedder=new,
                                stamp=False)
                searches.append(time.perf_counter() - t)

            print(f"converting to {generation.generation_key} ...", file=sys.stderr)
            t0 = time.perf_counter()
            result = convert(conn, settings, INSTANCE, embedder=new, progress=between_batches)
            elapsed = time.perf_counter() - t0
            live_seconds = sum(writes) + sum(searches)
            convert_seconds = elapsed - live_seconds
            old_left = conn.execute(
                "SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
                " AND embedding_key IS DISTINCT FROM %s",
                (INSTANCE, generation.generation_key)).fetchone()[0]

    def ms(values: list[float], q: float) -> float | None:
        value = percentile(values, q)
        return None if value is None else round(value * 1000, 1)

    payload = {
        "memories": args.memories, "imported": stats.accepted,
        "from": f"hash {old.dimensions} d", "to": generation.generation_key,
        "batch_size": settings.reembed_batch_size,
        "switch_seconds": round(switch_seconds, 3),
        "converted": result.converted, "remaining": result.remaining,
        "batches": result.batches, "error": result.error,
        "convert_seconds": round(convert_seconds, 2),
        "rows_per_second": round(result.total_converted / convert_seconds, 1)
        if convert_seconds > 0 else None,
        "live_writes": len(writes), "write_ms_p50": ms(writes, 50), "write_ms_p95": ms(writes, 95),
        "search_ms_p50": ms(searches, 50), "search_ms_p95": ms(searches, 95),
        "chunks_left_in_old_generation": old_left,
        "machine": machine,
    }
    target = write_result(args.name, payload)
    done = ", ".join(f"{result.converted[k]:,} {k}" for k in KINDS)
    print(f"switch {switch_seconds:.2f} s; converted {done} in {result.batches} batches, "
          f"{convert_seconds:.2f} s: {payload['rows_per_second']} rows/s; backlog "
          f"{result.total_remaining}")
    print(f"{len(writes)} writes between batches (p50 {payload['write_ms_p50']} ms), "
          f"searches p50 {payload['search_ms_p50']} ms p95 {payload['search_ms_p95']} ms")
    print(f"result: {target}")
    return 1 if result.error or result.total_remaining else 0


if __name__ == "__main__":
    sys.exit(main())
