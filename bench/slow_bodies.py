"""Slow sign-in bodies while key holders search (security review of 7c85f33, finding 2).

``python -m bench.slow_bodies [--rounds 2] [--seconds 8] [--pool 4]``

The real API (``memory-platform api``, one worker, a subprocess on loopback) on a fresh
embedded database with a small seeded corpus. Key holders search (``GET /api/v1/memory``) in
a closed loop from ``--searchers`` threads the whole time. Phases alternate: no attack, then
``2 x pool`` connections that post ``/inspector/login`` with ``Content-Length: 4000`` and
send one body byte per second (reconnecting at once when answered: 408 at the deadline, 503
past the sign-in budget), no attack again, then ``4 x pool`` such connections; ``--rounds``
times. Per phase kind: the searches' p50/p95/max and how many were refused (anything but
200), and the attackers' answers by status. Prints a table and writes
bench/results/slow_bodies.json with the machine.
"""

from __future__ import annotations

import argparse
import select
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

from bench.common import fresh_database, machine_info, percentile, write_result
from bench.load.server import ApiServer
from memory_platform.features.apikeys import create_key

INSTANCE = "default"
QUERIES = ("on-call rota", "release train", "database failover", "green tea", "deploy window")


def _seed(base_url: str, token: str, n: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as http:
        for i in range(n):
            http.post("/api/v1/memory", json={
                "content": f"Note {i}: the {QUERIES[i % 5]} of team {i % 7} is on day {i % 5}."})


class Searchers:
    """Closed-loop key holders: each thread searches, records (time, seconds, status)."""

    def __init__(self, base_url: str, token: str, threads: int, pause: float) -> None:
        self.base_url, self.token, self.pause = base_url, token, pause
        self.samples: list[tuple[float, float, int]] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(threads)]

    def _run(self, i: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(base_url=self.base_url, headers=headers, timeout=30) as http:
            n = i
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    status = http.get("/api/v1/memory",
                                      params={"query": QUERIES[n % 5]}).status_code
                except httpx.HTTPError:
                    status = 0
                self.samples.append((started, time.monotonic() - started, status))
                n += 1
                time.sleep(self.pause)

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


class Attack:
    """``n`` connections trickling a sign-in body, one byte per ``every`` seconds each."""

    def __init__(self, port: int, n: int, every: float = 1.0) -> None:
        self.port, self.n, self.every = port, n, every
        self.answers: Counter[str] = Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            sock.sendall(b"POST /inspector/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/x-www-form-urlencoded\r\n"
                         b"Content-Length: 4000\r\n\r\napi_key=")
            return sock
        except OSError:
            self.answers["connect_error"] += 1
            return None

    def _run(self) -> None:
        socks = [self._open() for _ in range(self.n)]
        while not self.stop.wait(self.every):
            for i, sock in enumerate(socks):
                if sock is None:
                    socks[i] = self._open()
                    continue
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:                      # answered (or closed): record, reconnect
                    try:
                        head = sock.recv(4096)
                        self.answers[head.split(b" ", 2)[1].decode() if head else "closed"] += 1
                    except (OSError, IndexError):
                        self.answers["reset"] += 1
                    sock.close()
                    socks[i] = self._open()
                    continue
                try:
                    sock.sendall(b"x")
                except OSError:
                    self.answers["send_error"] += 1
                    sock.close()
                    socks[i] = self._open()
        for sock in socks:
            if sock is not None:
                sock.close()

    def __enter__(self) -> Attack:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join()


def _stats(samples: list[tuple[float, float, int]]) -> dict:
    ms = [s * 1000 for _, s, _ in samples]
    statuses = Counter(str(st) for _, _, st in samples)
    refused = sum(n for st, n in statuses.items() if st != "200")
    return {"searches": len(samples), "refused": refused,
            "refused_share": round(refused / len(samples), 4) if samples else None,
            "p50_ms": _r(percentile(ms, 50)), "p95_ms": _r(percentile(ms, 95)),
            "max_ms": _r(max(ms) if ms else None), "statuses": dict(statuses)}


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=float, default=8.0, help="length of each phase")
    p.add_argument("--pool", type=int, default=4, help="MEMORY_POOL_MAX_SIZE of the API")
    p.add_argument("--searchers", type=int, default=4, help="key holders searching")
    p.add_argument("--pause", type=float, default=0.05, help="pause between searches (s)")
    p.add_argument("--seed", type=int, default=300, help="memories written first")
    p.add_argument("--database-url", default=None, help="a server to create the database on")
    p.add_argument("--result-name", default="slow_bodies")
    args = p.parse_args(argv)

    with fresh_database(args.database_url) as url, tempfile.TemporaryDirectory() as tmp:
        with psycopg.connect(url) as conn:
            _, token = create_key(conn, instance_key=INSTANCE, user_id="alice",
                                  scopes=("memory:read", "memory:write"))
            conn.commit()
            machine = machine_info(conn)
        server = ApiServer(url, workers=1, dims=256, pool_max_size=args.pool,
                           log_path=Path(tmp) / "api.log", instance=INSTANCE)
        server.start()
        try:
            _seed(server.base_url, token, args.seed)
            plan = [("off", 0), ("2x_pool", 2 * args.pool), ("off", 0),
                    ("4x_pool", 4 * args.pool)] * args.rounds
            searchers = Searchers(server.base_url, token, args.searchers, args.pause)
            searchers.start()
            time.sleep(1.0)                                    # warm up
            phases, attacks = [], {}
            for kind, n in plan:
                start = time.monotonic()
                if n:
                    with Attack(server.port, n) as attack:
                        time.sleep(args.seconds)
                    attacks.setdefault(kind, Counter()).update(attack.answers)
                else:
                    time.sleep(args.seconds)
                phases.append((kind, start, time.monotonic()))
                print(f"{kind:8} done", flush=True)
            searchers.close()
            readyz = httpx.get(f"{server.base_url}/readyz", timeout=5).status_code
        finally:
            server.stop()

    results = {}
    for kind in dict.fromkeys(k for k, _ in plan):
        samples = [s for s in searchers.samples
                   if any(k == kind and a + 1.0 <= s[0] < b for k, a, b in phases)]
        results[kind] = {**_stats(samples),
                         "attack_answers": dict(attacks.get(kind, Counter()))}
    print(f"\n{'phase':8} {'searches':>8} {'refused':>7} {'p50 ms':>7} {'p95 ms':>7} "
          f"{'max ms':>7}  attackers' answers")
    for kind, r in results.items():
        print(f"{kind:8} {r['searches']:8} {r['refused']:7} {r['p50_ms']!s:>7} "
              f"{r['p95_ms']!s:>7} {r['max_ms']!s:>7}  {r['attack_answers']}")
    path = write_result(args.result_name, {
        "machine": machine, "settings": {"pool_max_size": args.pool,
                                         "in_flight_cap": 2 * args.pool,
                                         "searchers": args.searchers, "pause_s": args.pause,
                                         "phase_seconds": args.seconds, "rounds": args.rounds,
                                         "first_second_of_each_phase": "excluded"},
        "phases": results, "readyz_after": readyz})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
