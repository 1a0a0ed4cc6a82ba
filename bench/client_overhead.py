"""What the Python client costs over raw httpx for a search (issue 33).

``python -m bench.client_overhead [--rounds 10] [--searches 200] [--seed 500]``

The real API (``memory-platform api``, one worker, a subprocess on loopback) on a fresh
embedded database with ``--seed`` memories. Two callers search the same queries over one
kept-alive connection each: raw ``httpx.Client.get("/api/v1/memory", params=...)`` reading the
JSON, and ``MemoryClient.search(...)`` (request model, retry loop, answer parsed into
``SearchResponse``). Rounds alternate which goes first; per round each does ``--searches``
searches. Prints per-caller p50/p95 and the ratio client/raw of the medians (per round and
overall), and the client's own work per call measured without the network (building the
request and parsing a recorded answer). Writes bench/results/client_overhead.json.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import psycopg

from bench.common import fresh_database, machine_info, percentile, write_result
from bench.load.server import ApiServer
from memory_platform.client import MemoryClient, models
from memory_platform.client.operations import query_of
from memory_platform.features.apikeys import create_key

INSTANCE = "default"
TOPICS = ("on-call rota", "release train", "database failover", "green tea", "deploy window",
          "VAT filing", "kickoff deck", "office plants")
QUERIES = [f"who handles the {t}" for t in TOPICS]


def _seed(base_url: str, token: str, n: int) -> None:
    with MemoryClient(base_url, token) as client:
        for i in range(n):
            client.store(f"Note {i}: the {TOPICS[i % len(TOPICS)]} of team {i % 7} is owned "
                         f"by person {i % 13}.", visibility="private")
            if (i + 1) % 100 == 0:
                print(f"seeded {i + 1}/{n}", flush=True)


def _raw(http: httpx.Client, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        response = http.get("/api/v1/memory", params={"query": QUERIES[i % len(QUERIES)],
                                                      "limit": "10"})
        response.raise_for_status()
        assert isinstance(response.json()["results"], list)
        times.append(time.perf_counter() - start)
    return times


def _client(client: MemoryClient, n: int) -> list[float]:
    times = []
    for i in range(n):
        start = time.perf_counter()
        assert isinstance(client.search(QUERIES[i % len(QUERIES)], limit=10).results, list)
        times.append(time.perf_counter() - start)
    return times


def _client_work(answer: dict, n: int = 20_000) -> float:
    """Microseconds the client spends per search beyond the HTTP exchange: the query string
    and the answer parsed into its model."""
    start = time.perf_counter()
    for i in range(n):
        query_of(None, query=QUERIES[i % len(QUERIES)], limit=10)
        models.SearchResponse.model_validate(answer)
    return (time.perf_counter() - start) / n * 1e6


def _ms(values: list[float], q: float) -> float:
    return round(percentile(values, q) * 1000, 3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--searches", type=int, default=200, help="searches per caller per round")
    p.add_argument("--seed", type=int, default=500, help="memories written first")
    p.add_argument("--database-url", default=None, help="a server to create the database on")
    p.add_argument("--result-name", default="client_overhead")
    args = p.parse_args(argv)

    with fresh_database(args.database_url) as url, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(url) as conn:
            _, token = create_key(conn, instance_key=INSTANCE, user_id="alice",
                                  scopes=("memory:read", "memory:write"))
            conn.commit()
            machine = machine_info(conn)
        server = ApiServer(url, workers=1, dims=256, pool_max_size=None,
                           log_path=Path(tmp) / "api.log", instance=INSTANCE)
        server.start()
        try:
            _seed(server.base_url, token, args.seed)
            headers = {"Authorization": f"Bearer {token}"}
            rounds = []
            with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http, \
                    MemoryClient(server.base_url, token) as client:
                _raw(http, 20)                                      # warm up both
                _client(client, 20)
                answer = http.get("/api/v1/memory", params={"query": QUERIES[0],
                                                            "limit": "10"}).json()
                for r in range(args.rounds):
                    order = (("raw", _raw, http), ("client", _client, client))
                    if r % 2:
                        order = order[::-1]
                    times = {name: run(target, args.searches) for name, run, target in order}
                    ratio = statistics.median(times["client"]) / statistics.median(times["raw"])
                    rounds.append({"first": order[0][0], "ratio_p50": round(ratio, 3),
                                   **{f"{k}_p50_ms": _ms(v, 50) for k, v in times.items()},
                                   "_times": times})
                    print(f"round {r + 1}/{args.rounds}: raw p50 {rounds[-1]['raw_p50_ms']} ms,"
                          f" client p50 {rounds[-1]['client_p50_ms']} ms, ratio {ratio:.3f}",
                          flush=True)
            work_us = _client_work(answer)
        finally:
            server.stop()

    raw = [t for r in rounds for t in r["_times"]["raw"]]
    ours = [t for r in rounds for t in r["_times"]["client"]]
    summary = {
        "raw_httpx": {"p50_ms": _ms(raw, 50), "p95_ms": _ms(raw, 95), "searches": len(raw)},
        "client": {"p50_ms": _ms(ours, 50), "p95_ms": _ms(ours, 95), "searches": len(ours)},
        "ratio_p50": round(statistics.median(ours) / statistics.median(raw), 3),
        "ratio_p95": round(percentile(ours, 95) / percentile(raw, 95), 3),
        "round_ratios_p50": [r["ratio_p50"] for r in rounds],
        "client_work_per_search_us": round(work_us, 1),
        "answer_results": len(answer["results"]),
    }
    print(f"\n{'caller':10} {'p50 ms':>8} {'p95 ms':>8}")
    for name in ("raw_httpx", "client"):
        print(f"{name:10} {summary[name]['p50_ms']:8} {summary[name]['p95_ms']:8}")
    print(f"ratio client/raw: p50 {summary['ratio_p50']}, p95 {summary['ratio_p95']} "
          f"(rounds: {summary['round_ratios_p50']}); the client's own work per search "
          f"{summary['client_work_per_search_us']} µs")
    for r in rounds:
        del r["_times"]
    path = write_result(args.result_name, {
        "machine": machine, "settings": {"seed_memories": args.seed, "rounds": args.rounds,
                                         "searches_per_caller_per_round": args.searches,
                                         "limit": 10, "embedding": "hash 256"},
        "summary": summary, "rounds": rounds})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
