"""What a conversation turn costs to write, side by side with the same text as a plain memory.

A memory written with a session key and an event time is a conversation turn
(memories/turns.py): the write looks up the two turns before it and stores their text as the
first chunk's context (a second tsvector). This measures ``store_memory`` of the generated
conversations' turns (hash embeddings, so the database work is not hidden behind a model) in
alternating rounds: ``turns`` (session key and event time) and ``plain`` (the same texts,
no session), each round into a user of its own, and reports the medians and the ratio.

    .venv/bin/python -m bench.turn_writes --rounds 5 --turns 400
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, write_result
from memory_platform.access import AccessContext
from memory_platform.benchmarks.conversations.generate import generate
from memory_platform.embeddings.hashing import HashEmbeddingProvider
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.settings import Settings

INSTANCE = "bench-turn-writes"


def _round(conn: psycopg.Connection, settings: Settings, provider: HashEmbeddingProvider,
           turns: list, kind: str, round_no: int) -> float:
    """Turns per second of one round of ``kind``."""
    user = f"{kind}-{round_no}"
    started = time.perf_counter()
    for turn in turns:
        session = f"{user}-s{turn.session:02d}" if kind == "turns" else None
        ctx = AccessContext(INSTANCE, user_id=user, session_key=session)
        store_memory(conn, settings, ctx, MemoryWrite(
            turn.content(), occurred_at=turn.occurred_at if kind == "turns" else None),
            embedder=provider)
    return len(turns) / (time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each kind")
    parser.add_argument("--turns", type=int, default=400, help="turns written per round")
    parser.add_argument("--database-url", default=None,
                        help="server to create the fresh database on (default: embedded)")
    args = parser.parse_args(argv)

    turns = generate(conversations=1)[0].turns()[:args.turns]
    rates: dict[str, list[float]] = {"turns": [], "plain": []}
    with fresh_database(args.database_url) as url, \
            psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
        _round(conn, settings, provider, turns[:50], "plain", -1)  # warm-up, unmeasured
        for round_no in range(args.rounds):
            for kind in ("turns", "plain") if round_no % 2 == 0 else ("plain", "turns"):
                rate = _round(conn, settings, provider, turns, kind, round_no)
                rates[kind].append(rate)
                print(f"round {round_no + 1} {kind:<5} {rate:7.1f} writes/s", flush=True)
        machine = machine_info(conn)
    medians = {kind: round(statistics.median(values), 1) for kind, values in rates.items()}
    ratio = round(medians["turns"] / medians["plain"], 3)
    print(f"median: turns {medians['turns']} writes/s, plain {medians['plain']} writes/s, "
          f"turns / plain = {ratio}")
    target = write_result("turn_writes", {"turns_per_round": len(turns), "rounds": rates,
                                          "medians": medians, "ratio": ratio,
                                          "machine": machine})
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
