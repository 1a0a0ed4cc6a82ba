"""Session API throughput and maintenance lag: items appended per second through
``POST /api/v1/sessions/{key}/items`` (single items and batches, side by side with a bare
INSERT), and the time from a completed run to searchable flush and summary rows.

Starts an embedded PostgreSQL (or uses ``--database-url``'s server), creates a fresh, migrated
database (``bench.common.fresh_database``) and starts the API as a subprocess
(``bench.load.server.ApiServer``: hash embeddings; the maintenance model is the default,
``extractive``). A runtime key (scopes memory:read, memory:write) names the acting user per
request, as an agent runtime does.

1. **Append throughput.** ``--clients`` concurrent closed-loop clients, each over its own
   sessions (``--sessions`` in all, one user each), bilingual turn text of 200-600
   characters. Rounds of ``--round-seconds`` alternate ``single`` (one item per request, a
   run of ``--turn-items`` items completed by ``POST .../runs/{id}/complete``), ``batch``
   (``--batch-items`` items per request, one run per batch, then completed), and the bare
   database operation on direct psycopg connections, as many in parallel: ``bare_single``
   (one one-row INSERT into agent_context_messages per statement) and ``bare_batch`` (one
   ``--batch-items``-row INSERT per statement), ``--rounds`` times each, after an unmeasured
   warm-up of ``--warmup-seconds`` per kind and an ANALYZE. Reports items/s per
   round and the median, append and completion latency p50/p95, the CPU cores of the API,
   PostgreSQL and this process (``CpuMeter``), and API / bare ratios.
2. **Maintenance lag.** ``--lag-sessions`` sessions get 7 completed runs below the flush and
   compaction thresholds (``--warm-run-bytes`` each, ~16 KB), which are maintained in one
   batch on one connection (as one run of the job); then, one session every
   ``--arrival-seconds`` on average (exponential gaps), an 8th run (``--last-run-bytes``)
   that brings the 8 runs over 18,000 bytes (flush and compaction due). Meanwhile this
   process runs ``run_due_sessions`` every ``--tick-seconds`` on a new connection each time
   (the sensor's job without Dagster: each of its runs is a new process), and a poller
   searches ``GET /api/v1/memory`` as the session's owner until the session's flush row and
   summary row are returned. Reports per session the lag from the completion response to
   searchable, split into waiting for the loop, waiting behind other sessions of the batch,
   the pass itself and search visibility after the pass.

Nothing timed is asserted. Prints the numbers (progress on stderr) and writes
bench/results/sessions.json (``--name``) with the machine facts.

    .venv/bin/python -m bench.sessions                     # ~2.5 minutes
    .venv/bin/python -m bench.sessions --round-seconds 15 --rounds 5 --lag-sessions 40
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.common import (
    fresh_database,
    machine_info,
    write_result,
)
from bench.load.database import start_postgres
from bench.load.server import ApiServer
from bench.sessions_common import INSTANCE, KINDS, PROGRAM, Texts, log
from bench.sessions_lag import lag
from bench.sessions_throughput import throughput
from memory_platform.features import apikeys
from memory_platform.foundation.settings import Settings


# --- main --------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--database-url", default=None,
                   help="server to create the bench database on (default: embedded)")
    p.add_argument("--dims", type=int, default=1536, help="hash embedding dimensions")
    p.add_argument("--workers", type=int, default=1, help="API worker processes")
    p.add_argument("--clients", type=int, default=4, help="concurrent clients (part 1)")
    p.add_argument("--sessions", type=int, default=200,
                   help="sessions per kind of round, dealt to the clients (part 1)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of each kind (part 1)")
    p.add_argument("--round-seconds", type=float, default=7.0, help="seconds per round")
    p.add_argument("--warmup-seconds", type=float, default=2.0,
                   help="unmeasured seconds per kind before the rounds (then ANALYZE)")
    p.add_argument("--batch-items", type=int, default=50, help="items per batch request")
    p.add_argument("--turn-items", type=int, default=6,
                   help="single-item requests per run before it is completed")
    p.add_argument("--lag-sessions", type=int, default=12, help="sessions of part 2")
    p.add_argument("--warm-run-bytes", type=int, default=2300,
                   help="transcript bytes of each of the 7 warm-up runs (7 x 2,300 < 18,000)")
    p.add_argument("--last-run-bytes", type=int, default=3000,
                   help="transcript bytes of the 8th run (brings the 8 runs over 18,000)")
    p.add_argument("--tick-seconds", type=float, default=1.0,
                   help="the maintenance loop's interval (the sensor's is "
                   "MEMORY_SESSION_MAINTENANCE_SENSOR_INTERVAL_SECONDS, 30 s)")
    p.add_argument("--arrival-seconds", type=float, default=0.5,
                   help="mean pause between two sessions' last runs (exponential: the "
                   "completions fall at random phases of the loop)")
    p.add_argument("--poll-seconds", type=float, default=0.05, help="search poll interval")
    p.add_argument("--lag-timeout", type=float, default=60.0,
                   help="seconds after its completion a session may take to be searchable")
    p.add_argument("--skip-throughput", action="store_true", help="part 2 only")
    p.add_argument("--skip-lag", action="store_true", help="part 1 only")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--name", default="sessions", help="bench/results/<name>.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    texts = Texts(6000, args.seed)
    mean_chars = round(statistics.mean(len(t) for t in texts.pool))
    result: dict[str, Any] = {
        "command": " ".join([PROGRAM, *(argv if argv is not None else sys.argv[1:])]),
        "parameters": {k: v for k, v in vars(args).items() if k != "database_url"},
        "text": {"pool": len(texts.pool), "mean_chars": mean_chars,
                 "mean_bytes": round(statistics.mean(len(t.encode()) for t in texts.pool)),
                 "min_chars": min(len(t) for t in texts.pool),
                 "max_chars": max(len(t) for t in texts.pool)},
    }
    with contextlib.ExitStack() as stack:
        log("starting PostgreSQL and a fresh database ...")
        postgres = start_postgres(stack, args.database_url, None, keep=False)
        url = stack.enter_context(fresh_database(postgres.url))
        with psycopg.connect(url, autocommit=True) as conn:
            _, token = apikeys.create_key(conn, instance_key=INSTANCE, user_id=None,
                                          scopes=("memory:read", "memory:write"),
                                          name="bench/sessions", runtime=True)
            result["machine"] = machine_info(conn)
        log_path = Path(tempfile.mkdtemp(prefix="bench-sessions-")) / "api.log"
        server = ApiServer(url, args.workers, args.dims, None, log_path, instance=INSTANCE)
        server.start()
        stack.callback(server.stop)
        log(f"API on {server.base_url} (log {log_path}), PostgreSQL "
            f"{result['machine']['postgresql']}, {result['machine']['cores']} cores")
        settings = Settings(_env_file=None, database_url=url,  # type: ignore[call-arg]
                            embedding_provider="hash", hash_embedding_dimensions=args.dims,
                            instance_key=INSTANCE, maintenance_model=None,
                            maintenance_default_model="extractive")
        result["thresholds"] = {
            "flush_transcript_bytes": settings.session_flush_transcript_bytes,
            "flush_recent_runs": settings.session_flush_recent_runs,
            "compaction_transcript_bytes": settings.session_compaction_transcript_bytes,
            "sensor_interval_seconds": settings.session_maintenance_sensor_interval_seconds,
            "maintenance_model": settings.maintenance_default_model}
        if not args.skip_throughput:
            log(f"part 1: append throughput, {args.clients} clients, {args.rounds} rounds of "
                f"{args.round_seconds:g} s per kind ({', '.join(KINDS)})")
            result["throughput"] = throughput(server, postgres.pid, url, token, texts, args)
        if not args.skip_lag:
            log(f"part 2: maintenance lag, {args.lag_sessions} sessions, tick "
                f"{args.tick_seconds:g} s")
            result["lag"] = lag(server, postgres.pid, url, token, texts, settings, args)
        with psycopg.connect(url, autocommit=True) as conn:
            result["database"] = {
                "messages": conn.execute("SELECT count(*) FROM agent_context_messages"
                                         ).fetchone()[0],
                "sessions": conn.execute("SELECT count(*) FROM agent_session_state"
                                         ).fetchone()[0],
                "memories": dict(conn.execute(
                    "SELECT source_type, count(*) FROM agent_memories GROUP BY 1").fetchall())}
            result["machine"]["load_average_1m_after"] = round(
                os.getloadavg()[0], 2)
        api_errors = [line for line in log_path.read_text(errors="replace").splitlines()
                      if "Traceback" in line]
        result["api_log_tracebacks"] = len(api_errors)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    path = write_result(args.name, result)
    report(result)
    print(f"wrote {path}")
    return 0


def report(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(f"machine: {m['cores']} cores, {m['ram_gb']} GB, {m['cpu']}, PostgreSQL "
          f"{m['postgresql']}, load average {m['load_average_1m']} -> "
          f"{m.get('load_average_1m_after')}")
    print(f"turn text: {result['text']['mean_chars']} characters on average "
          f"({result['text']['min_chars']}-{result['text']['max_chars']})")
    tp = result.get("throughput")
    if tp:
        print("\nappend throughput (median over rounds):")
        print(f"  {'kind':<12}{'items/s':>10}{'req/s':>9}{'append p50':>12}{'p95 ms':>8}"
              f"{'complete p50':>14}{'p95 ms':>8}{'API':>7}{'PG':>7}{'gen':>7}  per round")
        for kind, md in tp["median"].items():
            per_round = ", ".join(f"{r['items_per_second']:,.0f}" for r in tp["rounds"]
                                  if r["kind"] == kind)
            print(f"  {kind:<12}{md['items_per_second']:>10,.0f}"
                  f"{md['requests_per_second']:>9,.0f}{md['append_p50_ms']:>12}"
                  f"{md['append_p95_ms']:>8}{str(md['complete_p50_ms']):>14}"
                  f"{str(md['complete_p95_ms']):>8}{md['api_cores']:>7}"
                  f"{md['postgres_cores']:>7}{md['generator_cores']:>7}  {per_round}")
        rb, rs = tp["ratio_api_batch_to_bare_batch"], tp["ratio_api_single_to_bare_single"]
        rows = result["parameters"]["batch_items"]
        print(f"  API batch append = {rb['of_medians']:.1%} of the bare {rows}-row INSERT rate "
              f"(per round {rb['per_round_min']:.1%}-{rb['per_round_max']:.1%})")
        print(f"  API single append = {rs['of_medians']:.1%} of the bare one-row INSERT rate "
              f"(per round {rs['per_round_min']:.1%}-{rs['per_round_max']:.1%})")
        print(f"  API batch / API single: {tp['ratio_api_batch_to_api_single']}x")
        for kind, cost in tp["cpu_per_item"].items():
            print(f"  CPU per item, {kind}: API {cost['api_ms_per_item']} ms, PostgreSQL "
                  f"{cost['postgres_ms_per_item']} ms")
    lg = result.get("lag")
    if lg:
        print(f"\nmaintenance lag ({lg['sessions']} sessions, loop every "
              f"{lg['tick_seconds']:g} s, a last run every {lg['arrival_seconds']:g} s on "
              f"average):")
        print(f"  searchable: {lg['searchable']}/{lg['sessions']}"
              + (f"; not within the timeout: {lg['not_searchable_within_timeout']}"
                 if lg["not_searchable_within_timeout"] else "")
              + (f"; flush wrote no new row (every fact a repeat of a shared fact), summary "
                 f"only: {len(lg['flush_all_deduplicated'])}"
                 if lg["flush_all_deduplicated"] else ""))
        for name in ("lag", "wait_for_pass", "wait_for_tick", "queued_in_batch", "pass",
                     "searchable_after_pass",
                     "warm_up_pass"):
            s = lg[name]
            print(f"  {name:<24} p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms  max "
                  f"{s['max_ms']} ms  (n {s['n']})")
        for name, s in lg["pass_operations"].items():
            print(f"    of the pass, {name:<20} p50 {s['p50_ms']} ms  p95 {s['p95_ms']} ms")
        order = lg["warm_up_pass_seconds_in_order"]
        print(f"  warm-up passes (shared facts of 7 runs each; one batch on one connection, "
              f"fresh tables) in order: {', '.join(f'{x:.2f}' for x in order)} s")
        c = lg["cpu"]
        print(f"  CPU over the phase: API {c['api_cores']}, PostgreSQL {c['postgres_cores']}, "
              f"this process (maintenance, polling) {c['generator_cores']} cores")
        sensor = result["thresholds"]["sensor_interval_seconds"]
        print(f"  in production: lag = up to one sensor interval ({sensor} s) + Dagster run "
              f"start + the passes ahead in the run + the pass (p50 {lg['pass']['p50_ms']} ms)")
    print(f"database afterwards: {result['database']}; API log tracebacks "
          f"{result['api_log_tracebacks']}; {result['total_seconds']} s in all")


if __name__ == "__main__":
    sys.exit(main())
