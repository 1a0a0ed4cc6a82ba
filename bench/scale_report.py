"""What ``python -m bench.scale`` prints: the table of points, its subtitle and the closing
lines (the ratios side by side)."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.common import machine_info

# --- output -----------------------------------------------------------------------------------

HEADER = (f"{'memories':>10} {'dims':>5} {'import/s':>9} {'load/s':>8} {'index s':>8} "
          f"{'lib p50':>8} {'lib p95':>8} {'lib p99':>8} {'api p95':>8} {'api cpu':>8} "
          f"{'bare cpu':>9} {'ratio':>6} {'load avg':>9}")


def table_row(point: dict) -> str:
    """A point as a row of the printed table (ms; CPU in ms per request/query)."""
    imp, lib = point.get("import") or {}, point.get("library") or {}
    api, cpu = point.get("api") or {}, point.get("cpu") or {}

    def f(value: object, fmt: str) -> str:
        return format(value, fmt) if isinstance(value, int | float) else "-"

    return (f"{point['n']:>10,} {point['dims']:>5} "
            f"{f(imp.get('total_rows_per_second'), '>9,.0f')} "
            f"{f(imp.get('load_rows_per_second'), '>8,.0f')} "
            f"{f(imp.get('index_seconds'), '>8.1f')} "
            f"{f(lib.get('p50_ms'), '>8.2f')} {f(lib.get('p95_ms'), '>8.2f')} "
            f"{f(lib.get('p99_ms'), '>8.2f')} {f(api.get('p95_ms'), '>8.2f')} "
            f"{f(cpu.get('api_cpu_ms_per_request'), '>8.2f')} "
            f"{f(cpu.get('bare_postgres_cpu_ms_per_query'), '>9.3f')} "
            f"{f(cpu.get('ratio_total'), '>6.1f')} "
            f"{point.get('load_average', ['-'])[0]!s:>9}")


def subtitle(machine: dict, points: list[dict]) -> str:
    loads = [p["load_average"][0] for p in points if p.get("load_average")]
    load = f", load average {min(loads):g}-{max(loads):g}" if loads else ""
    return (f"{datetime.now(UTC):%Y-%m-%d}: {machine.get('cores')} cores, "
            f"PostgreSQL {machine.get('postgresql')}, pgvector {machine.get('pgvector')}, "
            f"hash embeddings{load}")


def closing(payload: dict) -> None:
    ratio = payload.get("import_ratio")
    if ratio:
        print(f"\nimport ratio at {ratio['memories']:,} x {ratio['dims']}: bulk / raw "
              f"total {ratio['ratio_total']}x (load {ratio['ratio_load']}x, index "
              f"{ratio['ratio_index']}x) over {len(ratio['rounds'])} round(s)")
    for point in payload["points"]:
        cpu = point.get("cpu") or {}
        print(f"cpu at {point['n']:,} x {point['dims']}: API {cpu.get('api_cpu_ms_per_request')}"
              f" ms/request (PostgreSQL {cpu.get('api_postgres_cpu_ms_per_request')}) vs bare "
              f"{cpu.get('bare_postgres_cpu_ms_per_query')} ms/query: "
              f"{cpu.get('ratio_total')}x ({cpu.get('ratio_postgres')}x PostgreSQL only)")
    print(f"load average start {payload['load_average_start']}, end "
          f"{payload.get('load_average_end')}; {payload.get('seconds')} s; machine "
          f"{machine_info().get('cores')} cores")
