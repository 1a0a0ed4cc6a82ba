"""Session grep before and after it resolves the caller's sessions first (security review of
7c85f33, finding 7: a key that can read nothing made every other caller slower).

A fresh database (embedded PostgreSQL, ``bench.common.fresh_database``) gets a large foreign
history: ``--messages`` turns of about 2.6 KB each (``--messages`` / 2 in another instance,
the rest in other users' sessions of the caller's instance), most of them containing the
pattern ``ass`` (class, pass, assessment). The caller, mallory, has a user key and no
session at all. Then, side by side in one run:

1. **One grep** of a caller with zero visible rows, ``--repeat`` times: *before* is the
   statement of 7c85f33, verbatim (``old_statement``), over the global trigram index of
   migration 0015 (re-created for this phase, dropped after); *after* is
   ``sessions.reads.grep_statement`` for a named unused session (the across-sessions grep of
   a caller with no session runs no statement at all: also timed, through the API).
   ``EXPLAIN (ANALYZE, BUFFERS)`` of each: rows rechecked, buffers, time.
2. **Another user's search under 6 parallel greps**: bob's ``GET /api/v1/memory`` p50/p95
   through the API (a subprocess, hash embeddings) with no load, while 6 threads run the old
   statement in a loop on their own connections (before), while 6 threads run the new
   ``grep`` the same way (after, like for like), and while 6 threads run mallory's
   ``GET /api/v1/sessions/grep?allSessions=true`` through the API (after, end to end: these
   also compete for the API's one worker).

Prints the numbers and writes bench/results/session_grep.json (timings are indicative: the
machine may be shared).

    .venv/bin/python -m bench.session_grep                  # ~2-3 minutes
    .venv/bin/python -m bench.session_grep --messages 40000
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg import sql

from bench.common import fresh_database, machine_info, percentile, write_result
from bench.load.server import ApiServer
from memory_platform.features import apikeys
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.sessions.reads import grep, grep_statement, like_pattern
from memory_platform.shared.access import AccessContext, history_visibility

INSTANCE, FOREIGN = "default", "other-tenant"
PATTERN = "ass"
WORDS = ["class", "pass", "assessment", "deploy", "release", "meeting", "budget",
         "invoice", "customer", "the", "and", "report", "schedule", "migration"]


def fill(conn: psycopg.Connection, messages: int) -> None:
    """``messages`` turns of ~400 words, half in another instance, half in other users'
    sessions of the caller's instance, 50 per session."""
    conn.execute(
        "INSERT INTO agent_context_messages (instance_key, session_key, user_id, seq, role,"
        " content)"
        " SELECT CASE WHEN g %% 2 = 0 THEN %(foreign)s ELSE %(own)s END,"
        "        's-' || (g / 50), 'user-' || (g / 50), g, 'user',"
        "        (SELECT string_agg((%(words)s::text[])[1 + floor(random() * %(n)s)::int], ' ')"
        "           FROM generate_series(1, 400 + g %% 5))"
        "   FROM generate_series(1, %(messages)s) g",
        {"foreign": FOREIGN, "own": INSTANCE, "words": WORDS, "n": len(WORDS),
         "messages": messages})
    conn.execute("ANALYZE agent_context_messages")
    conn.execute("ANALYZE agent_context_summaries")


def old_statement(ctx: AccessContext, pattern: str, limit: int = 20,
                  all_sessions: bool = True) -> tuple[sql.Composed, dict[str, Any]]:
    """The grep statement of 7c85f33 (``sessions/reads.py`` lines 224-290), verbatim: the
    match over every instance's trigram candidates, the history rule applied after."""
    params: dict[str, Any] = {"instance": ctx.instance_key, "session": ctx.session_key,
                              "like": like_pattern(pattern), "roles": None,
                              "limit": limit + 1}

    def part(alias: str, table: str) -> sql.Composed:
        col = lambda name: sql.Identifier(alias, name)  # noqa: E731
        where = [sql.SQL("{} = %(instance)s").format(col("instance_key")),
                 sql.SQL("{} ILIKE %(like)s").format(col("content")),
                 history_visibility(ctx, alias, table, all_sessions=all_sessions)]
        if not all_sessions:
            where.append(sql.SQL("{} = %(session)s").format(col("session_key")))
        return sql.SQL(" AND ").join(where)

    message_part = sql.SQL("""
        (SELECT 'message' AS kind, m.id, m.session_key, m.seq AS first_seq, m.seq AS last_seq,
                m.role, m.user_id, m.content, m.occurred_at, m.created_at, m.seq AS sort_seq
           FROM agent_context_messages m
          WHERE {m_where}
          ORDER BY m.created_at DESC, m.seq DESC, m.id DESC
          LIMIT %(limit)s)""").format(m_where=part("m", "agent_context_messages"))
    summary_part = sql.SQL("""
        (SELECT 'summary', s.id, s.session_key, s.first_seq, s.last_seq, NULL::text,
                s.user_id, s.content, NULL::timestamptz, s.created_at,
                COALESCE(s.last_seq, -1)
           FROM agent_context_summaries s
          WHERE {s_where}
          ORDER BY s.created_at DESC, COALESCE(s.last_seq, -1) DESC, s.id DESC
          LIMIT %(limit)s)""").format(s_where=part("s", "agent_context_summaries"))
    statement = sql.SQL("SELECT * FROM ({}) hits"
                        " ORDER BY created_at DESC, sort_seq DESC, id DESC LIMIT %(limit)s") \
        .format(sql.SQL(" UNION ALL ").join([message_part, summary_part]))
    return parameter_safe(statement), params


def new_statement(ctx: AccessContext, pattern: str) -> tuple[sql.Composed, dict[str, Any]]:
    return grep_statement(ctx, pattern, [ctx.session_key or "web:unused"], all_sessions=False,
                          roles=None, limit=20, cursor=None, scan_cap=2000)


def _walk(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for child in node.get("Plans", []) for n in _walk(child))]


def explain(conn: psycopg.Connection, statement: sql.Composed,
            params: dict[str, Any]) -> dict[str, Any]:
    """Time, shared buffers and rows the plan read or threw away (recheck and filter)."""
    [[plan]] = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + statement,
                            params).fetchone()
    nodes = _walk(plan["Plan"])
    return {
        "ms": round(plan["Execution Time"], 2),
        "shared_buffers": plan["Plan"].get("Shared Hit Blocks", 0)
        + plan["Plan"].get("Shared Read Blocks", 0),
        "rows_removed": sum(n.get("Rows Removed by Index Recheck", 0)
                            + n.get("Rows Removed by Filter", 0) for n in nodes),
        "indexes": sorted({n["Index Name"] for n in nodes if "Index Name" in n}),
    }


def timed(conn: psycopg.Connection, statement: sql.Composed, params: dict[str, Any],
          repeat: int) -> dict[str, Any]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        conn.execute(statement, params).fetchall()
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(percentile(times, 95) or 0, 2)}


def search_latency(base: str, headers: dict[str, str], seconds: float) -> dict[str, Any]:
    """bob's ordinary search, closed loop for ``seconds``."""
    times, statuses = [], []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            answer = client.get("/api/v1/memory", params={"query": "parking garage level"})
            times.append((time.perf_counter() - t0) * 1000)
            statuses.append(answer.status_code)
    return {"requests": len(times), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(percentile(times, 95) or 0, 1),
            "non_200": sum(1 for s in statuses if s != 200)}


def under_load(base: str, bob: dict[str, str], seconds: float, worker) -> dict[str, Any]:
    """bob's search latency while 6 threads run ``worker(stop)``; the workers' own counts."""
    stop = threading.Event()
    counts: list[list[float]] = [[] for _ in range(6)]
    threads = [threading.Thread(target=worker, args=(stop, counts[i])) for i in range(6)]
    for thread in threads:
        thread.start()
    time.sleep(1)
    try:
        result = search_latency(base, bob, seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    greps = [t for c in counts for t in c]
    result["greps"] = len(greps)
    result["grep_p50_ms"] = round(statistics.median(greps), 1) if greps else None
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=24000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--name", default="session_grep")
    args = parser.parse_args()
    result: dict[str, Any] = {"messages": args.messages, "pattern": PATTERN}
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(fresh_database())
        with psycopg.connect(url, autocommit=True) as conn:
            print(f"filling {args.messages} turns ...", flush=True)
            t0 = time.perf_counter()
            fill(conn, args.messages)
            size = conn.execute("SELECT pg_size_pretty(pg_total_relation_size("
                                "'agent_context_messages'))").fetchone()[0]
            print(f"  {time.perf_counter() - t0:.0f} s, agent_context_messages: {size}")
            result["table_size"] = size
            _, mallory = apikeys.create_key(conn, instance_key=INSTANCE, user_id="mallory",
                                            scopes=("memory:read", "memory:write"))
            _, bob = apikeys.create_key(conn, instance_key=INSTANCE, user_id="bob",
                                        scopes=("memory:read", "memory:write"))
            result["machine"] = machine_info(conn)
        named = AccessContext(INSTANCE, user_id="mallory", session_key="web:unused")
        across = AccessContext(INSTANCE, user_id="mallory")

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE INDEX bench_old_trgm_idx ON agent_context_messages"
                         " USING gin (content gin_trgm_ops)")
            conn.execute("CREATE INDEX bench_old_summary_trgm_idx ON agent_context_summaries"
                         " USING gin (content gin_trgm_ops)")
            conn.execute("ANALYZE agent_context_messages")
            old_across, old_named = old_statement(across, PATTERN), \
                old_statement(named, PATTERN, all_sessions=False)
            result["one_grep"] = {
                "before_all_sessions": {**explain(conn, *old_across),
                                        **timed(conn, *old_across, args.repeat)},
                "before_named_session": {**explain(conn, *old_named),
                                         **timed(conn, *old_named, args.repeat)}}

        log = Path(tempfile.mkdtemp(prefix="bench-grep-")) / "api.log"
        server = ApiServer(url, 1, 64, None, log, instance=INSTANCE)
        server.start()
        stack.callback(server.stop)
        base = server.base_url
        bob_h, mallory_h = ({"Authorization": f"Bearer {t}"} for t in (bob, mallory))
        with httpx.Client(base_url=base, headers=bob_h, timeout=30) as client:
            for n in range(20):
                client.post("/api/v1/memory", json={
                    "content": f"Bob parks in the north garage, level {n}, near exit {n}.",
                    "visibility": "private"}).raise_for_status()
        load: dict[str, Any] = {"idle": search_latency(base, bob_h, args.seconds)}
        print("idle search:", load["idle"], flush=True)

        def old_worker(stop: threading.Event, times: list[float]) -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    conn.execute(*old_across).fetchall()
                    times.append((time.perf_counter() - t0) * 1000)

        load["before_6_greps"] = under_load(base, bob_h, args.seconds, old_worker)
        print("before, 6 greps:", load["before_6_greps"], flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP INDEX bench_old_trgm_idx")
            conn.execute("DROP INDEX bench_old_summary_trgm_idx")
            new_named = new_statement(named, PATTERN)
            result["one_grep"]["after_named_session"] = {
                **explain(conn, *new_named), **timed(conn, *new_named, args.repeat)}

        def api_worker(stop: threading.Event, times: list[float]) -> None:
            with httpx.Client(base_url=base, headers=mallory_h, timeout=30) as client:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    client.get("/api/v1/sessions/grep",
                               params={"pattern": PATTERN, "allSessions": "true"})
                    times.append((time.perf_counter() - t0) * 1000)

        api_times: list[float] = []
        with httpx.Client(base_url=base, headers=mallory_h, timeout=30) as client:
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                client.get("/api/v1/sessions/grep",
                           params={"pattern": PATTERN, "allSessions": "true"}).raise_for_status()
                api_times.append((time.perf_counter() - t0) * 1000)
        result["one_grep"]["after_all_sessions_api"] = {
            "p50_ms": round(statistics.median(api_times), 2),
            "p95_ms": round(percentile(api_times, 95) or 0, 2),
            "note": "no session to read: no match statement runs"}
        def sql_worker(stop: threading.Event, times: list[float]) -> None:
            """The new grep on its own connection, as the old worker ran the old statement:
            like for like (the API worker above also competes for the API's one worker)."""
            with psycopg.connect(url, autocommit=True) as conn:
                while not stop.is_set():
                    t0 = time.perf_counter()
                    grep(conn, across, PATTERN, all_sessions=True)
                    times.append((time.perf_counter() - t0) * 1000)

        load["after_6_greps_sql"] = under_load(base, bob_h, args.seconds, sql_worker)
        print("after, 6 greps (direct, like the old):", load["after_6_greps_sql"], flush=True)
        load["after_6_greps_api"] = under_load(base, bob_h, args.seconds, api_worker)
        print("after, 6 greps through the API:", load["after_6_greps_api"], flush=True)
        result["search_under_grep_load"] = load
    for name, figures in result["one_grep"].items():
        print(f"{name:28} {figures}")
    print("written:", write_result(args.name, result))


if __name__ == "__main__":
    main()
