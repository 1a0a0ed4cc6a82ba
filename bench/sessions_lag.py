"""Part 2 of ``python -m bench.sessions``: maintenance lag, from a completed run to searchable
flush and summary rows (docs/benchmarks.md, 'Sessions')."""

from __future__ import annotations

import random
import sys
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
    percentile,
)
from bench.load.server import ApiServer, CpuMeter
from bench.sessions_common import INSTANCE, Texts, log, rounded, turn_item
from memory_platform.features.sessions.maintenance import run_due_sessions
from memory_platform.foundation.db.connection import connect
from memory_platform.foundation.settings import Settings


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
            items.append(turn_item(text, session.items, f"i{session.items}", at))
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
        return {"n": len(got), "p50_ms": rounded(percentile(got, 50)),
                "p95_ms": rounded(percentile(got, 95)),
                "max_ms": rounded(max(got) if got else None),
                "min_ms": rounded(min(got) if got else None)}

    done = [s for s in sessions if s.visible_at is not None]
    per_session = []
    for s in sessions:
        per_session.append({
            "session": s.key,
            "lag_s": rounded(s.visible_at - s.completed_at, 3) if s.visible_at else None,
            "wait_for_pass_s": rounded(s.pass_start - s.completed_at, 3)
            if s.pass_start and s.completed_at else None,
            "wait_for_tick_s": rounded(s.batch_start - s.completed_at, 3)
            if s.batch_start and s.completed_at else None,
            "queued_in_batch_s": rounded(s.pass_start - s.batch_start, 3)
            if s.pass_start and s.batch_start else None,
            "pass_s": rounded(s.pass_seconds, 3),
            "rows_seen_after_pass_s": rounded(s.rows_at - s.pass_end, 3)
            if s.rows_at and s.pass_end else None,
            "searchable_after_pass_s": rounded(s.visible_at - s.pass_end, 3)
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
