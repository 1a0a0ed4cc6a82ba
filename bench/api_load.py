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
* ``closed``: reads from ``--clients`` closed-loop clients (the saturation throughput).

``--mode closed`` runs healthz/read/mixed closed-loop too (mixed: writes in the ratio
``--write-rate`` : ``--rate``).

Prints a table per route (count, offered and achieved requests/s, p50/p95/p99/max, errors by
status), the CPU used by the generator, the API processes and PostgreSQL, and the load average
(other processes share the machine). Writes bench/results/api_load.json.

The generator is a minimal asyncio HTTP/1.1 keep-alive client (``--client httpx`` for the
comparison: about 5x its CPU per request) and runs at a raised priority
(``--generator-nice``), so a busy machine delays the API's answers, not the sending.

    .venv/bin/python bench/api_load.py --n 5000 --duration 10 --sweep        # smoke
    .venv/bin/python bench/api_load.py --n 100000 --pgdata /tmp/api-load-pg --keep \
        --import-only                                     # prints the --reuse argument
    .venv/bin/python bench/api_load.py --pgdata /tmp/api-load-pg --reuse bench_xxxx \
        --workers 1,2 --scenarios healthz,sweep,closed,read,mixed --clients 8

The issue's targets: GET p95 <= 25 ms with zero errors at an offered 200 requests/s over
100,000 memories; POST p95 <= 30 ms at 50 requests/s mixed into that load; and the highest
read rate with p95 under 100 ms, reported.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psutil
import psycopg

from bench.common import (
    _CITIES,
    _COMPANIES,
    _FIRST,
    _LAST,
    _MONTHS_DE,
    _MONTHS_EN,
    _PRODUCTS,
    _memory_text,
    fresh_database,
    machine_info,
    percentile,
    synthetic_corpus,
    write_result,
)
from memory_platform import apikeys
from memory_platform.db import embedded
from memory_platform.db.connection import start_embedded, with_database
from memory_platform.embeddings.hashing import HashEmbeddingProvider
from memory_platform.memories.bulk import context_from_row, import_memories
from memory_platform.settings import PROJECT_ROOT, Settings

try:  # the generator is faster on uvloop (the server uses it too, through uvicorn)
    import uvloop
except ImportError:  # pragma: no cover
    uvloop = None

INSTANCE = "bench-api"
READ, WRITE, HEALTH = "GET /api/v1/memory", "POST /api/v1/memory", "GET /healthz"
CORPUS_SEED = 7  # synthetic_corpus's default seed: the channel threads below depend on it

QUESTIONS = (
    "Wann ist die Umsatzsteuervoranmeldung für {company} fällig?",
    "Wer betreut die Lohnabrechnung von {company}?",
    "Welche Bankverbindung hat {company} jetzt?",
    "Wie möchte {person} Unterlagen erhalten?",
    "Wann ist die Inventur bei {company} in {city} geplant?",
    "Hat {company} die Rechnung im {month_de} bezahlt?",
    "Wann möchte {person} zurückgerufen werden?",
    "Welche Belege fehlen im Jahresabschluss von {company}?",
    "Um welche Fristverlängerung hat {person} gebeten?",
    "Who covers the account while {person} is on parental leave?",
    "What caused the {product} outage?",
    "When is the quarterly review with {company}?",
    "Why was the invoice for {company} disputed?",
    "Who owns the migration of the {product}?",
    "How does {person} prefer to be contacted?",
    "Which discount did {company} ask for in {month_en}?",
    "Why was invoice {number} disputed?",
    "Welche Belege fehlen zur Position {number}?",
    "How does {company} pay?",
    "Where does {company} use the {product}?",
)
SCOPES = ("workspace", "team", "private", "channel")


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


# --- requests -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Req:
    route: str
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None


class Workload:
    """Endless, reproducible streams of read and write requests over the corpus vocabulary."""

    def __init__(self, tokens: list[str], seed: int, tag: str) -> None:
        self.rng = random.Random(seed)
        self.tokens = tokens
        self.tag = tag
        self.people = [f"{f} {la}" for f in _FIRST for la in _LAST]
        corpus_rng = random.Random(CORPUS_SEED)  # synthetic_corpus draws the threads first
        self.threads = [f"C{corpus_rng.randint(100, 999)}/{1700000000 + i}.0001"
                        for i in range(40)]
        self.writes = 0

    def _auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.rng.choice(self.tokens)}"}

    def read(self) -> Req:
        rng = self.rng
        question = rng.choice(QUESTIONS).format(
            company=rng.choice(_COMPANIES), person=rng.choice(self.people),
            product=rng.choice(_PRODUCTS), city=rng.choice(_CITIES),
            month_de=rng.choice(_MONTHS_DE), month_en=rng.choice(_MONTHS_EN),
            number=rng.randint(1000, 99999))
        params: dict[str, Any] = {"query": question}
        if rng.random() < 0.3:
            params["scope"] = rng.choice(SCOPES)
        if rng.random() < 0.15:
            params.update(channelThreadKey=rng.choice(self.threads), channelType="slack")
        if rng.random() < 0.2:
            params["limit"] = rng.choice((3, 10, 20))
        return Req(READ, "GET", f"/api/v1/memory?{urlencode(params)}", self._auth())

    def write(self) -> Req:
        rng = self.rng
        self.writes += 1
        # A unique reference keeps every write new (never deduplicated).
        content = (f"Notiz {self.tag}-{self.writes}: "
                   + _memory_text(rng, self.people, 80, 400))
        body: dict[str, Any] = {"content": content, "visibility": "team"}
        if rng.random() < 0.5:
            body["subjectRefs"] = {"mandantId": f"M-{rng.randint(1, 400):04d}"}
        headers = {**self._auth(), "content-type": "application/json"}
        return Req(WRITE, "POST", "/api/v1/memory", headers,
                   json.dumps(body, ensure_ascii=False).encode())

    def health(self) -> Req:
        return Req(HEALTH, "GET", "/healthz", {})


def arrivals(rate: float, seconds: float, rng: random.Random, kind: str) -> list[float]:
    """Send offsets in [0, seconds) for ``rate`` requests per second."""
    if rate <= 0:
        return []
    if kind == "uniform":
        step, phase = 1 / rate, rng.random() / rate
        return [phase + i * step for i in range(int(seconds * rate))
                if phase + i * step < seconds]
    times, t = [], rng.expovariate(rate)
    while t < seconds:
        times.append(t)
        t += rng.expovariate(rate)
    return times


# --- load generation ------------------------------------------------------------------------


@dataclass
class Sample:
    route: str
    scheduled: float  # offset from the run's start (s)
    lag: float  # request actually started minus scheduled (s): the generator's own delay
    latency: float  # completion minus scheduled (open loop) or minus send (closed loop), s
    service: float  # completion minus send, after any wait for a free connection (s)
    done: float  # completion offset (s)
    status: str  # HTTP status code or an error name
    ok: bool
    measured: bool  # scheduled after the warmup


def _is_ok(req: Req, status: int) -> bool:
    return status in (200, 201) if req.route == WRITE else status == 200


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: what the generator needs
    (fixed requests, status codes, Content-Length or chunked bodies) at a fraction of httpx's
    CPU per request, so the generator takes less of the cores it shares with the API.
    Concurrency is bounded by the caller (one connection per concurrent request)."""

    name = "raw asyncio streams (HTTP/1.1 keep-alive)"

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, bool]:
        """An idle keep-alive connection (the server closes them after a few idle seconds:
        older ones are dropped) or a new one; says whether it was reused."""
        while self.idle:
            reader, writer, since = self.idle.pop()
            if time.monotonic() - since < 2.0 and not reader.at_eof():
                return reader, writer, True
            writer.close()
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return reader, writer, False

    async def request(self, method: str, url: str, headers: dict[str, str],
                      content: bytes | None = None) -> int:
        lines = [f"{method} {url} HTTP/1.1", f"host: {self.host}:{self.port}",
                 *(f"{k}: {v}" for k, v in headers.items())]
        if content is not None:
            lines.append(f"content-length: {len(content)}")
        message = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (content or b"")
        reader, writer, reused = await self._connection()
        reusable = False
        try:
            writer.write(message)
            status_line = await reader.readline()
            if not status_line and reused:  # closed while idle: once more on a new one
                writer.close()
                reader, writer = await asyncio.open_connection(self.host, self.port)
                writer.write(message)
                status_line = await reader.readline()
            if not status_line:
                raise ConnectionResetError("connection closed by the server")
            status = int(status_line.split(b" ", 2)[1])
            length, chunked, close = None, False, False
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.partition(b":")
                name, value = name.strip().lower(), value.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding":
                    chunked = b"chunked" in value
                elif name == b"connection":
                    close = b"close" in value
            if chunked:
                while size := int((await reader.readline()).split(b";")[0], 16):
                    await reader.readexactly(size + 2)
                await reader.readline()
            elif length is not None:
                await reader.readexactly(length)
            else:
                await reader.read()
                close = True
            reusable = not close
            return status
        finally:
            if reusable:
                self.idle.append((reader, writer, time.monotonic()))
            else:
                writer.close()

    async def aclose(self) -> None:
        for _, writer, _ in self.idle:
            writer.close()
        self.idle.clear()


class HttpxClient:
    """httpx.AsyncClient with a connection pool (the comparison for the raw client)."""

    name = f"httpx {httpx.__version__}"

    def __init__(self, base_url: str, connections: int) -> None:
        self.client = httpx.AsyncClient(
            base_url=base_url, timeout=None,
            limits=httpx.Limits(max_connections=connections,
                                max_keepalive_connections=connections))

    async def request(self, method: str, url: str, headers: dict[str, str],
                      content: bytes | None = None) -> int:
        response = await self.client.request(method, url, headers=headers, content=content)
        return response.status_code

    async def aclose(self) -> None:
        await self.client.aclose()


CLIENT_ERRORS = (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError,
                 IndexError)


async def _send(client: RawClient | HttpxClient, req: Req, start: float, scheduled: float,
                deadline: float, measured: bool, samples: list[Sample],
                slots: asyncio.Semaphore | None = None) -> None:
    """One request; ``slots`` (one per connection) bounds the requests in flight (the
    waiting ones stay here, cheap, not in a client's pool queue)."""
    started = sent = time.perf_counter()
    try:
        async with asyncio.timeout(max(0.001, deadline - started)):
            async with slots or contextlib.nullcontext():
                sent = time.perf_counter()
                code = await client.request(req.method, req.url, req.headers, req.body)
        status, ok = str(code), _is_ok(req, code)
    except TimeoutError:
        status, ok = "timeout", False
    except CLIENT_ERRORS as exc:
        status, ok = type(exc).__name__, False
    done = time.perf_counter()
    samples.append(Sample(req.route, scheduled - start, started - scheduled, done - scheduled,
                          done - sent, done - start, status, ok, measured))


async def open_loop(client: RawClient | HttpxClient, plan: list[tuple[float, Req]], warmup: float,
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
        task = asyncio.create_task(_send(client, req, start, scheduled, scheduled + timeout,
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


async def closed_loop(client: RawClient | HttpxClient, next_request, clients: int, warmup: float,
                      seconds: float, timeout: float) -> tuple[list[Sample], int]:
    samples: list[Sample] = []
    start = time.perf_counter()
    end = start + warmup + seconds

    async def worker() -> None:
        while (now := time.perf_counter()) < end:
            await _send(client, next_request(), start, now, now + timeout,
                        now - start >= warmup, samples)

    await asyncio.gather(*(worker() for _ in range(clients)))
    return samples, 0


# --- processes and CPU ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree(pid: int | None) -> list[psutil.Process]:
    if pid is None:
        return []
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _cpu(processes: list[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            seconds[proc.pid] = times.user + times.system
    return seconds


class CpuMeter:
    """CPU seconds of the generator, the API process tree and the PostgreSQL server tree
    over a window (processes that exit inside the window are missed: backends live long)."""

    def __init__(self, api_pid: int | None, postgres_pid: int | None) -> None:
        self.api_pid, self.postgres_pid = api_pid, postgres_pid

    def __enter__(self) -> CpuMeter:
        self.wall = time.perf_counter()
        self.own = time.process_time()
        self.api = _cpu(_tree(self.api_pid))
        self.pg = _cpu(_tree(self.postgres_pid))
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self.wall

        def used(before: dict[int, float], after: dict[int, float]) -> float:
            return sum(v - before.get(pid, 0.0) for pid, v in after.items())

        self.result = {
            "wall_seconds": round(wall, 2),
            "generator_cores": round((time.process_time() - self.own) / wall, 3),
            "api_cores": round(used(self.api, _cpu(_tree(self.api_pid))) / wall, 3),
            "postgres_cores": (round(used(self.pg, _cpu(_tree(self.postgres_pid))) / wall, 3)
                               if self.postgres_pid else None),
        }


class ApiServer:
    """``python -m memory_platform api`` as a subprocess on a free loopback port."""

    def __init__(self, database_url: str, workers: int, dims: int, pool_max_size: int | None,
                 log_path: Path, niceness: int = 0,
                 extra_env: dict[str, str] | None = None) -> None:
        self.extra_env = extra_env or {}
        self.database_url, self.workers, self.dims = database_url, workers, dims
        self.pool_max_size, self.log_path, self.niceness = pool_max_size, log_path, niceness
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.port = _free_port()
        env = {**os.environ, "MEMORY_DATABASE_URL": self.database_url,
               "MEMORY_EMBEDDING_PROVIDER": "hash",
               "MEMORY_HASH_EMBEDDING_DIMENSIONS": str(self.dims),
               "MEMORY_INSTANCE_KEY": INSTANCE}
        if self.pool_max_size:
            env["MEMORY_POOL_MAX_SIZE"] = str(self.pool_max_size)
        env.update(self.extra_env)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_platform", "api", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", str(self.workers)],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=self._reset_priority)
        log.close()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API exited ({self.proc.returncode}); log tail:\n"
                                   + self.log_path.read_text()[-3000:])
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200:
                    if self.workers <= 1 or len(_tree(self.proc.pid)) > self.workers:
                        return
            time.sleep(0.2)
        raise RuntimeError("the API did not answer /healthz within 90 s")

    def _reset_priority(self) -> None:
        """In the child: the generator's niceness is not the API's."""
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, self.niceness)

    def pids(self) -> list[int]:
        return [p.pid for p in _tree(self.proc.pid if self.proc else None)]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this script started
            self.proc.wait(timeout=10)

    def ready(self, settle_seconds: float = 30) -> None:
        """An idle server for the next run: the backlog an overloaded run left drained, or
        a restarted server. (The API keeps executing requests whose client gave up: a
        request waiting for a worker thread or a pool connection is not cancelled when the
        client disconnects.)"""
        if self.settle(settle_seconds) >= settle_seconds:
            print(f"   (API still busy after {settle_seconds:g} s: restarting it)", flush=True)
            self.stop()
            self.start()
            self.settle(settle_seconds)

    def settle(self, timeout: float = 60) -> float:
        """Wait until /healthz answers fast three times in a row (requests an earlier
        overloaded run left queued have drained). Answers the seconds waited."""
        started = time.monotonic()
        fast = 0
        with httpx.Client(base_url=self.base_url, timeout=5) as client:
            while time.monotonic() - started < timeout and fast < 3:
                t0 = time.perf_counter()
                with contextlib.suppress(httpx.HTTPError):
                    client.get("/healthz")
                fast = fast + 1 if time.perf_counter() - t0 < 0.05 else 0
                time.sleep(0.2)
        return time.monotonic() - started


# --- one measured run -----------------------------------------------------------------------


def summarize(samples: list[Sample], route: str, seconds: float, warmup: float) -> dict:
    measured = [s for s in samples if s.route == route and s.measured]
    ok = [s for s in measured if s.ok]
    latency = [s.latency * 1000 for s in ok]
    in_window = sum(1 for s in ok if warmup <= s.done < warmup + seconds)
    errors = Counter(s.status for s in measured if not s.ok)
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
    }


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
        client = (RawClient("127.0.0.1", server.port) if args.client == "raw"
                  else HttpxClient(server.base_url, args.connections))
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

    with CpuMeter(server.proc.pid if server.proc else None, postgres_pid) as meter:
        if uvloop is not None:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                samples, unfinished = runner.run(drive())
        else:
            samples, unfinished = asyncio.run(drive())
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


def print_run(result: dict) -> None:
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


def _passes(result: dict, p95_limit: float) -> bool:
    read = result["routes"].get(READ)
    errors = sum(r["errors"] for r in result["routes"].values()) + result["unfinished"]
    return (read is not None and read["p95_ms"] is not None and read["p95_ms"] < p95_limit
            and errors == 0)


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


# --- corpus and database --------------------------------------------------------------------


def build_corpus(url: str, n: int, dims: int) -> dict:
    settings = Settings(database_url=url, embedding_provider="hash",
                        hash_embedding_dimensions=dims,
                        _env_file=None)  # type: ignore[call-arg]
    provider = HashEmbeddingProvider(dims)
    last = [time.perf_counter()]

    def progress(stats) -> None:
        if time.perf_counter() - last[0] > 15:
            last[0] = time.perf_counter()
            print(f"  ... {stats.rows:,} rows read, {stats.accepted:,} accepted",
                  file=sys.stderr, flush=True)

    with psycopg.connect(url, autocommit=True) as conn:
        print(f"importing {n:,} memories (hash embeddings, {dims} dims) ...", file=sys.stderr,
              flush=True)
        stats = import_memories(conn, settings, context_from_row(INSTANCE),
                                synthetic_corpus(n, seed=CORPUS_SEED), embedder=provider,
                                expected_rows=n, progress=progress)
        conn.execute("VACUUM ANALYZE")
    print(f"imported {stats.accepted:,} memories in {stats.seconds:.0f} s "
          f"(index build {stats.index_seconds:.0f} s)", file=sys.stderr, flush=True)
    return {"rows": n, "accepted": stats.accepted, "deduplicated": stats.deduplicated,
            "rejected": len(stats.rejected), "chunks": stats.chunks,
            "import_seconds": round(stats.seconds, 1),
            "index_build_seconds": round(stats.index_seconds, 1)}


def corpus_facts(conn: psycopg.Connection) -> dict:
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE metadata ->> 'writtenVia' = 'api')"
        "  FROM agent_memories WHERE instance_key = %s", (INSTANCE,)).fetchone()
    chunks = conn.execute("SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s",
                          (INSTANCE,)).fetchone()[0]
    return {"memories": row[0], "written_by_earlier_runs": row[1], "chunks": chunks,
            "chunks_table_size": conn.execute(
                "SELECT pg_size_pretty(pg_total_relation_size('agent_memory_chunks'))"
            ).fetchone()[0]}


def prewarm(conn: psycopg.Connection) -> list[str]:
    """Load the tables and indexes search reads into shared buffers (a server in service is
    warm; a freshly started one is not). Best effort: needs the pg_prewarm extension."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    except psycopg.Error:
        return []
    names = conn.execute(
        """
        SELECT c.oid::regclass::text
          FROM pg_class c
          LEFT JOIN pg_index i ON i.indexrelid = c.oid
          LEFT JOIN pg_class t ON t.oid = i.indrelid
         WHERE coalesce(t.relname, c.relname) IN
               ('agent_memory_chunks', 'agent_memories', 'agent_memory_assertions', 'api_keys')
           AND c.relkind IN ('r', 'i')
         ORDER BY c.relkind DESC, pg_relation_size(c.oid) DESC
        """).fetchall()
    done = []
    for (name,) in names:  # tables first, indexes last (they matter most), biggest first
        with contextlib.suppress(psycopg.Error):
            conn.execute("SELECT pg_prewarm(%s::regclass)", (name,))
            done.append(name)
    return done


def create_keys(conn: psycopg.Connection, users: int) -> list[str]:
    tokens = []
    for i in range(users):
        _, token = apikeys.create_key(conn, instance_key=INSTANCE, user_id=f"user-{i:03d}",
                                      scopes=("memory:read", "memory:write"),
                                      name="bench/api_load")
        tokens.append(token)
    return tokens


# --- main -----------------------------------------------------------------------------------


def _rates(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
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
                   help="comma list of healthz, read, mixed, sweep, closed")
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
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--result-name", default="api_load", help="bench/results/<name>.json")
    return p


def _targets(runs: list[dict], sweeps: list[dict], args: argparse.Namespace) -> list[dict]:
    out = []
    for run in runs:
        if run["mode"] != "open" or run["offered"]["read_rps"] != 200:
            continue
        read, write = run["routes"].get(READ), run["routes"].get(WRITE)
        errors = sum(r["errors"] for r in run["routes"].values()) + run["unfinished"]
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
        out.append({"target": f"highest read rate with p95 < {args.sweep_p95_ms:g} ms "
                              "(reported)", "workers": s["workers"],
                    "highest_passing_rps": s["highest_passing_rps"]})
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if args.sweep and "sweep" not in scenarios:
        scenarios.append("sweep")
    unknown = set(scenarios) - {"healthz", "read", "mixed", "sweep", "closed"}
    if unknown:
        raise SystemExit(f"unknown scenarios: {', '.join(sorted(unknown))}")
    worker_counts = [int(w) for w in args.workers.split(",") if w.strip()]
    extra_env = dict(item.split("=", 1) for item in args.server_env)
    if args.mode == "closed" and args.rate + args.write_rate <= 0:
        raise SystemExit("closed loop mixes reads and writes by --rate : --write-rate")

    with contextlib.ExitStack() as stack:
        # --- the PostgreSQL server
        pgdata: Path | None = None
        postgres_pid: int | None = None
        if args.database_url:
            server_url = args.database_url
        else:
            if args.pgdata is not None:
                pgdata = args.pgdata.resolve()
            else:
                parent = Path(tempfile.mkdtemp(prefix="memory-api-load-"))
                pgdata = parent / "pgdata"
                if not args.keep:
                    stack.callback(shutil.rmtree, parent, ignore_errors=True)
                    stack.callback(embedded.destroy, pgdata)
            info = start_embedded(Settings(_env_file=None,  # type: ignore[call-arg]
                                           embedded_pgdata=pgdata))
            stack.callback(embedded.release_server, pgdata)
            server_url = info.uri("postgres")
            postgres_pid = info.pid

        # --- the database and corpus
        corpus: dict[str, Any] = {}
        if args.reuse:
            url = with_database(server_url, args.reuse)
        else:
            url = stack.enter_context(fresh_database(server_url, keep=args.keep))
            corpus = build_corpus(url, args.n, args.dims)
        database = url.split("?", 1)[0].rsplit("/", 1)[-1]
        with psycopg.connect(url, autocommit=True) as conn:
            corpus.update(corpus_facts(conn))
            if not corpus["memories"]:
                raise SystemExit(f"database {database} holds no {INSTANCE} memories")
            warmed = [] if args.no_prewarm else prewarm(conn)
            tokens = create_keys(conn, args.users)
            machine = machine_info(conn)
            pg_settings = {name: conn.execute("SELECT current_setting(%s)", (name,)
                                              ).fetchone()[0]
                           for name in ("shared_buffers", "max_connections", "work_mem")}
        print(f"corpus: {corpus['memories']:,} memories, {corpus['chunks']:,} chunks in "
              f"{database}; prewarmed {len(warmed)} relations", file=sys.stderr, flush=True)
        if args.keep:
            where = (f"--database-url {args.database_url}" if args.database_url
                     else f"--pgdata {pgdata}")
            print(f"kept: reuse with  {where} --reuse {database}", file=sys.stderr, flush=True)

        if args.import_only:
            return 0

        # Only the generator gets the priority (the API subprocess resets it; PostgreSQL
        # runs already): it must send on time to measure the API and not its own lag.
        base_niceness = niceness = os.nice(0)
        if args.generator_nice:
            with contextlib.suppress(OSError):
                niceness = os.nice(args.generator_nice)
        log_path = Path(tempfile.gettempdir()) / f"api_load_server_{os.getpid()}.log"
        workload = Workload(tokens, args.seed, tag=f"{os.getpid()}-{int(time.time())}")
        runs: list[dict] = []
        sweeps: list[dict] = []
        servers: list[dict] = []
        for workers in worker_counts:
            server = ApiServer(url, workers, args.dims, args.pool_max_size, log_path,
                               base_niceness, extra_env)
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

        log_path.unlink(missing_ok=True)  # kept only when a run failed (its path printed)
        with psycopg.connect(url, autocommit=True) as conn:
            after = corpus_facts(conn)

    targets = _targets(runs, sweeps, args)
    result = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
        "corpus": corpus,
        "corpus_after": after,
        "embedding": {"provider": "hash", "dimensions": args.dims},
        "instance": INSTANCE,
        "users": args.users,
        "generator": {"client": (RawClient.name if args.client == "raw"
                                 else HttpxClient.name),
                      "event_loop": "uvloop" if uvloop is not None else "asyncio",
                      "connections": args.connections, "timeout_s": args.timeout,
                      "niceness": niceness,
                      "same_machine": True,
                      "note": "generator, API and PostgreSQL share the machine's cores"},
        "servers": servers,
        "runs": runs,
        "sweeps": [{k: v for k, v in s.items() if k != "runs"} for s in sweeps],
        "sweep_runs": [r for s in sweeps for r in s["runs"]],
        "targets": targets,
        "postgres_settings": pg_settings,
        "prewarmed": warmed,
        "machine": machine,
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }
    target = write_result(args.result_name, result)
    print("\ntargets:")
    for t in targets:
        print("  " + ", ".join(f"{k}={v}" for k, v in t.items()))
    print(f"machine: {machine['cores']} cores {machine['cpu']}, {machine['ram_gb']} GB; "
          f"load avg at end {'/'.join(str(x) for x in result['load_average_end'])}; "
          f"generator shares the cores with the API and PostgreSQL")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
