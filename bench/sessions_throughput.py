"""Part 1 of ``python -m bench.sessions``: append throughput through the API, against the bare
INSERT of the same rows (docs/benchmarks.md, 'Sessions')."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from bench.common import (
    percentile,
)
from bench.load.client import CLIENT_ERRORS, RawClient
from bench.load.server import ApiServer, CpuMeter
from bench.sessions_common import (
    BARE_INSERT,
    BARE_ROW,
    INSTANCE,
    KINDS,
    Texts,
    log,
    rounded,
    turn_item,
)


# --- part 1: append throughput -----------------------------------------------------------------
@dataclass
class Session:
    key: str
    user: str
    items: int = 0          # items sent so far (client item ids, seq of the bare path)
    runs: int = 0


@dataclass
class RoundStats:
    kind: str
    items: int = 0
    requests: int = 0
    completes: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    append_ms: list[float] = field(default_factory=list)
    complete_ms: list[float] = field(default_factory=list)

    def error(self, status: str) -> None:
        self.errors[status] = self.errors.get(status, 0) + 1


class ApiLoad:
    """Closed-loop session clients against the API (one RawClient connection each)."""

    def __init__(self, server: ApiServer, token: str, texts: Texts, args) -> None:
        self.server, self.texts, self.args = server, texts, args
        self.headers = {"authorization": f"Bearer {token}",
                        "content-type": "application/json"}
        self.clock = datetime.now(UTC) - timedelta(days=1)

    def _at(self) -> datetime:
        self.clock += timedelta(seconds=7)
        return min(self.clock, datetime.now(UTC))

    async def _send(self, client: RawClient, url: str, body: dict, ok: int,
                    stats: RoundStats, times: list[float]) -> bool:
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        started = time.perf_counter()
        try:
            async with asyncio.timeout(60):
                status = await client.request("POST", url, self.headers, content)
        except TimeoutError:
            stats.error("timeout")
            return False
        except CLIENT_ERRORS as exc:
            stats.error(type(exc).__name__)
            return False
        times.append((time.perf_counter() - started) * 1000)
        if status != ok:
            stats.error(str(status))
            return False
        return True

    async def _client(self, sessions: list[Session], kind: str, deadline: float,
                      stats: RoundStats) -> None:
        client = RawClient("127.0.0.1", self.server.port)
        per_request = 1 if kind == "single" else self.args.batch_items
        per_run = self.args.turn_items if kind == "single" else self.args.batch_items
        n = 0
        try:
            while time.perf_counter() < deadline:
                session = sessions[n % len(sessions)]
                n += 1
                run_id = f"r{session.runs}"
                session.runs += 1
                context = {"userId": session.user}
                base = f"/api/v1/sessions/{session.key}"
                sent = 0
                while sent < per_run and time.perf_counter() < deadline:
                    items = []
                    for _ in range(per_request):
                        items.append(turn_item(self.texts.next(), session.items,
                                           f"i{session.items}", self._at()))
                        session.items += 1
                    stats.requests += 1
                    if await self._send(client, f"{base}/items",
                                        {"runId": run_id, "context": context, "items": items},
                                        201, stats, stats.append_ms):
                        stats.items += len(items)
                    sent += len(items)
                if sent:
                    if await self._send(client, f"{base}/runs/{run_id}/complete",
                                        {"context": context}, 200, stats, stats.complete_ms):
                        stats.completes += 1
        finally:
            await client.aclose()

    async def run(self, kind: str, sessions: list[list[Session]], seconds: float,
                  stats: RoundStats) -> None:
        deadline = time.perf_counter() + seconds
        await asyncio.gather(*(self._client(own, kind, deadline, stats) for own in sessions))


class BareLoad:
    """The same items as plain INSERTs into agent_context_messages, one direct connection
    per client (autocommit: every statement its own transaction, as every API request)."""

    def __init__(self, url: str, texts: Texts, args) -> None:
        self.url, self.texts, self.args = url, texts, args
        # Opened before the rounds: CpuMeter sees only backends alive across its window.
        self.conns = [psycopg.connect(url, autocommit=True) for _ in range(args.clients)]

    def close(self) -> None:
        for conn in self.conns:
            conn.close()

    def _client(self, conn: psycopg.Connection, sessions: list[Session],
                rows_per_statement: int, deadline: float, stats: RoundStats,
                lock: threading.Lock) -> None:
        statement = BARE_INSERT + ", ".join([BARE_ROW] * rows_per_statement)
        at = datetime.now(UTC) - timedelta(hours=1)
        items = requests = 0
        times: list[float] = []
        errors: dict[str, int] = {}
        n = 0
        while time.perf_counter() < deadline:
            session = sessions[n % len(sessions)]
            n += 1
            params: list[Any] = []
            for _ in range(rows_per_statement):
                text = self.texts.next()
                seq = session.items
                session.items += 1
                params += [INSTANCE, session.key, session.user, seq,
                           "user" if seq % 2 == 0 else "assistant", text,
                           (len(text) + 3) // 4, f"r{session.runs}", f"i{seq}", at]
            session.runs += 1
            started = time.perf_counter()
            requests += 1
            try:
                conn.execute(statement, params, prepare=True)
            except psycopg.Error as exc:
                errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
                continue
            times.append((time.perf_counter() - started) * 1000)
            items += rows_per_statement
        with lock:
            stats.items += items
            stats.requests += requests
            stats.append_ms += times
            for name, count in errors.items():
                stats.errors[name] = stats.errors.get(name, 0) + count

    def run(self, kind: str, sessions: list[list[Session]], seconds: float,
            stats: RoundStats) -> None:
        rows = 1 if kind == "bare_single" else self.args.batch_items
        deadline = time.perf_counter() + seconds
        lock = threading.Lock()
        threads = [threading.Thread(target=self._client,
                                    args=(conn, own, rows, deadline, stats, lock))
                   for conn, own in zip(self.conns, sessions, strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _sessions(kind: str, clients: int, total: int) -> list[list[Session]]:
    """``total`` sessions of ``kind``, dealt to ``clients`` clients; one user each (the
    first user to name a session owns it)."""
    per = max(1, total // clients)
    return [[Session(f"tp-{kind}-c{c}-s{s:03d}", f"user-{kind}-{c}-{s:03d}")
             for s in range(per)] for c in range(clients)]


def throughput(server: ApiServer, postgres_pid: int | None, url: str, token: str,
               texts: Texts, args) -> dict[str, Any]:
    api, bare = ApiLoad(server, token, texts, args), BareLoad(url, texts, args)
    sessions = {kind: _sessions(kind, args.clients, args.sessions) for kind in KINDS}
    if args.warmup_seconds > 0:
        # Unmeasured: connections, caches and first plans; then statistics, as a database
        # in service has them (ANALYZE also invalidates plans cached on empty tables).
        for kind in KINDS:
            stats = RoundStats(kind)
            if kind.startswith("bare"):
                bare.run(kind, sessions[kind], args.warmup_seconds, stats)
            else:
                asyncio.run(api.run(kind, sessions[kind], args.warmup_seconds, stats))
            log(f"  warm-up {kind}: {stats.items:,} items" +
                (f", errors {stats.errors}" if stats.errors else ""))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        server.settle(20)
    rounds: list[dict[str, Any]] = []
    for number in range(1, args.rounds + 1):
        for kind in KINDS:
            stats = RoundStats(kind)
            started = time.perf_counter()
            with CpuMeter(server.pid, postgres_pid) as meter:
                if kind.startswith("bare"):
                    bare.run(kind, sessions[kind], args.round_seconds, stats)
                else:
                    asyncio.run(api.run(kind, sessions[kind], args.round_seconds, stats))
            wall = time.perf_counter() - started
            row = {
                "round": number, "kind": kind, "seconds": round(wall, 2),
                "items": stats.items, "requests": stats.requests, "completes": stats.completes,
                "items_per_second": round(stats.items / wall, 1),
                "requests_per_second": round(stats.requests / wall, 1),
                "append_p50_ms": rounded(percentile(stats.append_ms, 50), 2),
                "append_p95_ms": rounded(percentile(stats.append_ms, 95), 2),
                "complete_p50_ms": rounded(percentile(stats.complete_ms, 50), 2),
                "complete_p95_ms": rounded(percentile(stats.complete_ms, 95), 2),
                "errors": stats.errors, "cpu": meter.result,
            }
            rounds.append(row)
            cpu = meter.result
            log(f"  round {number} {kind:<11} {row['items_per_second']:>8,.0f} items/s  "
                f"{row['requests_per_second']:>7,.0f} req/s  append p50/p95 "
                f"{row['append_p50_ms']}/{row['append_p95_ms']} ms  complete p50/p95 "
                f"{row['complete_p50_ms']}/{row['complete_p95_ms']} ms  API "
                f"{cpu['api_cores']} PG {cpu['postgres_cores']} gen {cpu['generator_cores']}"
                f" cores" + (f"  errors {stats.errors}" if stats.errors else ""))
            if not kind.startswith("bare"):
                server.settle(20)
    bare.close()
    return summarize_throughput(rounds)


def summarize_throughput(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind = {kind: [r for r in rounds if r["kind"] == kind] for kind in KINDS}

    def med(kind: str, key: str, sub: str | None = None) -> float | None:
        values = [(r[key][sub] if sub else r[key]) for r in by_kind[kind]]
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 3) if values else None

    medians = {kind: {"items_per_second": med(kind, "items_per_second"),
                      "requests_per_second": med(kind, "requests_per_second"),
                      "append_p50_ms": med(kind, "append_p50_ms"),
                      "append_p95_ms": med(kind, "append_p95_ms"),
                      "complete_p50_ms": med(kind, "complete_p50_ms"),
                      "complete_p95_ms": med(kind, "complete_p95_ms"),
                      "api_cores": med(kind, "cpu", "api_cores"),
                      "postgres_cores": med(kind, "cpu", "postgres_cores"),
                      "generator_cores": med(kind, "cpu", "generator_cores")}
               for kind in KINDS}

    def ratio(api: str, bare: str) -> dict[str, Any]:
        pairs = [a["items_per_second"] / b["items_per_second"]
                 for a, b in zip(by_kind[api], by_kind[bare], strict=False)
                 if b["items_per_second"]]
        a, b = medians[api]["items_per_second"], medians[bare]["items_per_second"]
        return {"of_medians": round(a / b, 4) if a and b else None,
                "per_round": [round(p, 4) for p in pairs],
                "per_round_min": round(min(pairs), 4) if pairs else None,
                "per_round_max": round(max(pairs), 4) if pairs else None}

    def per_item(kind: str) -> dict[str, float | None]:
        """CPU milliseconds per appended item (cores x wall / items, median over rounds)."""
        out = {}
        for part in ("api_cores", "postgres_cores"):
            values = [r["cpu"][part] * r["seconds"] * 1000 / r["items"]
                      for r in by_kind[kind] if r["items"] and r["cpu"][part] is not None]
            out[part.replace("_cores", "_ms_per_item")] = \
                round(statistics.median(values), 3) if values else None
        return out

    return {"rounds": rounds, "median": medians,
            "cpu_per_item": {kind: per_item(kind) for kind in KINDS},
            "ratio_api_batch_to_bare_batch": ratio("batch", "bare_batch"),
            "ratio_api_single_to_bare_single": ratio("single", "bare_single"),
            "ratio_api_batch_to_api_single": (
                round(medians["batch"]["items_per_second"]
                      / medians["single"]["items_per_second"], 2)
                if medians["single"]["items_per_second"] else None)}
