"""The synthetic corpus of the bench instance: imported into a fresh database, and counted."""

from __future__ import annotations

import sys
import time

import psycopg

from bench.common import synthetic_corpus
from bench.load import CORPUS_SEED, INSTANCE
from memory_platform.features.memories.bulk import import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider


def build_corpus(url: str, n: int, dims: int) -> dict:
    """Import ``n`` synthetic rows (hash embeddings of ``dims``) into ``INSTANCE`` of the
    database at ``url``, then VACUUM ANALYZE; answers the import's numbers."""
    settings = Settings(database_url=url, embedding_provider="hash",
                        hash_embedding_dimensions=dims,
                        _env_file=None)  # type: ignore[call-arg]
    provider = HashEmbeddingProvider(dims)
    last = [time.perf_counter()]

    def progress(stats) -> None:
        if time.perf_counter() - last[0] > 15:
            last[0] = time.perf_counter()
            print(f"  ... {stats.rows:,} rows read, {stats.accepted:,} accepted",
                  file=sys.stderr, flush=True)

    with psycopg.connect(url, autocommit=True) as conn:
        print(f"importing {n:,} memories (hash embeddings, {dims} dims) ...", file=sys.stderr,
              flush=True)
        stats = import_memories(conn, settings, context_from_row(INSTANCE),
                                synthetic_corpus(n, seed=CORPUS_SEED), embedder=provider,
                                expected_rows=n, progress=progress)
        conn.execute("VACUUM ANALYZE")
    print(f"imported {stats.accepted:,} memories in {stats.seconds:.0f} s "
          f"(index build {stats.index_seconds:.0f} s)", file=sys.stderr, flush=True)
    return {"rows": n, "accepted": stats.accepted, "deduplicated": stats.deduplicated,
            "rejected": len(stats.rejected), "chunks": stats.chunks,
            "import_seconds": round(stats.seconds, 1),
            "index_build_seconds": round(stats.index_seconds, 1)}


def corpus_facts(conn: psycopg.Connection) -> dict:
    """Memories (and how many the API wrote), chunks and the chunk table's size now."""
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE metadata ->> 'writtenVia' = 'api')"
        "  FROM agent_memories WHERE instance_key = %s", (INSTANCE,)).fetchone()
    chunks = conn.execute("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s",
                          (INSTANCE,)).fetchone()[0]
    return {"memories": row[0], "written_by_earlier_runs": row[1], "chunks": chunks,
            "chunks_table_size": conn.execute(
                "SELECT pg_size_pretty(pg_total_relation_size('agent_memory_chunks'))"
            ).fetchone()[0]}
