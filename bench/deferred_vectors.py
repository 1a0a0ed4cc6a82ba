"""Deferred write vectors against today's synchronous ones, side by side (issue #20 item 6).

In alternating rounds (sync, deferred, sync, deferred, ...) into one fresh database (hash
embeddings at ``--dims``, so the provider costs next to nothing and the database work shows),
a single writer calls ``store_memory`` ``--writes`` times per round and this measures:

* PostgreSQL CPU per write: user+system CPU seconds of the server's process tree over the
  round, divided by the writes. For ``deferred`` the round includes draining its jobs the
  way the API worker does (``projection.memory_vectors.drain``, batches of 200) so the
  deferred HNSW inserts are paid inside the round: the comparison is the total cost, and
  ``pg_ms_per_write_by_last_write`` is the part inside the write's request;
* write latency p50/p95 (ms);
* for ``deferred`` only: the time until a write is vector-searchable, with a drain thread
  running alongside as in the API (poll ``--poll-ms``, woken by each write): p50/p95 over
  the round's writes (``agent_memory_chunks`` has its vector; the write's commit to that).

Reports the medians of each kind and the deferred/sync ratios, the machine and the load
average (other processes share the machine: ratios matter, not absolutes).

    .venv/bin/python -m bench.deferred_vectors --rounds 4 --writes 300 --preload 5000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, percentile, synthetic_corpus, write_result
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.vectors import subscribe, unsubscribe
from memory_platform.features.projection.memory_vectors import drain
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-deferred-vectors"


def _server_tree(conn: psycopg.Connection) -> list[psutil.Process]:
    backend = psutil.Process(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    postmaster = backend.parent()
    return [postmaster, *postmaster.children(recursive=True)]


def _pg_cpu(conn: psycopg.Connection) -> float:
    total = 0.0
    for proc in _server_tree(conn):
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def _texts(n: int, seed: int) -> list[str]:
    return [row["content"] for row in synthetic_corpus(n, seed=seed, duplicate_share=0.0,
                                                       invalid_share=0.0)]


class _Drainer(threading.Thread):
    """The API worker's loop on a connection of its own; records when each memory got its
    chunk vectors (seen by the worker right after its batch committed)."""

    def __init__(self, url: str, settings: Settings, poll: float) -> None:
        super().__init__(daemon=True)
        self.settings, self.poll = settings, poll
        self.wake, self.stopping = threading.Event(), False
        # Opened (and closed) by the round, so its backend's CPU is inside the measurement.
        self.conn = psycopg.connect(url)
        register_vector(self.conn)

    def run(self) -> None:
        while not self.stopping:
            self.wake.wait(self.poll)
            self.wake.clear()
            while drain(self.conn, self.settings, 200) == 200:
                pass


def _round(url: str, conn: psycopg.Connection, settings: Settings,
           provider: HashEmbeddingProvider, texts: list[str], mode: str, round_no: int,
           poll: float) -> dict[str, float | None]:
    settings = settings.model_copy(update={"write_vectors": mode})
    ctx = AccessContext(INSTANCE, user_id=f"{mode}-{round_no}")
    latencies, committed = [], {}
    drainer = None
    if mode == "deferred" and poll > 0:
        drainer = _Drainer(url, settings, poll)
        subscribe(drainer.wake)
        drainer.start()
    cpu = _pg_cpu(conn)  # after the drainer connected: its backend is in the tree
    for text in texts:
        started = time.perf_counter()
        stored = store_memory(conn, settings, ctx, MemoryWrite(text, visibility="team"),
                              embedder=provider)
        done = time.perf_counter()
        latencies.append(done - started)
        committed[stored.id] = time.time()
    write_cpu = _pg_cpu(conn) - cpu
    if drainer is not None:
        time.sleep(poll * 3 + 0.5)
        drainer.stopping = True
        drainer.wake.set()
        drainer.join()
        unsubscribe(drainer.wake)
    elif mode == "deferred":
        while drain(conn, settings, 200):
            pass
    total_cpu = _pg_cpu(conn) - cpu
    if drainer is not None:
        drainer.conn.close()
    result: dict[str, float | None] = {
        "pg_ms_per_write": 1000 * total_cpu / len(texts),
        "pg_ms_per_write_by_last_write": 1000 * write_cpu / len(texts),
        "write_p50_ms": 1000 * statistics.median(latencies),
        "write_p95_ms": 1000 * (percentile(latencies, 95) or 0.0),
    }
    if mode == "deferred" and drainer is not None:
        lags = []
        rows = conn.execute(
            "SELECT subject_id, extract(epoch FROM completed_at)"
            " FROM agent_memory_ingestion_outbox WHERE subject_id = ANY(%s)",
            (list(committed),)).fetchall()
        for memory_id, completed in rows:
            if completed is not None:
                lags.append(float(completed) - committed[memory_id])
        result["vector_lag_p50_ms"] = 1000 * statistics.median(lags) if lags else None
        result["vector_lag_p95_ms"] = 1000 * (percentile(lags, 95) or 0.0) if lags else None
        result["vector_lag_missing"] = len(committed) - len(lags)
    conn.commit()
    return result


def _median(rounds: list[dict], key: str) -> float | None:
    values = [r[key] for r in rounds if r.get(key) is not None]
    return statistics.median(values) if values else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each kind")
    parser.add_argument("--writes", type=int, default=300, help="writes per round")
    parser.add_argument("--preload", type=int, default=3000,
                        help="memories written (sync) before the rounds: the corpus size")
    parser.add_argument("--dims", type=int, default=1536, help="hash embedding dimensions")
    parser.add_argument("--poll-ms", type=float, default=200.0,
                        help="deferred: the drain thread's idle poll (0: drain after the "
                             "round, no lag measured)")
    parser.add_argument("--database-url", default=None,
                        help="server to create the fresh database on (default: embedded)")
    parser.add_argument("--name", default="deferred_vectors", help="result file name")
    args = parser.parse_args(argv)

    provider = HashEmbeddingProvider(dimensions=args.dims)
    texts = _texts(args.preload + 2 * args.rounds * args.writes, seed=23)
    preload, texts = texts[:args.preload], texts[args.preload:]
    rounds: dict[str, list[dict]] = {"sync": [], "deferred": []}
    with fresh_database(args.database_url) as url, psycopg.connect(url) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider="hash",
                            hash_embedding_dimensions=args.dims,
                            _env_file=None)  # type: ignore[call-arg]
        ctx = AccessContext(INSTANCE, user_id="preload")
        for text in preload:
            store_memory(conn, settings, ctx, MemoryWrite(text, visibility="team"),
                         embedder=provider)
        conn.commit()
        machine = machine_info(conn)
        for r in range(args.rounds):
            for mode in ("sync", "deferred"):
                batch = texts[:args.writes]
                texts = texts[args.writes:]
                result = _round(url, conn, settings, provider, batch, mode, r,
                                args.poll_ms / 1000)
                rounds[mode].append(result)
                print(f"round {r} {mode:8s} " + "  ".join(
                    f"{k}={v:.2f}" for k, v in result.items() if v is not None), flush=True)
    keys = ["pg_ms_per_write", "pg_ms_per_write_by_last_write", "write_p50_ms", "write_p95_ms"]
    summary = {mode: {k: _median(rounds[mode], k) for k in
                      keys + ["vector_lag_p50_ms", "vector_lag_p95_ms"]}
               for mode in rounds}
    ratios = {k: (summary["deferred"][k] / summary["sync"][k]
                  if summary["sync"][k] else None) for k in keys}
    load = os.getloadavg()
    print(f"machine: {machine['cores']} cores, {machine['cpu']}; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; corpus {args.preload} + "
          f"{2 * args.rounds * args.writes} memories, {args.dims} dims")
    for k in keys:
        print(f"{k:28s} sync {summary['sync'][k]:8.2f}  deferred {summary['deferred'][k]:8.2f}"
              f"  ratio {ratios[k]:.2f}")
    for k in ("vector_lag_p50_ms", "vector_lag_p95_ms"):
        if summary["deferred"][k] is not None:
            print(f"{k:28s} deferred {summary['deferred'][k]:8.1f}")
    write_result(args.name, {"args": vars(args), "machine": machine, "load_average": load,
                             "rounds": rounds, "summary": summary, "ratios": ratios})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
