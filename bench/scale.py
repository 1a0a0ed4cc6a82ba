"""How cost grows with the corpus (issue #20): search latency, API read latency, CPU per search
and the bulk import rate at 10,000 / 100,000 / 1,000,000 memories.

For each corpus size in ``--sizes`` and each dimension count in ``--dims`` (plus the
``--compare`` points, default 100,000 memories at 1,536 dimensions), on one embedded server
with a generous shared_buffers (``--shared-buffers``; ``--pgdata``, removed afterwards unless
``--keep``), in a fresh database per point:

1. **import**: the synthetic corpus of ``bench.load`` (seed 7, hash embeddings) through the
   bulk import (``import_memories``, HNSW and GIN swapped out and built after, at every size),
   timed as load phase and index build; rows/s = input rows / seconds. VACUUM ANALYZE after,
   not counted. maintenance_work_mem of the build: ``--maintenance-work-mem`` (auto: enough
   for the HNSW graph of the size, at least 1GB).
2. **library**: ``search_memories`` over natural questions from random callers (as
   bench/retrieval_latency.py does), ``--queries`` after ``--warmup-queries``, on a warm
   server (pg_prewarm): p50/p95/p99 ms, and the CPU per query (this process + PostgreSQL).
3. **api**: the real API (``python -m memory_platform api``, ``--workers``) as a subprocess,
   open-loop reads (``GET /api/v1/memory``, bench.load's workload) at ``--rate`` for
   ``--duration`` s after ``--warmup`` s: p50/p95/p99 and errors.
4. **cpu**: ``--cpu-rounds`` alternating pairs: an API batch (open loop at ``--rate`` for
   ``--cpu-seconds``, no warmup; CPU of the API process tree + the PostgreSQL server tree
   / searches answered), then a bare pgvector top-k batch of the same questions' vectors
   (``SELECT id FROM agent_memory_chunks WHERE embedding_key = <generation> ORDER BY
   embedding::halfvec(d) <=> $1::halfvec(d) LIMIT k``: the HNSW index's expression and
   predicate, k = the search's vector candidates max(limit + 2, 8), the search's planner
   settings: iterative scan relaxed_order, ef_search max(retrieval_hnsw_ef_search, k)), one
   query per transaction on one connection; CPU of the PostgreSQL server tree / queries.
   Ratios per round, median reported: API (API + PostgreSQL) CPU per request over bare
   PostgreSQL CPU per query, and the PostgreSQL share alone over the same.
5. **import ratio** (at ``--ratio-size``, first dimension count only): ``--import-rounds``
   alternating pairs of the bulk import of the corpus into a fresh database and a raw binary
   COPY of the rows it wrote into empty copies of its tables plus the same deferred index
   builds (bench/scale_raw.py); the first bulk round is step 1's import.

A table row per point goes to stdout as it finishes (progress on stderr); the JSON
(bench/results/scale.json, rewritten after every point) carries the machine, the server
settings and the load average around every phase (the machine may be shared); the chart goes
to docs/images/scale.svg (hand-written SVG: no plotting library is a dependency).

    .venv/bin/python -m bench.scale --sizes 10000 --compare '' --ratio-size 10000  # ~5 min
    .venv/bin/python -m bench.scale --pgdata /tmp/scale-pg          # the full run (hours)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import math
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from bench.common import fresh_database, percentile, synthetic_corpus, write_result
from bench.load import CORPUS_SEED, INSTANCE
from bench.load.database import prepare_database, start_postgres
from bench.load.runner import run_load
from bench.load.server import ApiServer, CpuMeter
from bench.load.workload import READ, Workload
from bench.retrieval_latency import COMPANIES, PEOPLE, PRODUCTS, QUESTIONS, random_context
from bench.scale_plot import write_svg
from bench.scale_raw import raw_copy, table_rows, written_tables
from bench.scale_report import HEADER, closing, subtitle, table_row
from memory_platform.features.memories.bulk import ImportStats, import_memories
from memory_platform.features.memories.bulk.reader import context_from_row
from memory_platform.features.retrieval.planner import EF_SEARCH_MAX, planner_settings
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.db import embedded
from memory_platform.foundation.settings import PROJECT_ROOT, Settings
from memory_platform.shared.embeddings.generations import indexed_distance
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

PROGRAM = "python -m bench.scale"
DEFAULT_PLOT = PROJECT_ROOT / "docs" / "images" / "scale.svg"
GB = 2**30


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- arguments --------------------------------------------------------------------------------


def int_list(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def compare_points(text: str) -> list[tuple[int, int]]:
    """``"100000:1536,10000:768"`` as (memories, dimensions) pairs; empty: none."""
    points = []
    for item in text.split(","):
        if not item.strip():
            continue
        n, _, dims = item.partition(":")
        if not dims:
            raise argparse.ArgumentTypeError(f"{item!r}: expected MEMORIES:DIMENSIONS")
        points.append((int(n.replace("_", "")), int(dims)))
    return points


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--sizes", type=int_list, default=int_list("10000,100000,1000000"),
                   help="corpus sizes (memories imported)")
    p.add_argument("--dims", type=int_list, default=[384],
                   help="hash embedding dimensions at every size (384: the default local "
                        "model's)")
    p.add_argument("--compare", type=compare_points, default=compare_points("100000:1536"),
                   help="extra MEMORIES:DIMENSIONS points ('' for none)")
    p.add_argument("--pgdata", type=Path, default=None,
                   help="data directory of the embedded server (default: temporary); "
                        "removed afterwards unless --keep")
    p.add_argument("--keep", action="store_true",
                   help="keep --pgdata and every point's database")
    p.add_argument("--shared-buffers", default="6GB",
                   help="shared_buffers of the bench's embedded server "
                        "(MEMORY_EMBEDDED_SHARED_BUFFERS)")
    p.add_argument("--maintenance-work-mem", default="auto",
                   help="maintenance_work_mem of the index builds (auto: the HNSW graph of "
                        "the size fits, at least 1GB)")
    p.add_argument("--queries", type=int, default=500, help="library searches measured")
    p.add_argument("--warmup-queries", type=int, default=50)
    p.add_argument("--rate", type=float, default=50.0, help="API reads per second (open loop)")
    p.add_argument("--duration", type=float, default=20.0, help="API run: measured seconds")
    p.add_argument("--warmup", type=float, default=5.0, help="API run: unmeasured seconds")
    p.add_argument("--workers", type=int, default=1, help="API worker processes")
    p.add_argument("--users", type=int, default=10, help="API keys to spread the reads over")
    p.add_argument("--cpu-rounds", type=int, default=3,
                   help="alternating API-batch / bare-batch pairs")
    p.add_argument("--cpu-seconds", type=float, default=10.0,
                   help="length of an API batch at --rate (the bare batch asks the same)")
    p.add_argument("--ratio-size", type=int, default=100_000,
                   help="size of the import ratio (bulk vs raw COPY); 0: none")
    p.add_argument("--import-rounds", type=int, default=2,
                   help="alternating bulk / raw pairs of the import ratio")
    p.add_argument("--generator-nice", type=int, default=-10,
                   help="niceness increment of the load generator during API runs")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--result-name", default="scale", help="bench/results/<name>.json")
    p.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help="the SVG chart")
    return p


def plan_points(sizes: list[int], dims: list[int], compare: list[tuple[int, int]]
                ) -> list[tuple[int, int]]:
    """Every (memories, dimensions) point once, smallest corpus first."""
    points = {(n, d) for n in sizes for d in dims} | set(compare)
    return sorted(points)


def maintenance_work_mem_for(n: int, dims: int) -> str:
    """Enough maintenance_work_mem for the in-memory HNSW graph of ``n`` memories (about
    1.2 chunks each; per element the half-precision vector plus about 700 bytes of graph and
    element overhead at m = 16), with a quarter to spare; at least 1GB."""
    graph = 1.2 * n * (2 * dims + 700) * 1.25
    return f"{max(1, math.ceil(graph / GB))}GB"


# --- one point --------------------------------------------------------------------------------


def import_settings(url: str, dims: int, maintenance_work_mem: str) -> Settings:
    return Settings(database_url=url, embedding_provider="hash",
                    hash_embedding_dimensions=dims,
                    index_build_maintenance_work_mem=maintenance_work_mem,
                    _env_file=None)  # type: ignore[call-arg]


def bulk_import(url: str, n: int, dims: int, settings: Settings) -> tuple[dict, dict]:
    """Import the corpus (HNSW and GIN rebuilt) into the fresh database at ``url``, then
    VACUUM ANALYZE; answers the import's numbers and the tables it wrote (rows)."""
    provider = HashEmbeddingProvider(dims)
    last = [time.perf_counter()]

    def progress(stats: ImportStats) -> None:
        if time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            log(f"  ... {stats.rows:,} rows read, {stats.accepted:,} accepted")

    with psycopg.connect(url, autocommit=True) as conn:
        before = table_rows(conn)
        load_before = load_average()
        log(f"importing {n:,} memories ({dims} d, maintenance_work_mem "
            f"{settings.index_build_maintenance_work_mem}) ...")
        stats = import_memories(conn, settings, context_from_row(INSTANCE),
                                synthetic_corpus(n, seed=CORPUS_SEED), embedder=provider,
                                expected_rows=n, progress=progress, rebuild_index=True)
        load_after = load_average()
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        vacuum = time.perf_counter() - started
        after = table_rows(conn)
        size = conn.execute("SELECT pg_total_relation_size('agent_memory_chunks'),"
                            " pg_database_size(current_database())").fetchone()
    result = {
        "rows": stats.rows, "accepted": stats.accepted, "deduplicated": stats.deduplicated,
        "rejected": len(stats.rejected), "chunks": stats.chunks,
        "generation_key": stats.generation_key, "index_rebuilt": stats.index_rebuilt,
        "load_seconds": round(stats.load_seconds, 2),
        "index_seconds": round(stats.index_seconds, 2),
        "hnsw_seconds": round(stats.index_seconds - stats.fulltext_seconds, 2),
        "gin_seconds": round(stats.fulltext_seconds, 2),
        "total_seconds": round(stats.seconds, 2),
        "load_rows_per_second": round(stats.load_rows_per_second, 1),
        "total_rows_per_second": round(stats.rows_per_second, 1),
        "vacuum_analyze_seconds": round(vacuum, 2),
        "maintenance_work_mem": settings.index_build_maintenance_work_mem,
        "parallel_workers": settings.index_build_parallel_workers,
        "loaders": settings.import_loaders,
        "chunks_table_bytes": size[0], "database_bytes": size[1],
        "load_average_before": load_before, "load_average_after": load_after,
    }
    log(f"imported {stats.accepted:,} memories: load {stats.load_seconds:.1f} s, index "
        f"{stats.index_seconds:.1f} s, {stats.rows_per_second:,.0f} rows/s")
    return result, written_tables(before, after)


def _cpu_seconds(meter: CpuMeter, *parts: str) -> float:
    result = meter.result
    return sum((result[part] or 0.0) for part in parts) * result["wall_seconds"]


def library_latency(url: str, dims: int, queries: int, warmup: int, seed: int,
                    postgres_pid: int | None) -> dict:
    """``search_memories`` latency over natural questions from random callers, and its CPU
    per query (this process and PostgreSQL)."""
    rng = random.Random(seed)
    settings = Settings(database_url=url, embedding_provider="hash",
                        hash_embedding_dimensions=dims,
                        _env_file=None)  # type: ignore[call-arg]
    provider = HashEmbeddingProvider(dims)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)

        def one() -> tuple[float, int]:
            question = rng.choice(QUESTIONS).format(
                company=rng.choice(COMPANIES), person=rng.choice(PEOPLE),
                product=rng.choice(PRODUCTS), number=rng.randint(1000, 99999))
            ctx = random_context(rng, INSTANCE)
            started = time.perf_counter()
            hits = search_memories(conn, settings, ctx, question, embedder=provider,
                                   stamp=False)
            return (time.perf_counter() - started) * 1000, len(hits)

        for _ in range(warmup):
            one()
        load_before = load_average()
        with CpuMeter(None, postgres_pid) as meter:
            samples = [one() for _ in range(queries)]
        plan: list[str] = []
        search_memories(conn, settings, random_context(random.Random(1), INSTANCE),
                        "Why was invoice 48213 for Nordlicht GmbH disputed?",
                        embedder=provider, stamp=False, explain=plan)
    ms = [s for s, _ in samples]
    return {
        "queries": len(ms), "warmup": warmup,
        "p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2),
        "p99_ms": round(percentile(ms, 99), 2), "mean_ms": round(statistics.fmean(ms), 2),
        "mean_hits": round(statistics.fmean(h for _, h in samples), 2),
        "cpu_ms_per_query": round(_cpu_seconds(meter, "generator_cores", "postgres_cores")
                                  / len(ms) * 1000, 3),
        "postgres_cpu_ms_per_query": round(_cpu_seconds(meter, "postgres_cores")
                                           / len(ms) * 1000, 3),
        "uses_hnsw": any("hnsw" in line for line in plan),
        "load_average_before": load_before, "load_average_after": load_average(),
    }


def run_args(args: argparse.Namespace, *, duration: float, warmup: float
             ) -> argparse.Namespace:
    """The options ``bench.load.runner.run_load`` reads, for an open-loop read run."""
    return argparse.Namespace(mode="open", rate=args.rate, write_rate=0.0, duration=duration,
                              warmup=warmup, timeout=10.0, arrivals="poisson", client="raw",
                              connections=128, clients=16, seed=args.seed)


@contextlib.contextmanager
def generator_priority(increment: int) -> Iterator[None]:
    """This process ``increment`` nicer (negative: more urgent; needs root) for the block:
    a starved generator sends late and measures itself. Best effort."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, base + increment)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, base)


def request_question(url: str, default_limit: int) -> tuple[str, int]:
    """The question and limit of a read request's URL."""
    params = parse_qs(urlsplit(url).query)
    return params["query"][0], int(params.get("limit", [default_limit])[0])


def vector_candidates(limit: int) -> int:
    """The vector arm's LIMIT for a search of ``limit`` hits (retrieval/search.py)."""
    return max(limit + 2, 8)


def bare_statement(key: str, dims: int, k: int) -> sql.Composed:
    """The bare top-k: the HNSW index's expression and partial predicate, nothing else."""
    return sql.SQL("SELECT c.id FROM agent_memory_chunks c WHERE c.embedding_key = {key}"
                   " ORDER BY {distance} LIMIT {k}").format(
        key=sql.Literal(key), distance=indexed_distance("c", dims, sql.Placeholder()),
        k=sql.Literal(k))


def bare_batch(conn: psycopg.Connection, key: str, dims: int, ef_search: int,
               queries: list[tuple[object, int]], postgres_pid: int | None) -> dict:
    """Run each (vector, k) bare top-k under the search's planner settings, one transaction
    each; PostgreSQL CPU per query and the latency."""
    statements = {k: bare_statement(key, dims, k).as_string(conn)
                  for k in {k for _, k in queries}}
    latencies = []
    with CpuMeter(None, postgres_pid) as meter:
        for vector, k in queries:
            started = time.perf_counter()
            with planner_settings(conn, min(max(ef_search, k), EF_SEARCH_MAX)):
                conn.execute(statements[k], (vector,), prepare=True).fetchall()
            latencies.append((time.perf_counter() - started) * 1000)
    return {"queries": len(queries),
            "postgres_cpu_ms_per_query": round(_cpu_seconds(meter, "postgres_cores")
                                               / max(1, len(queries)) * 1000, 3),
            "p50_ms": round(percentile(latencies, 50) or 0, 3),
            "p95_ms": round(percentile(latencies, 95) or 0, 3),
            "cpu": meter.result}


def bare_plan(conn: psycopg.Connection, key: str, dims: int, k: int, vector: object,
              ef_search: int) -> list[str]:
    with planner_settings(conn, ef_search):
        return [shorten_vectors(r[0]) for r in conn.execute(
            b"EXPLAIN " + bare_statement(key, dims, k).as_bytes(conn), (vector,))]


def shorten_vectors(line: str) -> str:
    """A plan line with its vector literals elided (``'[...]'``)."""
    return re.sub(r"'\[[^\]]*\]'", "'[...]'", line)


def api_measurements(url: str, dims: int, key: str, tokens: list[str],
                     args: argparse.Namespace, postgres_pid: int | None) -> tuple[dict, dict]:
    """The API read run (latency) and the alternating CPU rounds against one API server."""
    settings = Settings(database_url=url, embedding_provider="hash",
                        hash_embedding_dimensions=dims,
                        _env_file=None)  # type: ignore[call-arg]
    provider = HashEmbeddingProvider(dims)
    log_path = Path(tempfile.gettempdir()) / f"scale_api_{os.getpid()}.log"
    base = os.getpriority(os.PRIO_PROCESS, 0)
    server = ApiServer(url, args.workers, dims, None, log_path, base, {}, instance=INSTANCE)
    workload = Workload(tokens, args.seed, tag=f"scale-{os.getpid()}")
    ef = settings.retrieval_hnsw_ef_search
    rounds = []
    try:
        server.start()
        log(f"API on {server.base_url} ({args.workers} worker(s)); read run at "
            f"{args.rate:g}/s for {args.duration:g} s ...")
        with generator_priority(args.generator_nice):
            server.ready()
            latency_run = run_load(server, workload,
                                   run_args(args, duration=args.duration, warmup=args.warmup),
                                   label=f"read {args.rate:g}/s", rate=args.rate,
                                   write_rate=0.0, postgres_pid=postgres_pid)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            for index in range(args.cpu_rounds):
                log(f"CPU round {index + 1}/{args.cpu_rounds}: API batch ...")
                twin = copy.deepcopy(workload)  # replays the same questions for the bare batch
                with generator_priority(args.generator_nice):
                    server.ready()
                    api_run = run_load(server, workload,
                                       run_args(args, duration=args.cpu_seconds, warmup=0.0),
                                       label=f"cpu round {index + 1}", rate=args.rate,
                                       write_rate=0.0, postgres_pid=postgres_pid)
                requests = api_run["routes"][READ]["count"]
                asked = [request_question(twin.read().url, settings.retrieval_top_k)
                         for _ in range(requests)]
                queries = [(provider.embed_query(q), vector_candidates(limit))
                           for q, limit in asked]
                log(f"CPU round {index + 1}/{args.cpu_rounds}: bare batch of {requests} ...")
                bare = bare_batch(conn, key, dims, ef, queries, postgres_pid)
                rounds.append(cpu_round(api_run, bare))
            plan = bare_plan(conn, key, dims, vector_candidates(settings.retrieval_top_k),
                             provider.embed_query("What caused the billing service outage?"),
                             ef)
    finally:
        server.stop()
        log_path.unlink(missing_ok=True)
    read = latency_run["routes"].get(READ, {})
    api = {"rate": args.rate, "duration_s": args.duration, "warmup_s": args.warmup,
           "workers": args.workers,
           **{k: read.get(k) for k in ("count", "achieved_rps", "p50_ms", "p95_ms", "p99_ms",
                                       "max_ms", "errors", "generator_lag_p99_ms")},
           "cpu": latency_run["cpu"],
           "load_average_before": latency_run["load_average_before"],
           "load_average_after": latency_run["load_average_after"]}
    return api, cpu_summary(rounds, plan)


def cpu_round(api_run: dict, bare: dict) -> dict:
    """One pair's CPU per request (API run) and per bare query, and their ratios."""
    cpu = api_run["cpu"]
    # searches answered (a 503 of the admission control costs next to nothing); the bare
    # batch asks every question of the run
    requests = max(1, api_run["routes"][READ]["ok"])
    wall = cpu["wall_seconds"]
    api_ms = (cpu["api_cores"] + (cpu["postgres_cores"] or 0.0)) * wall / requests * 1000
    pg_ms = (cpu["postgres_cores"] or 0.0) * wall / requests * 1000
    bare_ms = bare["postgres_cpu_ms_per_query"]
    return {"requests": api_run["routes"][READ]["count"], "answered": requests,
            "errors": api_run["routes"][READ]["errors"],
            "api_p95_ms": api_run["routes"][READ]["p95_ms"],
            "api_cpu_ms_per_request": round(api_ms, 3),
            "api_postgres_cpu_ms_per_request": round(pg_ms, 3),
            "bare_postgres_cpu_ms_per_query": bare_ms,
            "bare_p50_ms": bare["p50_ms"], "bare_p95_ms": bare["p95_ms"],
            "ratio_total": round(api_ms / bare_ms, 2) if bare_ms else None,
            "ratio_postgres": round(pg_ms / bare_ms, 2) if bare_ms else None,
            "api_cpu": cpu, "bare_cpu": bare["cpu"],
            "load_average": api_run["load_average_before"]}


def cpu_summary(rounds: list[dict], plan: list[str]) -> dict:
    """Medians over the rounds, the rounds, and the bare query's plan."""
    def median(key: str) -> float | None:
        values = [r[key] for r in rounds if r[key] is not None]
        return round(statistics.median(values), 3) if values else None

    return {"rounds": rounds,
            "api_cpu_ms_per_request": median("api_cpu_ms_per_request"),
            "api_postgres_cpu_ms_per_request": median("api_postgres_cpu_ms_per_request"),
            "bare_postgres_cpu_ms_per_query": median("bare_postgres_cpu_ms_per_query"),
            "ratio_total": median("ratio_total"), "ratio_postgres": median("ratio_postgres"),
            "bare_uses_index": any("Index Scan" in line for line in plan),
            "bare_plan": plan}


def import_ratio(server_url: str, n: int, dims: int, settings_for, first: tuple[dict, dict],
                 first_url: str, rounds: int) -> dict:
    """Alternating bulk / raw pairs; the first bulk import is ``first`` (in ``first_url``)."""
    pairs = []
    for index in range(rounds):
        with contextlib.ExitStack() as stack:
            if index == 0:
                url, (bulk, tables) = first_url, first
            else:
                url = stack.enter_context(fresh_database(server_url))
                log(f"import ratio round {index + 1}/{rounds}: bulk ...")
                bulk, tables = bulk_import(url, n, dims, settings_for(url))
            log(f"import ratio round {index + 1}/{rounds}: raw COPY + index build of "
                f"{sum(tables.values()):,} rows in {len(tables)} tables ...")
            load_before = load_average()
            raw = raw_copy(url, settings_for(url), tables, bulk["generation_key"])
            raw["load_average_before"] = load_before
            raw["load_average_after"] = load_average()
            log(f"raw: COPY {raw['load_seconds']:.1f} s, index {raw['index_seconds']:.1f} s")
        pairs.append(import_pair(bulk, raw))
    return {"memories": n, "dims": dims, "rounds": pairs,
            **{key: round(statistics.median(p[key] for p in pairs), 2)
               for key in ("ratio_total", "ratio_load", "ratio_index")}}


def import_pair(bulk: dict, raw: dict) -> dict:
    """A bulk round against its raw round: seconds and bulk / raw ratios."""
    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 2) if b else None

    return {"bulk_load_seconds": bulk["load_seconds"],
            "bulk_index_seconds": bulk["index_seconds"],
            "bulk_total_seconds": bulk["total_seconds"],
            "bulk_rows_per_second": bulk["total_rows_per_second"],
            "raw_load_seconds": raw["load_seconds"], "raw_index_seconds": raw["index_seconds"],
            "raw_total_seconds": raw["seconds"],
            "raw_rows_per_second": round(bulk["rows"] / raw["seconds"], 1)
            if raw["seconds"] else None,
            "ratio_total": ratio(bulk["total_seconds"], raw["seconds"]),
            "ratio_load": ratio(bulk["load_seconds"], raw["load_seconds"]),
            "ratio_index": ratio(bulk["index_seconds"], raw["index_seconds"]),
            "raw": raw, "bulk_load_average": bulk["load_average_before"]}


# --- main -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    points = plan_points(args.sizes, args.dims, args.compare)
    if not points:
        raise SystemExit("no points to measure")
    os.environ["MEMORY_EMBEDDED_SHARED_BUFFERS"] = args.shared_buffers
    top_mwm = (args.maintenance_work_mem if args.maintenance_work_mem != "auto"
               else maintenance_work_mem_for(*max(points)))
    os.environ.setdefault("MEMORY_INDEX_BUILD_MAINTENANCE_WORK_MEM", top_mwm)
    started = time.perf_counter()
    payload: dict = {"command": " ".join([PROGRAM, *(argv if argv is not None
                                                     else sys.argv[1:])]),
                     "points_planned": [list(p) for p in points],
                     "load_average_start": load_average(), "points": []}
    print(HEADER, flush=True)
    with contextlib.ExitStack() as stack:
        pgdata = args.pgdata
        if pgdata is not None and not args.keep:
            resolved = pgdata.resolve()
            stack.callback(embedded.destroy, resolved)  # runs after the server's release
        postgres = start_postgres(stack, None, pgdata, keep=args.keep)
        log(f"embedded server pid {postgres.pid} in {postgres.pgdata}, shared_buffers "
            f"{args.shared_buffers}")
        for n, dims in points:
            point_started = time.perf_counter()
            mwm = (args.maintenance_work_mem if args.maintenance_work_mem != "auto"
                   else maintenance_work_mem_for(n, dims))

            def settings_for(url: str, dims: int = dims, mwm: str = mwm) -> Settings:
                return import_settings(url, dims, mwm)

            point: dict = {"n": n, "dims": dims, "load_average": load_average()}
            with contextlib.ExitStack() as db_stack:
                url = db_stack.enter_context(fresh_database(postgres.url, keep=args.keep))
                point["database"] = url.split("?", 1)[0].rsplit("/", 1)[-1]
                imported = bulk_import(url, n, dims, settings_for(url))
                point["import"] = imported[0]
                bench = prepare_database(url, {}, users=args.users, warm=True)
                point["corpus"] = bench.corpus
                point["postgres_settings"] = bench.postgres_settings
                payload["machine"] = bench.machine
                log(f"library search: {args.queries} queries ...")
                point["library"] = library_latency(url, dims, args.queries,
                                                   args.warmup_queries, args.seed,
                                                   postgres.pid)
                point["api"], point["cpu"] = api_measurements(
                    url, dims, imported[0]["generation_key"], bench.tokens, args,
                    postgres.pid)
                if n == args.ratio_size and dims == args.dims[0] and args.import_rounds > 0:
                    point["import_ratio"] = import_ratio(
                        postgres.url, n, dims, settings_for, imported, url,
                        args.import_rounds)
                    payload["import_ratio"] = point["import_ratio"]
            point["seconds"] = round(time.perf_counter() - point_started, 1)
            point["load_average_end"] = load_average()
            payload["points"].append(point)
            print(table_row(point), flush=True)
            payload["load_average_end"] = load_average()
            payload["seconds"] = round(time.perf_counter() - started, 1)
            target = write_result(args.result_name, payload)
            write_svg(payload["points"], args.plot, dims=args.dims[0],
                      subtitle=subtitle(payload.get("machine", {}), payload["points"]))
            log(f"point {n:,} x {dims} done in {point['seconds']:.0f} s; wrote {target} and "
                f"{args.plot}")
        if args.keep:
            log(f"kept {postgres.pgdata} with databases "
                f"{', '.join(p['database'] for p in payload['points'])}")
    closing(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
