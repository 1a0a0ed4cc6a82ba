"""Measured runs against a running API: open and closed loop, one run, the rate sweep, and
every scenario for every worker count.

The functions take the parsed command line (``args``) for the run options: ``mode``,
``rate``, ``write_rate``, ``duration``, ``warmup``, ``timeout``, ``arrivals``, ``client``,
``connections``, ``clients``, ``seed`` and the ``sweep_*`` options.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.load import INSTANCE
from bench.load.client import Client, new_client, send
from bench.load.report import overload_verdict, print_run, run_errors, summarize
from bench.load.server import ApiServer, CpuMeter
from bench.load.workload import READ, Req, Sample, Workload, arrivals

try:  # the generator is faster on uvloop (the server uses it too, through uvicorn)
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None

EVENT_LOOP = "uvloop" if uvloop is not None else "asyncio"


def _run_async(coroutine: Coroutine[Any, Any, tuple[list[Sample], int]]
               ) -> tuple[list[Sample], int]:
    if uvloop is not None:
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coroutine)
    return asyncio.run(coroutine)


async def open_loop(client: Client, plan: list[tuple[float, Req]], warmup: float,
                    timeout: float, connections: int) -> tuple[list[Sample], int]:
    """Send every planned request at its offset; answers the samples and how many requests
    had not finished ``timeout`` seconds after the last send (cancelled, counted)."""
    samples: list[Sample] = []
    tasks: set[asyncio.Task] = set()
    slots = asyncio.Semaphore(connections)
    start = time.perf_counter() + 0.05
    for offset, req in plan:
        scheduled = start + offset
        delay = scheduled - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(send(client, req, start, scheduled, scheduled + timeout,
                                        offset >= warmup, samples, slots))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    unfinished = 0
    if tasks:
        _, pending = await asyncio.wait(set(tasks), timeout=timeout + 5)
        unfinished = len(pending)
        for task in pending:
            task.cancel()
    return samples, unfinished


async def closed_loop(client: Client, next_request: Callable[[], Req], clients: int,
                      warmup: float, seconds: float, timeout: float
                      ) -> tuple[list[Sample], int]:
    """``clients`` senders, each sending ``next_request()`` when its previous one answered,
    for ``warmup`` + ``seconds``; answers the samples and 0 unfinished."""
    samples: list[Sample] = []
    start = time.perf_counter()
    end = start + warmup + seconds

    async def worker() -> None:
        while (now := time.perf_counter()) < end:
            await send(client, next_request(), start, now, now + timeout,
                       now - start >= warmup, samples)

    await asyncio.gather(*(worker() for _ in range(clients)))
    return samples, 0


def run_load(server: ApiServer, workload: Workload, args: argparse.Namespace, *, label: str,
             rate: float, write_rate: float, health: bool = False,
             postgres_pid: int | None = None) -> dict:
    """One measured run against the running server; prints its table and answers its dict."""
    total = args.warmup + args.duration
    rng = random.Random(f"{args.seed}/{label}/{rate}/{write_rate}")
    make_read = workload.health if health else workload.read
    if args.mode == "open":
        plan = [(t, make_read()) for t in arrivals(rate, total, rng, args.arrivals)]
        plan += [(t, workload.write()) for t in arrivals(write_rate, total, rng, args.arrivals)]
        plan.sort(key=lambda item: item[0])
    write_share = write_rate / (rate + write_rate) if rate + write_rate > 0 else 0.0

    def next_request() -> Req:
        return workload.write() if rng.random() < write_share else make_read()

    load_before = os.getloadavg()

    async def drive() -> tuple[list[Sample], int]:
        client = new_client(args.client, "127.0.0.1", server.port, args.connections)
        try:
            # open keep-alive connections before the clock starts
            warm = min(args.connections, args.clients if args.mode == "closed" else 16)
            await asyncio.gather(*(client.request("GET", "/healthz", {})
                                   for _ in range(warm)))
            if args.mode == "open":
                return await open_loop(client, plan, args.warmup, args.timeout,
                                       args.connections)
            return await closed_loop(client, next_request, args.clients, args.warmup,
                                     args.duration, args.timeout)
        finally:
            await client.aclose()

    with CpuMeter(server.pid, postgres_pid) as meter:
        samples, unfinished = _run_async(drive())
    routes = sorted({s.route for s in samples})
    result = {
        "label": label,
        "mode": args.mode,
        "client": args.client,
        "workers": server.workers,
        "offered": ({"read_rps": rate, "write_rps": write_rate, "arrivals": args.arrivals}
                    if args.mode == "open" else
                    {"clients": args.clients, "write_share": round(write_share, 3)}),
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "routes": {route: summarize(samples, route, args.duration, args.warmup)
                   for route in routes},
        "unfinished": unfinished,
        "cpu": meter.result,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print_run(result)
    return result


def _passes(result: dict, p95_limit: float) -> bool:
    read = result["routes"].get(READ)
    return (read is not None and read["p95_ms"] is not None and read["p95_ms"] < p95_limit
            and run_errors(result) == 0)


def sweep(server: ApiServer, workload: Workload, args: argparse.Namespace,
          postgres_pid: int | None) -> dict:
    """Open-loop reads at rising rates until p95 >= the limit or an error; then bisect."""
    step_args = argparse.Namespace(**{**vars(args), "mode": "open",
                                      "duration": args.sweep_duration,
                                      "warmup": args.sweep_warmup})
    steps: list[dict] = []
    best: float | None = None
    failed: float | None = None

    def step(rate: float) -> bool:
        server.ready()
        # enough samples for a p95 at low rates
        step_args.duration = max(args.sweep_duration, args.sweep_min_samples / rate)
        result = run_load(server, workload, step_args, label=f"sweep {rate:g}/s", rate=rate,
                          write_rate=args.sweep_write_rate, postgres_pid=postgres_pid)
        result["passed"] = _passes(result, args.sweep_p95_ms)
        steps.append(result)
        return result["passed"]

    for rate in args.sweep_rates:
        if step(rate):
            best = rate
        else:
            failed = rate
            break
    for _ in range(args.sweep_refine):
        low = best or 0.0
        if failed is None or failed - low <= max(2.0, 0.1 * failed):
            break
        mid = float(round((low + failed) / 2))
        if step(mid):
            best = mid
        else:
            failed = mid
    print(f"\n== sweep, workers={server.workers}: highest passing read rate "
          f"{best if best is not None else 'none'} req/s (p95 < {args.sweep_p95_ms:g} ms, "
          f"no errors); first failing {failed}", flush=True)
    return {"workers": server.workers, "p95_limit_ms": args.sweep_p95_ms,
            "write_rps": args.sweep_write_rate, "highest_passing_rps": best,
            "first_failing_rps": failed,
            "steps": [{"rate": s["offered"]["read_rps"], "passed": s["passed"],
                       **{k: s["routes"][READ][k] for k in
                          ("achieved_rps", "p50_ms", "p95_ms", "p99_ms", "errors")},
                       "cpu": s["cpu"], "load_average_before": s["load_average_before"]}
                      for s in steps],
            "runs": steps}


def overload(server: ApiServer, workload: Workload, args: argparse.Namespace,
             postgres_pid: int | None) -> dict:
    """Admission control under overload, on one server: the read capacity (closed loop,
    ``--clients`` back to back, unless ``--capacity`` names it), then open-loop reads at a
    quarter of it (unloaded) and at ``--overload-factor`` times it, alternating
    ``--overload-rounds`` times; answers each pair's verdict (``overload_verdict``)."""
    capacity = args.capacity
    if capacity is None:
        server.ready()
        closed_args = argparse.Namespace(**{**vars(args), "mode": "closed"})
        probe = run_load(server, workload, closed_args, label="capacity (closed loop)",
                         rate=1.0, write_rate=0.0, postgres_pid=postgres_pid)
        capacity = probe["routes"][READ]["achieved_rps"]
    open_args = argparse.Namespace(**{**vars(args), "mode": "open"})
    rounds = []
    for index in range(args.overload_rounds):
        pair = {}
        for label, rate in (("unloaded", capacity / 4),
                            ("overload", capacity * args.overload_factor)):
            server.ready()
            pair[label] = run_load(server, workload, open_args,
                                   label=f"{label} {rate:.0f}/s (round {index + 1})",
                                   rate=round(rate, 1), write_rate=0.0,
                                   postgres_pid=postgres_pid)
        rounds.append({**overload_verdict(pair["unloaded"], pair["overload"]),
                       "runs": pair})
    for r in rounds:
        print(f"\n== overload, capacity {capacity:g} req/s: unloaded p95 "
              f"{r['unloaded_p95_ms']} ms, admitted p95 {r['admitted_p95_ms']} ms "
              f"({r['admitted_over_unloaded_p95']}x) at {r['overload_rps']:g} req/s, "
              f"{r['admitted']} admitted, {r['refused']} refused (p95 "
              f"{r['refused_p95_ms']} ms, max {r['refused_max_ms']} ms), other errors "
              f"{r['other_errors']}: {'met' if r['met'] else 'NOT met'}", flush=True)
    return {"workers": server.workers, "capacity_rps": capacity,
            "factor": args.overload_factor, "rounds": rounds}


@dataclass
class Measurements:
    """What ``run_scenarios`` measured: the runs, the sweeps (each with its step runs), the
    overload rounds and the API servers they ran against."""

    runs: list[dict] = field(default_factory=list)
    sweeps: list[dict] = field(default_factory=list)
    overloads: list[dict] = field(default_factory=list)
    servers: list[dict] = field(default_factory=list)


def run_scenarios(url: str, workload: Workload, scenarios: list[str],
                  worker_counts: list[int], extra_env: dict[str, str],
                  args: argparse.Namespace, *, postgres_pid: int | None,
                  server_niceness: int) -> Measurements:
    """For each worker count, an API on database ``url`` (at ``server_niceness``, its
    environment plus ``extra_env``) and every scenario against it, in order. The server log
    is removed after a clean pass and kept (its path printed) after a failure."""
    log_path = Path(tempfile.gettempdir()) / f"api_load_server_{os.getpid()}.log"
    measured = Measurements()
    runs, sweeps, servers = measured.runs, measured.sweeps, measured.servers
    for workers in worker_counts:
        server = ApiServer(url, workers, args.dims, args.pool_max_size, log_path,
                           server_niceness, extra_env, instance=INSTANCE)
        try:
            server.start()
            servers.append({"workers": workers, "pids": server.pids(), "port": server.port,
                            "extra_env": extra_env})
            print(f"\nAPI on {server.base_url}, {workers} worker(s), pids "
                  f"{server.pids()}, log {log_path}", flush=True)
            for scenario in scenarios:
                if scenario == "sweep":
                    sweeps.append(sweep(server, workload, args, postgres_pid))
                    continue
                if scenario == "overload":
                    measured.overloads.append(overload(server, workload, args, postgres_pid))
                    continue
                server.ready()
                write_rate = args.write_rate if scenario == "mixed" else 0.0
                run_args = args
                if scenario == "closed":  # capacity: N clients back to back, reads
                    run_args = argparse.Namespace(**{**vars(args), "mode": "closed"})
                runs.append(run_load(server, workload, run_args, label=scenario,
                                     rate=args.rate, write_rate=write_rate,
                                     health=scenario == "healthz",
                                     postgres_pid=postgres_pid))
        finally:
            server.stop()
    log_path.unlink(missing_ok=True)
    return measured
