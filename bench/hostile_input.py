"""Hostile-input benchmark: the largest allowed bodies of adversarial text on every route of
the API that takes text, while a separate process polls /healthz every 20 ms.

Starts an embedded PostgreSQL, imports a small synthetic corpus (hash embeddings), starts
``python -m memory_platform api`` as a subprocess (``bench.load.server.ApiServer``), writes a
few team memories through the API and records them as injected into one run (so the cited
sensor has assertions to match), then runs one phase per route (``--phase-seconds``, all
senders on that route) and one mixed phase over every route (``--mixed-seconds``).

Each request carries adversarial text filling the field to its largest accepted size (the
field's limit, and the body cap ``api_max_body_bytes``): ``[`` runs and ``](`` repeats (regex
bombs), nested brackets, JSON nested to the depth limit, long ``Ⱥ`` words (F11), the 24 most
frequent English words, zero-width and control characters, huge numbers of short words, and
credential-like strings. ``--senders`` closed-loop senders run concurrently.

Per phase it reports the status codes seen per payload (4xx and 2xx expected; any 5xx is
listed), request latency, the CPU of the API and of PostgreSQL (cores), and /healthz
p50/p95/p99/max. The target: /healthz p99 under 100 ms in every phase. Writes
bench/results/hostile_input.json (``--result-name``).

    .venv/bin/python -m bench.hostile_input                      # ~2 minutes
    .venv/bin/python -m bench.hostile_input --phase-seconds 3 --mixed-seconds 5 --n 300
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import multiprocessing
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx
import psycopg

from bench.common import percentile, write_result
from bench.load import INSTANCE
from bench.load.client import CLIENT_ERRORS, RawClient
from bench.load.database import open_database, prepare_database, start_postgres
from bench.load.server import ApiServer, CpuMeter
from memory_platform.features import apikeys
from memory_platform.foundation.settings import Settings

PROGRAM = "python -m bench.hostile_input"
TARGET_P99_MS = 100.0
RUN_ID = "hostile-run"
UUID0 = "00000000-0000-0000-0000-000000000000"
MARK = "#000000000 "                # replaced per request: every stored memory is new
_sequence = itertools.count(1)
JSON_DEPTH = 30                     # below api.input.MAX_DEPTH (32) with the body's own level

FREQUENT = ("the be to of and a in that have I it for not on with he as you do at this but "
            "his by").split()


# --- adversarial text ------------------------------------------------------------------------
def _fill(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _short_words(n: int, rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyzäöü"
    words = []
    size = 0
    while size < n:
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 3)))
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:n]


def _credentials(n: int, rng: random.Random) -> str:
    parts = []
    while sum(len(p) + 1 for p in parts) < n:
        hex12 = "".join(rng.choice("0123456789abcdef") for _ in range(12))
        secret = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop0123456789")
                         for _ in range(43))
        parts += [f"DB_PASSWORD={secret[:16]}", f"mpk_{hex12}_{secret}",
                  f"sk-proj-{secret[:30]}", f"AKIA{secret[:16].upper()}",
                  f"password: {secret[:12]}!", f"ghp_{secret[:36]}"]
    return " ".join(parts)[:n]


# Each: text of n characters (the payload of one field).
KINDS: dict[str, Callable[[int, random.Random], str]] = {
    "open_brackets": lambda n, _: _fill("[", n),
    "link_bomb": lambda n, _: _fill("](", n),
    "nested_brackets": lambda n, _: ("[(" * (n // 4) + "x" + ")]" * (n // 4))[:n],
    "long_a_stroke_words": lambda n, _: _fill("Ⱥ" * 1500 + " ", n),
    "frequent_words": lambda n, _: _fill(" ".join(FREQUENT) + " ", n),
    "zero_width": lambda n, _: _fill("on\u200bcall\u200d ro\u2060ta\ufefftion\u00ad ", n),
    "control_chars": lambda n, _: _fill("red \x1b[31m alert \x07 ", n),
    "short_words": _short_words,
    "credentials": _credentials,
}


def _fit(build: Callable[[str], dict], text: Callable[[int], str], limit_chars: int,
         cap: int) -> bytes:
    """The JSON body ``build(text(n))`` for the largest n <= ``limit_chars`` within ``cap``
    bytes."""
    n = limit_chars
    while True:
        body = _compact(build(text(n)))
        if len(body) <= cap or n <= 1:
            return body
        n = max(1, int(n * cap / len(body) * 0.995))


def _compact(data: object) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _nested_json(cap: int) -> list:
    """Arrays nested JSON_DEPTH deep, repeated to fill most of ``cap`` bytes."""
    one = "[" * JSON_DEPTH + "1" + "]" * JSON_DEPTH
    return json.loads("[" + ",".join([one] * (cap // (len(one) + 1) - 2)) + "]")


def table_routes(*, with_text: bool = False) -> set[str]:
    """``METHOD /path`` of every operation of the API's route table (``with_text``: those
    whose body or query model has a free-text field, ``api.input.FREE_TEXT``)."""
    from api.input import FREE_TEXT
    from api.table import TABLE

    def texty(op) -> bool:
        models = [m for m in (op.body, op.query) if m is not None]
        return any(FREE_TEXT & set(m.model_json_schema(by_alias=True).get("properties", {}))
                   for m in models)

    return {f"{op.method} {section.prefix}{op.path}" for section in TABLE
            for op in section.operations if not with_text or texty(op)}


# --- the routes ------------------------------------------------------------------------------
class Route:
    """One route of the table that takes text: its requests, one per payload kind."""

    def __init__(self, name: str, method: str, path: str, token: str) -> None:
        self.name, self.method, self.path, self.token = name, method, path, token
        self.requests: list[tuple[str, str, bytes | None]] = []   # (kind, url, body)

    def headers(self, body: bytes | None) -> dict[str, str]:
        headers = {"authorization": f"Bearer {self.token}"}
        if body is not None:
            headers["content-type"] = "application/json"
        return headers


def build_routes(tokens: dict[str, str], cap: int, settings: Settings,
                 rng: random.Random) -> list[Route]:
    """Every route of the table that takes text, each with one request per payload kind,
    sized to the largest accepted input."""
    user, admin = tokens["user"], tokens["admin"]
    bodies: dict[str, tuple[str, str, str, Callable[[str], dict], int]] = {
        "POST /api/v1/memory": ("POST", "/api/v1/memory", user,
                                lambda t: {"content": (MARK + t)[:len(t)], "title": t[:300],
                                           "visibility": "team"},
                                settings.memory_max_chars),
        "POST /api/v1/context/search": ("POST", "/api/v1/context/search", user,
                                        lambda t: {"query": t, "depth": "deep"}, 2000),
        "POST /api/v1/feedback/cited": ("POST", "/api/v1/feedback/cited", user,
                                        lambda t: {"runId": RUN_ID, "responseText": t},
                                        getattr(settings, "cited_response_max_chars",
                                                100_000)),
        "POST /api/v1/feedback/injected": ("POST", "/api/v1/feedback/injected", user,
                                           lambda t: {"runId": t, "assertionIds": [UUID0]},
                                           200),
        "POST /internal/memory/dreams": ("POST", "/internal/memory/dreams", admin,
                                         lambda t: {"partition": f"{INSTANCE}/team/{t}"},
                                         1000 - len(INSTANCE) - 6),
        "POST /api/v1/channels/members": ("POST", "/api/v1/channels/members", admin,
                                          lambda t: {"channelKey": t, "userId": "user-000"},
                                          200),
        "POST /api/v1/sessions/participants": ("POST", "/api/v1/sessions/participants",
                                               admin, lambda t: {"sessionKey": t,
                                                                 "userId": "user-000"}, 200),
    }
    bodies = {name: spec for name, spec in bodies.items() if name in table_routes()}
    routes = []
    for name, (method, path, token, build, limit) in bodies.items():
        route = Route(name, method, path, token)
        for kind, make in KINDS.items():
            route.requests.append((kind, path, _fit(build, lambda n, m=make: m(n, rng),
                                                    limit, cap)))
        route.requests.append(("json_depth_limit", path,
                               _compact({**build("x"), "nested": _nested_json(cap - 512)})))
        route.requests.append(("over_the_cap", path, b'{"content": "' + b"[" * cap + b'"}'))
        routes.append(route)
    search = Route("GET /api/v1/memory", "GET", "/api/v1/memory", user)
    for kind, make in KINDS.items():
        query = httpx.QueryParams({"query": make(2000, rng)})
        search.requests.append((kind, f"/api/v1/memory?{query}", None))
    routes.append(search)
    return routes


# --- /healthz poller (its own process) -------------------------------------------------------
def poll_healthz(base_url: str, interval: float, ready, stop, out) -> None:
    """Poll ``base_url``/healthz every ``interval`` s until ``stop`` is set (``ready`` is set
    at the first poll); send the samples (wall-clock start, latency s, status) to ``out``."""
    samples = []
    with httpx.Client(base_url=base_url, timeout=10) as client:
        ready.set()
        next_at = time.perf_counter()
        while not stop.is_set():
            started_wall, started = time.time(), time.perf_counter()
            try:
                status = str(client.get("/healthz").status_code)
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            samples.append((started_wall, time.perf_counter() - started, status))
            next_at = max(next_at + interval, time.perf_counter())
            time.sleep(max(0.0, next_at - time.perf_counter()))
    out.send(samples)
    out.close()


def healthz_stats(samples: list[tuple[float, float, str]], start: float, end: float) -> dict:
    inside = [s for s in samples if start <= s[0] < end]
    ms = [s[1] * 1000 for s in inside]
    return {"polls": len(inside),
            "p50_ms": _r(percentile(ms, 50)), "p95_ms": _r(percentile(ms, 95)),
            "p99_ms": _r(percentile(ms, 99)), "max_ms": _r(max(ms) if ms else None),
            "not_200": dict(Counter(s[2] for s in inside if s[2] != "200"))}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


# --- senders ---------------------------------------------------------------------------------
async def _sender(client: RawClient, work: list[tuple[Route, str, str, bytes | None]],
                  offset: int, deadline: float, seen: list) -> None:
    i = offset
    while time.perf_counter() < deadline:
        route, kind, url, body = work[i % len(work)]
        i += 1
        if body is not None and MARK.encode() in body:
            body = body.replace(MARK.encode(), f"#{next(_sequence):09d} ".encode(), 1)
        started = time.perf_counter()
        try:
            async with asyncio.timeout(60):
                status = str(await client.request(route.method, url, route.headers(body),
                                                  body))
        except TimeoutError:
            status = "timeout"
        except CLIENT_ERRORS as exc:
            status = type(exc).__name__
        seen.append((route.name, kind, status, time.perf_counter() - started))


async def run_phase(server: ApiServer, routes: list[Route], senders: int,
                    seconds: float) -> list:
    work = [(route, kind, url, body) for route in routes for kind, url, body in route.requests]
    random.Random(len(work)).shuffle(work)
    clients = [RawClient("127.0.0.1", server.port) for _ in range(senders)]
    seen: list = []
    deadline = time.perf_counter() + seconds
    try:
        await asyncio.gather(*(_sender(c, work, i * len(work) // senders, deadline, seen)
                               for i, c in enumerate(clients)))
    finally:
        for client in clients:
            await client.aclose()
    return seen


def summarize(seen: list) -> dict:
    by_kind: dict[str, Counter] = {}
    for _, kind, status, _ in seen:
        by_kind.setdefault(kind, Counter())[status] += 1
    ms = [s[3] * 1000 for s in seen]
    statuses = Counter(s[2] for s in seen)
    return {"requests": len(seen), "statuses": dict(statuses),
            "by_payload": {k: dict(v) for k, v in sorted(by_kind.items())},
            "request_p50_ms": _r(percentile(ms, 50)), "request_p95_ms": _r(percentile(ms, 95)),
            "request_max_ms": _r(max(ms) if ms else None),
            "server_errors": sorted({f"{r} {k}: {s}" for r, k, s, _ in seen
                                     if not (s.isdigit() and int(s) < 500)})}


def sample_answers(base_url: str, routes: list[Route]) -> dict[str, dict[str, str]]:
    """One answer per route and payload: status and the start of the body (what a 4xx
    says)."""
    answers: dict[str, dict[str, str]] = {}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        for route in routes:
            for kind, url, body in route.requests:
                response = client.request(route.method, url, headers=route.headers(body),
                                          content=body)
                answers.setdefault(route.name, {})[kind] = \
                    f"{response.status_code} {response.text[:160]}"
    return answers


# --- setup -----------------------------------------------------------------------------------
def seed_run(base_url: str, token: str, rng: random.Random) -> dict:
    """Team memories written through the API as the bench user, recorded as injected into
    RUN_ID: the cited sensor then matches every answer against their assertions."""
    headers = {"Authorization": f"Bearer {token}"}
    topics = ["deploy window", "on-call rotation", "release train", "backup policy",
              "incident review", "pager escalation", "database failover", "API rate limit"]
    ids = []
    with httpx.Client(base_url=base_url, timeout=30) as client:
        for i in range(40):
            topic = rng.choice(topics)
            text = (f"The {topic} of team {i % 7} is decided: it runs on weekday {i % 5} "
                    f"at {8 + i % 9}:00 and the owner is person {i}.")
            answer = client.post("/api/v1/memory", headers=headers,
                                 json={"content": text, "visibility": "team"})
            if answer.status_code in (200, 201) and answer.json().get("assertionId"):
                ids.append(answer.json()["assertionId"])
        injected = client.post("/api/v1/feedback/injected", headers=headers,
                               json={"runId": RUN_ID, "assertionIds": ids[:100]})
    return {"assertions": len(ids), "injected_status": injected.status_code,
            "injected": injected.json() if injected.status_code < 300 else injected.text[:300]}


def make_tokens(url: str, user_token: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        _, admin = apikeys.create_key(conn, instance_key=INSTANCE, user_id="bench-admin",
                                      scopes=("memory:read", "memory:write", "admin"),
                                      name="bench/hostile_input")
    return {"user": user_token, "admin": admin}


# --- main ------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--n", type=int, default=2000, help="memories in the synthetic corpus")
    p.add_argument("--dims", type=int, default=384, help="hash embedding dimensions")
    p.add_argument("--database-url", default=None,
                   help="server to create the bench database on (default: embedded)")
    p.add_argument("--pgdata", type=Path, default=None, help="embedded server's data dir")
    p.add_argument("--workers", type=int, default=1, help="API worker processes")
    p.add_argument("--senders", type=int, default=4, help="concurrent closed-loop senders")
    p.add_argument("--phase-seconds", type=float, default=8.0, help="seconds per route phase")
    p.add_argument("--mixed-seconds", type=float, default=40.0,
                   help="seconds of the phase over every route at once")
    p.add_argument("--poll-ms", type=float, default=20.0, help="/healthz poll interval")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment of the API process; repeatable")
    p.add_argument("--routes", default="",
                   help="comma list of 'METHOD /path' to drive (default: every text route)")
    p.add_argument("--payloads", default="",
                   help="comma list of payload kinds to send (default: all; names as printed)")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--result-name", default="hostile_input", help="bench/results/<name>.json")
    return p


def _print_phase(name: str, result: dict) -> None:
    h, c = result["healthz"], result["cpu"]
    verdict = "ok" if (h["p99_ms"] or 0) < TARGET_P99_MS else "MISSES TARGET"
    print(f"\n== {name}: {result['requests']} requests, statuses {result['statuses']}; "
          f"request p50/p95/max {result['request_p50_ms']}/{result['request_p95_ms']}/"
          f"{result['request_max_ms']} ms; API {c['api_cores']} cores, PostgreSQL "
          f"{c['postgres_cores']} cores", flush=True)
    print(f"   /healthz ({h['polls']} polls) p50 {h['p50_ms']} p95 {h['p95_ms']} "
          f"p99 {h['p99_ms']} max {h['max_ms']} ms -> {verdict}", flush=True)
    for kind, statuses in result["by_payload"].items():
        print(f"   {kind:<22} {statuses}")
    for error in result["server_errors"]:
        print(f"   5xx/failed: {error}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rng = random.Random(args.seed)
    extra_env = dict(item.split("=", 1) for item in args.server_env)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    cap = settings.api_max_body_bytes
    with contextlib.ExitStack() as stack:
        print(f"starting PostgreSQL and importing {args.n:,} memories ...", flush=True)
        postgres = start_postgres(stack, args.database_url, args.pgdata, keep=False)
        url, corpus = open_database(stack, postgres.url, None, keep=False, n=args.n,
                                    dims=args.dims)
        bench = prepare_database(url, corpus, users=1, warm=False)
        tokens = make_tokens(url, bench.tokens[0])
        log_path = Path(tempfile.mkdtemp(prefix="hostile-input-")) / "api.log"
        server = ApiServer(url, args.workers, args.dims, None, log_path,
                           extra_env={"MEMORY_API_MAX_BODY_BYTES": str(cap), **extra_env},
                           instance=INSTANCE)
        server.start()
        stack.callback(server.stop)
        print(f"API on {server.base_url} (log {log_path}); body cap {cap} bytes", flush=True)
        seeded = seed_run(server.base_url, tokens["user"], rng)
        print(f"seeded run {RUN_ID}: {seeded['assertions']} assertions, injected "
              f"{seeded['injected_status']}", flush=True)
        routes = build_routes(tokens, cap, settings, rng)
        if args.routes:
            routes = [r for r in routes if r.name in args.routes.split(",")]
        if args.payloads:
            for route in routes:
                route.requests = [r for r in route.requests if r[0] in args.payloads.split(",")]
        missing = table_routes(with_text=True) - {r.name for r in routes}
        if missing:
            print(f"WARNING: routes with free text not driven: {sorted(missing)}", flush=True)
        sizes = {r.name: max((len(body or url.encode()) for kind, url, body in r.requests
                              if kind != "over_the_cap"), default=0) for r in routes}
        print("largest request per route (bytes): " + json.dumps(sizes), flush=True)

        spawn = multiprocessing.get_context("spawn")
        receiver, sender = spawn.Pipe(duplex=False)
        ready, stop = spawn.Event(), spawn.Event()
        poller = spawn.Process(target=poll_healthz, daemon=True,
                               args=(server.base_url, args.poll_ms / 1000, ready, stop, sender))
        poller.start()
        ready.wait(60)
        time.sleep(0.5)
        phases: list[tuple[str, list[Route], float]] = [
            (r.name, [r], args.phase_seconds) for r in routes]
        phases.append(("all routes at once", routes, args.mixed_seconds))
        measured = []
        for name, phase_routes, seconds in phases:
            print(f"-- phase {name}: {args.senders} senders for {seconds:g} s", flush=True)
            started = time.time()
            with CpuMeter(server.pid, postgres.pid) as meter:
                seen = asyncio.run(run_phase(server, phase_routes, args.senders, seconds))
            measured.append((name, started, time.time(), seen, meter.result))
            server.settle(30)
        stop.set()
        samples = receiver.recv()
        poller.join(timeout=10)
        answers = sample_answers(server.base_url, routes)
        api_log_errors = [line for line in log_path.read_text(errors="replace").splitlines()
                          if "Traceback" in line or "unhandled error" in line]

    results = {}
    for name, start, end, seen, cpu in measured:
        results[name] = {**summarize(seen), "cpu": cpu,
                         "healthz": healthz_stats(samples, start, end)}
        _print_phase(name, results[name])
    worst = max(results.items(), key=lambda item: item[1]["healthz"]["p99_ms"] or 0)
    payload = {
        "command": " ".join([PROGRAM, *(argv if argv is not None else sys.argv[1:])]),
        "corpus": bench.corpus, "body_cap_bytes": cap, "largest_request_bytes": sizes,
        "free_text_routes_not_driven": sorted(missing), "senders": args.senders,
        "poll_interval_ms": args.poll_ms,
        "phase_seconds": args.phase_seconds, "mixed_seconds": args.mixed_seconds,
        "seeded_run": seeded, "phases": results, "sample_answers": answers,
        "healthz_all": healthz_stats(samples, 0, float("inf")),
        "worst_phase": {"name": worst[0], "healthz_p99_ms": worst[1]["healthz"]["p99_ms"]},
        "target_p99_ms": TARGET_P99_MS,
        "target_met": all((r["healthz"]["p99_ms"] or 0) < TARGET_P99_MS
                          for r in results.values()),
        "server_errors": sorted({e for r in results.values() for e in r["server_errors"]}),
        "api_log_errors": len(api_log_errors),
        "machine": bench.machine,
    }
    path = write_result(args.result_name, payload)
    h = payload["healthz_all"]
    print(f"\n/healthz over the whole run: {h['polls']} polls, p50 {h['p50_ms']} p95 "
          f"{h['p95_ms']} p99 {h['p99_ms']} max {h['max_ms']} ms; worst phase "
          f"{worst[0]} (p99 {worst[1]['healthz']['p99_ms']} ms); target p99 < "
          f"{TARGET_P99_MS:g} ms {'met' if payload['target_met'] else 'MISSED'}; "
          f"5xx: {payload['server_errors'] or 'none'}; API log errors "
          f"{payload['api_log_errors']}\nwrote {path}", flush=True)
    return 0 if payload["target_met"] and not payload["server_errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
