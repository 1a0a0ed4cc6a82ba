"""Load benchmark of the HTTP API: the real server process, driven over loopback.

Builds a synthetic German/English corpus (default 100,000 memories, hash embeddings) with the
bulk import into a fresh database, creates API keys (memory:read + memory:write) for a few
users of the bench instance, starts ``python -m memory_platform api`` as a SUBPROCESS (so the
load generator and the server are separate processes, as in production) and drives it:

* open loop (default): requests are sent at precomputed times (Poisson or uniform arrivals) at
  the offered rate whatever the server does; latency is completion time minus SCHEDULED send
  time, so queueing in the generator's connection pool and in the server counts;
* closed loop (``--mode closed --clients N``): N clients, each sending its next request when
  the previous one answered; latency is completion minus send.

Scenarios (``--scenarios``, per worker count in ``--workers``):

* ``healthz``: GET /healthz at ``--rate``: the floor of generator + server + one DB round
  trip, i.e. the generator's own overhead;
* ``read``: GET /api/v1/memory (natural questions, random optional scope) at ``--rate``;
* ``mixed``: the same reads plus POST /api/v1/memory (new unique team memories) at
  ``--write-rate``;
* ``sweep``: reads at stepped rates (``--sweep-rates``) until p95 >= ``--sweep-p95-ms`` or an
  error, then ``--sweep-refine`` bisection steps; reports the highest passing rate;
* ``closed``: reads from ``--clients`` closed-loop clients (the saturation throughput);
* ``overload``: admission control: the capacity (closed loop, or ``--capacity``), then reads
  at a quarter of it and at ``--overload-factor`` (2) times it, alternating: admitted p95
  against the unloaded p95, and how fast the 503s came back.

``--mode closed`` runs healthz/read/mixed closed-loop too (mixed: writes in the ratio
``--write-rate`` : ``--rate``).

Prints a table per route (count, offered and achieved requests/s, p50/p95/p99/max, errors by
status), the CPU used by the generator, the API processes and PostgreSQL, and the load average
(other processes share the machine). Writes bench/results/api_load.json (``--result-name``).

The generator is a minimal asyncio HTTP/1.1 keep-alive client (``--client httpx`` for the
comparison: about 5x its CPU per request) and runs at a raised priority
(``--generator-nice``), so a busy machine delays the API's answers, not the sending.

    .venv/bin/python -m bench.load --n 5000 --duration 10 --sweep        # smoke
    .venv/bin/python -m bench.load --n 100000 --pgdata /tmp/api-load-pg --keep \
        --import-only                                     # prints the --reuse argument
    .venv/bin/python -m bench.load --pgdata /tmp/api-load-pg --reuse bench_xxxx \
        --workers 1,2 --scenarios healthz,sweep,closed,read,mixed --clients 8

The issue's targets: GET p95 <= 25 ms with zero errors at an offered 200 requests/s over
100,000 memories; POST p95 <= 30 ms at 50 requests/s mixed into that load; and the highest
read rate with p95 under 100 ms, reported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

import psycopg

from bench.common import write_result
from bench.load import INSTANCE
from bench.load.client import CLIENT_NAMES
from bench.load.corpus import corpus_facts
from bench.load.database import (
    BenchDatabase,
    Postgres,
    open_database,
    prepare_database,
    start_postgres,
)
from bench.load.report import print_closing, targets
from bench.load.runner import EVENT_LOOP, Measurements, run_scenarios
from bench.load.workload import Workload

PROGRAM = "python -m bench.load"
SCENARIOS = ("healthz", "read", "mixed", "sweep", "closed", "overload")


def _rates(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="memories in the corpus")
    p.add_argument("--dims", type=int, default=1536, help="hash embedding dimensions")
    p.add_argument("--database-url", default=None,
                   help="server to create the bench database on (role needs CREATEDB); "
                        "default: an embedded server in --pgdata")
    p.add_argument("--pgdata", type=Path, default=None,
                   help="data directory of the embedded server (default: temporary)")
    p.add_argument("--keep", action="store_true",
                   help="keep the database (and --pgdata) for --reuse")
    p.add_argument("--reuse", default=None, metavar="DATABASE",
                   help="database name a --keep run left (corpus imported): skip the import")
    p.add_argument("--no-prewarm", action="store_true", help="skip pg_prewarm")
    p.add_argument("--import-only", action="store_true",
                   help="build the corpus (with --keep: for later --reuse runs) and stop")
    p.add_argument("--users", type=int, default=10, help="API keys (users) to spread over")
    p.add_argument("--workers", default="1", help="API worker counts to run, e.g. 1,2")
    p.add_argument("--pool-max-size", type=int, default=None,
                   help="MEMORY_POOL_MAX_SIZE of the API (default: the setting's)")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the API process (what-if runs, e.g. "
                        "MEMORY_RETRIEVAL_EXACT_SCAN_MAX=0 or PGOPTIONS='-c ...'); repeatable")
    p.add_argument("--scenarios", default="healthz,read,mixed",
                   help="comma list of healthz, read, mixed, sweep, closed, overload")
    p.add_argument("--sweep", action="store_true", help="add the sweep scenario")
    p.add_argument("--mode", choices=("open", "closed"), default="open")
    p.add_argument("--clients", type=int, default=16, help="closed loop: concurrent clients")
    p.add_argument("--rate", type=float, default=200.0, help="open loop: reads per second")
    p.add_argument("--write-rate", type=float, default=50.0,
                   help="writes per second in the 'mixed' scenario")
    p.add_argument("--arrivals", choices=("poisson", "uniform"), default="poisson")
    p.add_argument("--duration", type=float, default=30.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds before")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="a request not answered this long after its scheduled time fails")
    p.add_argument("--client", choices=("raw", "httpx"), default="raw",
                   help="the generator's HTTP client (compare their CPU on the healthz run)")
    p.add_argument("--connections", type=int, default=128,
                   help="generator's connection pool (open loop queues beyond it)")
    p.add_argument("--sweep-rates", type=_rates,
                   default=_rates("1,2,5,10,20,35,50,75,100,150,200,300,400,600,800"))
    p.add_argument("--sweep-refine", type=int, default=2, help="bisection steps after a fail")
    p.add_argument("--sweep-p95-ms", type=float, default=100.0)
    p.add_argument("--sweep-write-rate", type=float, default=0.0)
    p.add_argument("--sweep-duration", type=float, default=20.0)
    p.add_argument("--sweep-min-samples", type=int, default=60,
                   help="a step lasts long enough for this many requests")
    p.add_argument("--sweep-warmup", type=float, default=5.0)
    p.add_argument("--generator-nice", type=int, default=-10,
                   help="nice increment of the generator (negative needs root): a starved "
                        "generator sends late and would measure itself, not the API")
    p.add_argument("--capacity", type=float, default=None,
                   help="overload: the read capacity (req/s); default: measured closed-loop "
                        "with --clients first")
    p.add_argument("--overload-factor", type=float, default=2.0,
                   help="overload: offered rate as a multiple of the capacity")
    p.add_argument("--overload-rounds", type=int, default=2,
                   help="overload: alternating unloaded/overload pairs")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--result-name", default="api_load", help="bench/results/<name>.json")
    return p



def _scenarios(args: argparse.Namespace) -> list[str]:
    """The scenarios to run, in order (``--sweep`` adds one); SystemExit for unknown ones."""
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if args.sweep and "sweep" not in scenarios:
        scenarios.append("sweep")
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return scenarios


def _raise_priority(increment: int) -> tuple[int, int]:
    """Niceness before and after adding ``increment`` (best effort: lowering it needs
    root). Only the generator gets the priority (the API subprocess resets it; PostgreSQL
    runs already): it must send on time to measure the API and not its own lag."""
    base = niceness = os.nice(0)
    if increment:
        with contextlib.suppress(OSError):
            niceness = os.nice(increment)
    return base, niceness


def _announce(bench: BenchDatabase, postgres: Postgres, args: argparse.Namespace) -> None:
    print(f"corpus: {bench.corpus['memories']:,} memories, {bench.corpus['chunks']:,} chunks "
          f"in {bench.name}; prewarmed {len(bench.prewarmed)} relations", file=sys.stderr,
          flush=True)
    if args.keep:
        where = (f"--database-url {args.database_url}" if args.database_url
                 else f"--pgdata {postgres.pgdata}")
        print(f"kept: reuse with  {where} --reuse {bench.name}", file=sys.stderr, flush=True)


def _result(args: argparse.Namespace, argv: list[str] | None, bench: BenchDatabase,
            after: dict, measured: Measurements, niceness: int) -> dict:
    """The JSON payload of the whole benchmark."""
    return {
        "command": " ".join([PROGRAM, *(argv or sys.argv[1:])]),
        "corpus": bench.corpus,
        "corpus_after": after,
        "embedding": {"provider": "hash", "dimensions": args.dims},
        "instance": INSTANCE,
        "users": args.users,
        "generator": {"client": CLIENT_NAMES[args.client],
                      "event_loop": EVENT_LOOP,
                      "connections": args.connections, "timeout_s": args.timeout,
                      "niceness": niceness,
                      "same_machine": True,
                      "note": "generator, API and PostgreSQL share the machine's cores"},
        "servers": measured.servers,
        "runs": measured.runs,
        "sweeps": [{k: v for k, v in s.items() if k != "runs"} for s in measured.sweeps],
        "sweep_runs": [r for s in measured.sweeps for r in s["runs"]],
        "overload": measured.overloads,
        "targets": targets(measured.runs, measured.sweeps, args.sweep_p95_ms),
        "postgres_settings": bench.postgres_settings,
        "prewarmed": bench.prewarmed,
        "machine": bench.machine,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    """Build or reuse the corpus, run every scenario for every worker count, print the
    tables and write the JSON; answers the exit status."""
    args = _parser().parse_args(argv)
    scenarios = _scenarios(args)
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    extra_env = dict(item.split("=", 1) for item in args.server_env)
    if args.mode == "closed" and args.rate + args.write_rate <= 0:
        raise SystemExit("closed loop mixes reads and writes by --rate : --write-rate")

    with contextlib.ExitStack() as stack:
        postgres = start_postgres(stack, args.database_url, args.pgdata, keep=args.keep)
        url, corpus = open_database(stack, postgres.url, args.reuse, keep=args.keep,
                                    n=args.n, dims=args.dims)
        bench = prepare_database(url, corpus, users=args.users, warm=not args.no_prewarm)
        _announce(bench, postgres, args)
        if args.import_only:
            return 0
        base_niceness, niceness = _raise_priority(args.generator_nice)
        workload = Workload(bench.tokens, args.seed, tag=f"{os.getpid()}-{int(time.time())}")
        measured = run_scenarios(url, workload, scenarios, worker_counts, extra_env, args,
                                 postgres_pid=postgres.pid, server_niceness=base_niceness)
        with psycopg.connect(url, autocommit=True) as conn:
            after = corpus_facts(conn)

    result = _result(args, argv, bench, after, measured, niceness)
    print_closing(result, write_result(args.result_name, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
