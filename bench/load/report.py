"""The numbers of a run per route, its printed table, and the issue's targets."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bench.common import percentile
from bench.load.workload import READ, WRITE, Sample


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def summarize(samples: list[Sample], route: str, seconds: float, warmup: float) -> dict:
    """Counts, rates and latency percentiles (ms) of the measured samples of ``route``;
    achieved requests/s count the answers that completed inside the measured window."""
    measured = [s for s in samples if s.route == route and s.measured]
    ok = [s for s in measured if s.ok]
    latency = [s.latency * 1000 for s in ok]
    in_window = sum(1 for s in ok if warmup <= s.done < warmup + seconds)
    errors = Counter(s.status for s in measured if not s.ok)
    refused = [s.service * 1000 for s in measured if s.status == "503"]
    return {
        "count": len(measured),
        "ok": len(ok),
        "offered_rps": round(len(measured) / seconds, 1),
        "achieved_rps": round(in_window / seconds, 1),
        "p50_ms": _r(percentile(latency, 50)),
        "p95_ms": _r(percentile(latency, 95)),
        "p99_ms": _r(percentile(latency, 99)),
        "max_ms": _r(max(latency) if latency else None),
        "mean_ms": _r(sum(latency) / len(latency) if latency else None),
        "service_p95_ms": _r(percentile([s.service * 1000 for s in ok], 95)),
        "generator_lag_p99_ms": _r(percentile([s.lag * 1000 for s in measured], 99)),
        "errors": sum(errors.values()),
        "errors_by_status": dict(errors),
        "deduplicated": sum(1 for s in ok if s.route == WRITE and s.status == "200"),
        # 503s (admission control sheds them): how fast a refusal came back once sent
        "refused": len(refused),
        "refused_p50_ms": _r(percentile(refused, 50)),
        "refused_p95_ms": _r(percentile(refused, 95)),
        "refused_max_ms": _r(max(refused) if refused else None),
    }


def print_run(result: dict) -> None:
    """The table of one run (a ``run_load`` result) on stdout."""
    offered = result["offered"]
    what = (f"open loop, offered {offered['read_rps']:g} reads/s + {offered['write_rps']:g} "
            f"writes/s ({offered['arrivals']})" if result["mode"] == "open"
            else f"closed loop, {offered['clients']} clients")
    print(f"\n== {result['label']} | workers={result['workers']} | {what} | "
          f"client {result['client']} | "
          f"{result['duration_s']:g} s (+{result['warmup_s']:g} s warmup) | load avg before "
          f"{'/'.join(str(x) for x in result['load_average_before'])}", flush=True)
    print(f"{'route':<22}{'count':>7}{'offer/s':>9}{'done/s':>8}{'p50':>9}{'p95':>9}"
          f"{'p99':>9}{'max':>9}{'svc95':>9}{'lag99':>8}  errors")
    for route, s in result["routes"].items():
        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"
        errors = ", ".join(f"{k}: {v}" for k, v in s["errors_by_status"].items()) or "0"
        print(f"{route:<22}{s['count']:>7}{s['offered_rps']:>9}{s['achieved_rps']:>8}"
              f"{ms(s['p50_ms']):>9}{ms(s['p95_ms']):>9}{ms(s['p99_ms']):>9}"
              f"{ms(s['max_ms']):>9}{ms(s['service_p95_ms']):>9}"
              f"{ms(s['generator_lag_p99_ms']):>8}  {errors}")
    cpu = result["cpu"]
    print(f"   (ms; svc95 = p95 from actual send; lag99 = generator's send delay) "
          f"CPU cores used: generator {cpu['generator_cores']}, API {cpu['api_cores']}, "
          f"PostgreSQL {cpu['postgres_cores']}; unfinished {result['unfinished']}", flush=True)


def run_errors(result: dict) -> int:
    """Failed requests of a run, over all routes, plus those it left unfinished."""
    return sum(r["errors"] for r in result["routes"].values()) + result["unfinished"]


def targets(runs: list[dict], sweeps: list[dict], sweep_p95_ms: float) -> list[dict]:
    """The issue's targets as the runs met them: GET at 200 reads/s, POST at 50 writes/s
    beside them (open loop only), and each sweep's highest passing read rate."""
    out = []
    for run in runs:
        if run["mode"] != "open" or run["offered"]["read_rps"] != 200:
            continue
        read, write = run["routes"].get(READ), run["routes"].get(WRITE)
        errors = run_errors(run)
        if read and run["label"] == "read":
            out.append({"target": "GET p95 <= 25 ms, zero errors at 200 req/s",
                        "workers": run["workers"], "p95_ms": read["p95_ms"], "errors": errors,
                        "met": read["p95_ms"] is not None and read["p95_ms"] <= 25
                        and errors == 0})
        if write and run["offered"]["write_rps"] == 50:
            out.append({"target": "POST p95 <= 30 ms at 50 req/s mixed into 200 reads/s",
                        "workers": run["workers"], "p95_ms": write["p95_ms"],
                        "read_p95_ms": read["p95_ms"] if read else None, "errors": errors,
                        "met": write["p95_ms"] is not None and write["p95_ms"] <= 30
                        and errors == 0})
    for s in sweeps:
        out.append({"target": f"highest read rate with p95 < {sweep_p95_ms:g} ms "
                              "(reported)", "workers": s["workers"],
                    "highest_passing_rps": s["highest_passing_rps"]})
    return out


def overload_verdict(unloaded: dict, overloaded: dict) -> dict:
    """The issue's overload target from two read runs of one server: at 2x capacity the
    admitted requests keep p95 within 2x the unloaded p95, the rest are refused within
    10 ms."""
    calm, busy = unloaded["routes"][READ], overloaded["routes"][READ]
    ratio = (busy["p95_ms"] / calm["p95_ms"]
             if busy["p95_ms"] is not None and calm["p95_ms"] else None)
    other_errors = busy["errors"] - busy["refused"]
    return {"unloaded_rps": unloaded["offered"]["read_rps"],
            "overload_rps": overloaded["offered"]["read_rps"],
            "unloaded_p95_ms": calm["p95_ms"], "admitted_p95_ms": busy["p95_ms"],
            "admitted_over_unloaded_p95": None if ratio is None else round(ratio, 2),
            "admitted": busy["ok"], "achieved_rps": busy["achieved_rps"],
            "refused": busy["refused"], "refused_p95_ms": busy["refused_p95_ms"],
            "refused_max_ms": busy["refused_max_ms"], "other_errors": other_errors,
            "unfinished": overloaded["unfinished"],
            "met": ratio is not None and ratio <= 2.0 and other_errors == 0
            and (busy["refused"] == 0 or (busy["refused_p95_ms"] or 0) <= 10.0)}


def print_closing(result: dict, written_to: Path) -> None:
    """The targets, the machine and where the JSON went, after all runs."""
    machine = result["machine"]
    print("\ntargets:")
    for t in result["targets"]:
        print("  " + ", ".join(f"{k}={v}" for k, v in t.items()))
    print(f"machine: {machine['cores']} cores {machine['cpu']}, {machine['ram_gb']} GB; "
          f"load avg at end {'/'.join(str(x) for x in result['load_average_end'])}; "
          f"generator shares the cores with the API and PostgreSQL")
    print(f"wrote {written_to}")
