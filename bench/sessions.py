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
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psycopg

from bench.common import (
    fresh_database,
    machine_info,
    percentile,
    synthetic_corpus,
    write_result,
)
from bench.load.client import CLIENT_ERRORS, RawClient
from bench.load.database import start_postgres
from bench.load.server import ApiServer, CpuMeter
from memory_platform import apikeys
from memory_platform.db.connection import connect
from memory_platform.sessions.maintenance import run_due_sessions
from memory_platform.settings import Settings

PROGRAM = "python -m bench.sessions"
INSTANCE = "bench-sessions"
KINDS = ("single", "batch", "bare_single", "bare_batch")
BARE_INSERT = (
    "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
    " content, token_count, run_id, client_item_id, occurred_at) VALUES ")
BARE_ROW = "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- text --------------------------------------------------------------------------------------
class Texts:
    """A pool of bilingual turn texts (200-600 characters, no credentials, no repeats),
    handed out round-robin."""

    def __init__(self, n: int, seed: int) -> None:
        self.pool = [row["content"] for row in synthetic_corpus(
            n, seed=seed, low=200, high=600, duplicate_share=0.0, invalid_share=0.0)]
        self.i = 0

    def next(self) -> str:
        self.i += 1
        return self.pool[self.i % len(self.pool)]

    def sized(self, target_bytes: int) -> list[str]:
        """Texts whose UTF-8 bytes add up to just under ``target_bytes`` (the last one cut
        at a word)."""
        out: list[str] = []
        used = 0
        while used < target_bytes - 60:
            text = self.next()
            room = target_bytes - used
            if len(text.encode()) > room:
                cut = text.encode()[:room].decode(errors="ignore")
                text = cut[:cut.rfind(" ")].rstrip(" ,;") + "." if " " in cut else cut
            if len(text) < 20:
                break
            out.append(text)
            used += len(text.encode())
        return out


def _item(text: str, n: int, client_id: str, at: datetime) -> dict[str, Any]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": text,
            "clientItemId": client_id, "occurredAt": at.isoformat(timespec="seconds")}


def _rel(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


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
                        items.append(_item(self.texts.next(), session.items,
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
                "append_p50_ms": _rel(percentile(stats.append_ms, 50), 2),
                "append_p95_ms": _rel(percentile(stats.append_ms, 95), 2),
                "complete_p50_ms": _rel(percentile(stats.complete_ms, 50), 2),
                "complete_p95_ms": _rel(percentile(stats.complete_ms, 95), 2),
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


# --- part 2: maintenance lag -------------------------------------------------------------------
@dataclass
class LagSession:
    key: str
    user: str
    items: int = 0
    completed_at: float | None = None        # perf_counter of the completion response
    batch_start: float | None = None         # the maintenance batch that took it began
    pass_start: float | None = None
    pass_end: float | None = None
    pass_seconds: float | None = None
    operations: dict[str, Any] = field(default_factory=dict)
    rows_at: float | None = None             # flush and summary rows first seen in the table
    visible_at: float | None = None          # both returned by search
    searches: int = 0
    row_ids: dict[str, str] = field(default_factory=dict)


class LagClient:
    """Synchronous API calls of the lag phase (httpx: few requests, bodies read)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60,
                                 headers={"authorization": f"Bearer {token}"})

    def append_run(self, session: LagSession, run_id: str, texts: list[str]) -> None:
        at = datetime.now(UTC) - timedelta(minutes=5)
        items = []
        for text in texts:
            items.append(_item(text, session.items, f"i{session.items}", at))
            session.items += 1
        answer = self.http.post(f"/api/v1/sessions/{session.key}/items",
                                json={"runId": run_id, "context": {"userId": session.user},
                                      "items": items})
        if answer.status_code != 201:
            raise RuntimeError(f"append answered {answer.status_code}: {answer.text[:300]}")
        done = self.http.post(f"/api/v1/sessions/{session.key}/runs/{run_id}/complete",
                              json={"context": {"userId": session.user}})
        if done.status_code != 200:
            raise RuntimeError(f"complete answered {done.status_code}: {done.text[:300]}")

    def search_ids(self, user: str, query: str) -> set[str]:
        answer = self.http.get("/api/v1/memory", params={"query": query, "userId": user,
                                                         "limit": 50})
        if answer.status_code != 200:
            raise RuntimeError(f"search answered {answer.status_code}: {answer.text[:300]}")
        return {hit["id"] for hit in answer.json()["results"]}


def _query(text: str, chars: int = 300) -> str:
    if len(text) <= chars:
        return text
    cut = text[:chars]
    return cut[:cut.rfind(" ")] if " " in cut else cut


class Maintainer(threading.Thread):
    """``run_due_sessions`` every ``tick`` seconds on a new connection: the sensor's job
    without Dagster. Records every pass (its end is the progress callback's time)."""

    def __init__(self, url: str, settings: Settings, tick: float,
                 sessions: dict[str, LagSession]) -> None:
        super().__init__(daemon=True)
        self.url, self.settings, self.tick, self.sessions = url, settings, tick, sessions
        self.stop = threading.Event()
        self.passes: list[dict[str, Any]] = []
        self.batch_start = 0.0
        self.batches: list[dict[str, Any]] = []
        self.error: BaseException | None = None

    def _progress(self, number: int, total: int, session_pass) -> None:
        end = time.perf_counter()
        record = {"session": session_pass.session_key, "outcome": session_pass.outcome,
                  "seconds": session_pass.duration_seconds, "end": end,
                  "operations": {o.operation: {"outcome": o.outcome, "reason": o.reason,
                                               "seconds": round(o.duration_seconds, 4),
                                               "rows": o.rows_written}
                                 for o in session_pass.operations}}
        self.passes.append(record)
        session = self.sessions.get(session_pass.session_key)
        if session is not None and session.completed_at is not None \
                and session.pass_end is None and session_pass.outcome == "done":
            session.pass_end = end
            session.batch_start = self.batch_start
            session.pass_seconds = session_pass.duration_seconds
            session.pass_start = end - session_pass.duration_seconds
            session.operations = record["operations"]

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                started = self.batch_start = time.perf_counter()
                # A connection per tick: each sensor-launched run is a new process (a new
                # pool), so no plan cached by an earlier run carries over.
                with connect(self.settings, autocommit=True) as conn:
                    batch = run_due_sessions(conn, self.settings, progress=self._progress)
                if batch.passes:
                    self.batches.append({"sessions": len(batch.passes),
                                         "seconds": round(batch.duration_seconds, 3)})
                self.stop.wait(max(0.0, self.tick - (time.perf_counter() - started)))
        except BaseException as exc:  # reported by the main thread
            self.error = exc


def drain(url: str, settings: Settings) -> list[dict[str, Any]]:
    """Maintain every due session now (the warm-up runs) on one connection, as one run of
    the job would; their passes in order."""
    passes: list[dict[str, Any]] = []
    with connect(settings, autocommit=True) as conn:
        while True:
            batch = run_due_sessions(conn, settings)
            passes += [{"session": p.session_key, "outcome": p.outcome,
                        "seconds": p.duration_seconds,
                        "operations": {o.operation: {"outcome": o.outcome, "reason": o.reason,
                                                     "seconds": round(o.duration_seconds, 4),
                                                     "rows": o.rows_written}
                                       for o in p.operations}}
                       for p in batch.passes]
            if not batch.passes:
                return passes


def _rows(conn: psycopg.Connection, session_key: str) -> dict[str, tuple[str, str]]:
    """The session's newest flush and summary memory rows: source type -> (id, content)."""
    found: dict[str, tuple[str, str]] = {}
    for source, ident, content in conn.execute(
            "SELECT source_type, id::text, content FROM agent_memories"
            " WHERE instance_key = %s AND session_key = %s"
            "   AND source_type IN ('flush', 'summary') ORDER BY created_at",
            (INSTANCE, session_key)):
        found[source] = (ident, content)
    return found


def watch(url: str, client: LagClient, sessions: list[LagSession], timeout: float,
          poll: float) -> None:
    """Until every completed session's flush and summary rows are returned by search (or
    ``timeout`` after its completion)."""
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            now = time.perf_counter()
            waiting = [s for s in sessions if s.visible_at is None
                       and (s.completed_at is None or now - s.completed_at < timeout)]
            if not waiting:
                return
            for session in waiting:
                if session.completed_at is None:
                    continue
                rows = _rows(conn, session.key)
                # A flush whose every fact repeats a stored one (the shared facts of the same
                # turns) writes no row: the write path's dedup only touches the stored
                # memory. Then the summary row alone is waited for.
                flush = session.operations.get("memory_flush")
                need = {"summary"} if flush and flush["rows"] == 0 else {"flush", "summary"}
                if not need <= rows.keys():
                    continue
                if session.rows_at is None:
                    session.rows_at = time.perf_counter()
                    session.row_ids = {k: rows[k][0] for k in need}
                hits: set[str] = set()
                for source in need:
                    session.searches += 1
                    hits |= client.search_ids(session.user, _query(rows[source][1]))
                if all(any(rows[k][0] in hit for hit in hits) for k in need):
                    session.visible_at = time.perf_counter()
            time.sleep(poll)


def lag(server: ApiServer, postgres_pid: int | None, url: str, token: str, texts: Texts,
        settings: Settings, args) -> dict[str, Any]:
    client = LagClient(server.base_url, token)
    sessions = [LagSession(f"lag-s{n:03d}", f"lag-user-{n:03d}")
                for n in range(args.lag_sessions)]
    with psycopg.connect(url, autocommit=True) as conn:
        # Part 1's sessions are not maintained here: out of the queue (a bench shortcut).
        conn.execute("UPDATE agent_session_state SET maintenance_done_at = now()"
                     " WHERE instance_key = %s AND session_key LIKE 'tp-%%'", (INSTANCE,))
    log(f"  warm-up: {len(sessions)} sessions x 7 runs of ~{args.warm_run_bytes:,} bytes")
    for number in range(7):
        for session in sessions:
            client.append_run(session, f"r{number}", texts.sized(args.warm_run_bytes))
    warm = drain(url, settings)
    with psycopg.connect(url, autocommit=True) as conn:
        before = {s.key: _rows(conn, s.key) for s in sessions}
        transcript = {key: int(total) for key, total in conn.execute(
            "SELECT session_key, sum(transcript_bytes) FROM agent_session_runs"
            " WHERE instance_key = %s AND session_key LIKE 'lag-%%' GROUP BY 1",
            (INSTANCE,)).fetchall()}
    early = [k for k, rows in before.items() if rows]
    warm_seconds = [p["seconds"] for p in warm if p["outcome"] == "done"]
    log(f"  warm-up maintained: {len(warm)} passes, p50 "
        f"{percentile(warm_seconds, 50) or 0:.3f} s; transcript before the last run "
        f"{min(transcript.values()):,}-{max(transcript.values()):,} bytes"
        + (f"; flush/summary rows already in {len(early)} sessions" if early else ""))

    by_key = {s.key: s for s in sessions}
    maintainer = Maintainer(url, settings, args.tick_seconds, by_key)
    watcher = threading.Thread(target=watch, daemon=True,
                               args=(url, LagClient(server.base_url, token), sessions,
                                     args.lag_timeout, args.poll_seconds))
    last_bytes: list[int] = []
    gaps = random.Random(args.seed)
    with CpuMeter(server.pid, postgres_pid) as meter:
        maintainer.start()
        watcher.start()
        for session in sessions:
            texts_8 = texts.sized(args.last_run_bytes)
            last_bytes.append(sum(len(t.encode()) for t in texts_8))
            client.append_run(session, "r7", texts_8)
            session.completed_at = time.perf_counter()
            time.sleep(gaps.expovariate(1 / args.arrival_seconds))
        watcher.join(args.lag_timeout + 30)
        maintainer.stop.set()
        maintainer.join(120)
    if maintainer.error is not None:
        raise maintainer.error
    return summarize_lag(sessions, maintainer, warm, transcript, last_bytes, meter.result, args)


def summarize_lag(sessions: list[LagSession], maintainer: Maintainer, warm: list[dict],
                  transcript: dict[str, int], last_bytes: list[int], cpu: dict,
                  args) -> dict[str, Any]:
    def ms(values: list[float | None]) -> dict[str, Any]:
        got = [v * 1000 for v in values if v is not None]
        return {"n": len(got), "p50_ms": _rel(percentile(got, 50)),
                "p95_ms": _rel(percentile(got, 95)), "max_ms": _rel(max(got) if got else None),
                "min_ms": _rel(min(got) if got else None)}

    done = [s for s in sessions if s.visible_at is not None]
    per_session = []
    for s in sessions:
        per_session.append({
            "session": s.key,
            "lag_s": _rel(s.visible_at - s.completed_at, 3) if s.visible_at else None,
            "wait_for_pass_s": _rel(s.pass_start - s.completed_at, 3)
            if s.pass_start and s.completed_at else None,
            "wait_for_tick_s": _rel(s.batch_start - s.completed_at, 3)
            if s.batch_start and s.completed_at else None,
            "queued_in_batch_s": _rel(s.pass_start - s.batch_start, 3)
            if s.pass_start and s.batch_start else None,
            "pass_s": _rel(s.pass_seconds, 3),
            "rows_seen_after_pass_s": _rel(s.rows_at - s.pass_end, 3)
            if s.rows_at and s.pass_end else None,
            "searchable_after_pass_s": _rel(s.visible_at - s.pass_end, 3)
            if s.visible_at and s.pass_end else None,
            "searches": s.searches, "operations": s.operations, "rows": s.row_ids})
    op_seconds: dict[str, list[float]] = {}
    for s in sessions:
        for name, op in s.operations.items():
            op_seconds.setdefault(name, []).append(op["seconds"])
    return {
        "sessions": len(sessions), "searchable": len(done),
        "flush_all_deduplicated": [s.key for s in sessions
                                   if s.operations.get("memory_flush", {}).get("rows") == 0],
        "not_searchable_within_timeout": [s.key for s in sessions if s.visible_at is None],
        "tick_seconds": args.tick_seconds, "arrival_seconds": args.arrival_seconds,
        "transcript_bytes_before_last_run": {"min": min(transcript.values()),
                                             "max": max(transcript.values())},
        "last_run_bytes": {"min": min(last_bytes), "max": max(last_bytes)},
        "lag": ms([s.visible_at - s.completed_at for s in done]),
        "wait_for_pass": ms([s.pass_start - s.completed_at for s in sessions
                             if s.pass_start and s.completed_at]),
        "wait_for_tick": ms([s.batch_start - s.completed_at for s in sessions
                             if s.batch_start and s.completed_at]),
        "queued_in_batch": ms([s.pass_start - s.batch_start for s in sessions
                               if s.pass_start and s.batch_start]),
        "pass": ms([s.pass_seconds for s in sessions]),
        "pass_operations": {name: ms(values) for name, values in op_seconds.items()},
        "searchable_after_pass": ms([s.visible_at - s.pass_end for s in done if s.pass_end]),
        "warm_up_pass": ms([p["seconds"] for p in warm if p["outcome"] == "done"]),
        "warm_up_pass_seconds_in_order": [round(p["seconds"], 3) for p in warm],
        "warm_up_operations": {
            name: ms([p["operations"][name]["seconds"] for p in warm
                      if name in p["operations"]])
            for name in ("shared_facts", "memory_flush", "history_compaction")},
        "warm_up_passes": len(warm),
        "batches": maintainer.batches,
        "cpu": cpu,
        "per_session": per_session,
    }


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
