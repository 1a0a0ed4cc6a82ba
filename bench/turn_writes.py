"""What a conversation turn costs to write, side by side with the same text as a plain memory.

A memory written with a session key and an event time is a conversation turn
(memories/turns.py): the write looks up the two turns before it, stores their text as the
first chunk's context (a second tsvector) and, with ``turn_context_vectors`` on (the
default), a second vector: the turn embedded with the turn before it. This measures
``store_memory`` of the generated conversations' turns (hash embeddings, so the database work
is not hidden behind a model) in alternating rounds, each round into a user of its own:

* ``turns``: session key and event time, context vector written (today's write);
* ``turns-1v``: the same with ``turn_context_vectors`` off (the write before the second
  vector, issue 29);
* ``plain``: the same texts, no session;
* ``turns-unlisted``: ``turns`` without the listing's index (migration 0040 dropped for the
  round and built again after it): what that index adds to a write;
* ``items``: the same turns appended as session items, one per append (``append_items``,
  what ``POST /api/v1/sessions/{key}/items`` does), each recalled as a turn
  (sessions/turn_recall.py: issue 29.3);
* ``items-unrecalled``: the same with ``session_turn_recall`` off (the append before it).

Per kind it reports writes per second and the PostgreSQL CPU per write (the backend
process's user + system time, read from ``/proc``: a local server only, else not reported),
the medians, and the ratios to ``turns-1v``.

    .venv/bin/python -m bench.turn_writes --rounds 5 --turns 400
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import PROJECT_ROOT, fresh_database, machine_info, write_result
from memory_platform.features.benchmarks.conversations.generate import generate
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.sessions.items import TurnItem, append_items
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-turn-writes"
KINDS = ("turns", "turns-1v", "plain", "turns-unlisted", "items", "items-unrecalled")
LISTING_INDEX = "agent_memories_listing_idx"
LISTING_MIGRATION = PROJECT_ROOT / "migrations" / "0040_memory_listing.sql"
_TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of the server process ``pid`` (None: not on this machine)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (man 5 proc)


def _round(conn: psycopg.Connection, settings: Settings, provider: HashEmbeddingProvider,
           turns: list, kind: str, round_no: int) -> tuple[float, float | None]:
    """Writes per second and PostgreSQL CPU milliseconds per write of one round of ``kind``."""
    user = f"{kind}-{round_no}"
    tuned = settings.model_copy(update={"turn_context_vectors": kind != "turns-1v",
                                        "session_turn_recall": kind != "items-unrecalled"})
    if kind == "turns-unlisted":
        conn.execute(f"DROP INDEX {LISTING_INDEX}")
    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    cpu_before = backend_cpu_seconds(backend)
    started = time.perf_counter()
    for turn in turns:
        session = f"{user}-s{turn.session:02d}" if kind != "plain" else None
        ctx = AccessContext(INSTANCE, user_id=user, session_key=session)
        if kind.startswith("items"):
            append_items(conn, tuned, ctx, [TurnItem(role="user", content=turn.content(),
                                                     occurred_at=turn.occurred_at)])
            continue
        store_memory(conn, tuned, ctx, MemoryWrite(
            turn.content(), occurred_at=turn.occurred_at if kind != "plain" else None),
            embedder=provider)
    rate = len(turns) / (time.perf_counter() - started)
    cpu_after = backend_cpu_seconds(backend)
    if kind == "turns-unlisted":
        conn.execute(LISTING_MIGRATION.read_text())       # the index back, as migrated
    cpu = (None if cpu_before is None or cpu_after is None
           else (cpu_after - cpu_before) * 1000 / len(turns))
    return rate, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each kind")
    parser.add_argument("--turns", type=int, default=400, help="turns written per round")
    parser.add_argument("--database-url", default=None,
                        help="server to create the fresh database on (default: embedded)")
    args = parser.parse_args(argv)

    turns = generate(conversations=1)[0].turns()[:args.turns]
    rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    with fresh_database(args.database_url) as url, \
            psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
        _round(conn, settings, provider, turns[:50], "plain", -1)  # warm-up, unmeasured
        for round_no in range(args.rounds):
            shift = round_no % len(KINDS)  # each kind first, second and last in turn
            for kind in KINDS[shift:] + KINDS[:shift]:
                rate, cpu_ms = _round(conn, settings, provider, turns, kind, round_no)
                rates[kind].append(rate)
                if cpu_ms is not None:
                    cpu[kind].append(cpu_ms)
                shown = f", PostgreSQL {cpu_ms:.2f} ms CPU/write" if cpu_ms is not None else ""
                print(f"round {round_no + 1} {kind:<16} {rate:7.1f} writes/s{shown}", flush=True)
        machine = machine_info(conn)
    medians = {kind: round(statistics.median(values), 1) for kind, values in rates.items()}
    cpu_medians = {kind: round(statistics.median(values), 3) if values else None
                   for kind, values in cpu.items()}
    ratios = {kind: round(medians[kind] / medians["turns-1v"], 3) for kind in KINDS}
    cpu_ratios = {kind: (round(cpu_medians[kind] / cpu_medians["turns-1v"], 3)
                         if cpu_medians[kind] and cpu_medians["turns-1v"] else None)
                  for kind in KINDS}
    for kind in KINDS:
        print(f"median {kind:<16} {medians[kind]:7.1f} writes/s (x{ratios[kind]}), PostgreSQL "
              f"CPU {cpu_medians[kind]} ms/write (x{cpu_ratios[kind]} of turns-1v)")
    target = write_result("turn_writes", {"turns_per_round": len(turns), "rounds": rates,
                                          "cpu_ms_per_write": cpu, "medians": medians,
                                          "cpu_medians": cpu_medians, "ratios": ratios,
                                          "cpu_ratios": cpu_ratios, "machine": machine})
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
