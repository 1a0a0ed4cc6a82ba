"""Time per Dream partition with the extractive model at 200 inputs, outbox included.

Seeds partitions of a fresh database through the real write path (store_memory: summary and
flush rows of 20 human sessions, direct human facts, plus automation noise that selection
must skip), then runs ``run_dream_partition`` once per partition (inputs, generation,
validation, ledger promotion, safety pass, wiki draft, outbox projections with embeddings)
and a second, idempotent run. Prints and writes bench/results/dream_partition.json.

    .venv/bin/python bench/dream_partition.py --partitions 5 --inputs 200
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, write_result
from memory_platform.features.dreaming.engine import run_dream_partition
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

TEMPLATES = (
    "We decided to move the {thing} of {company} to {tool}. The call ran long.",
    "{person} prefers weekly status mails about the {thing}. Nothing else came up.",
    "Invoices of {company} must never leave the EU region. We checked the contract.",
    "To close the month for {company}, first reconcile the bank, then export to {tool}.",
    "{company} is billed quarterly and has {n} employees on payroll.",
    "Wir haben beschlossen, {tool} für {company} zu nutzen. Danach kurze Pause.",
    "We talked about the {thing} again without a result.",
    "Notes from the sync: the {thing} for {company} looks fine.",
)
COMPANIES = ("Nordlicht GmbH", "Alpen Logistik AG", "Elbtal Software", "Isar Energie",
             "Brandt Steuerberatung", "Spree Medien")
PEOPLE = ("Anna", "Jonas", "Lea", "Paul", "Emma")
TOOLS = ("DATEV", "Lexware", "SAP", "Odoo")
THINGS = ("payroll run", "VAT return", "annual report", "bank import", "dunning run")


def seed(conn, settings: Settings, instance: str, inputs: int, rng: random.Random,
         embedder) -> None:
    facts = int(inputs * settings.dream_fact_quota_ratio)
    for i in range(facts):
        ctx = AccessContext(instance, user_id=f"user-{i % 7}")
        store_memory(conn, settings, ctx, MemoryWrite(
            f"{rng.choice(COMPANIES)} uses {rng.choice(TOOLS)} for the {rng.choice(THINGS)} "
            f"(fact {i}).", source_type="fact", visibility="team"), embedder=embedder)
    for i in range(inputs - facts):
        session = f"teamchat:room-{i % 20}"
        ctx = AccessContext(instance, user_id=f"user-{i % 7}", session_key=session)
        text = rng.choice(TEMPLATES).format(
            thing=rng.choice(THINGS), company=rng.choice(COMPANIES), tool=rng.choice(TOOLS),
            person=rng.choice(PEOPLE), n=rng.randint(5, 500))
        store_memory(conn, settings, ctx, MemoryWrite(
            f"{text} (summary {i})", source_type=rng.choice(("summary", "flush")),
            visibility="team"), embedder=embedder)
    for i in range(50):  # automation noise, excluded before the recency limit
        ctx = AccessContext(instance, user_id="bot", session_key=f"heartbeat:{i % 3}")
        store_memory(conn, settings, ctx, MemoryWrite(
            f"Heartbeat {i}: all systems nominal.", source_type="flush", visibility="team"),
            embedder=embedder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--dimensions", type=int, default=1536)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    with fresh_database(args.database_url) as url:
        settings = Settings(database_url=url, embedding_provider="hash",
                            hash_embedding_dimensions=args.dimensions,
                            dream_max_inputs=args.inputs,
                            dream_per_session_activity_cap=max(12, args.inputs // 10),
                            _env_file=None)  # type: ignore[call-arg]
        embedder = HashEmbeddingProvider(args.dimensions)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            first, second, stats = [], [], []
            for p in range(args.partitions):
                instance = f"bench-dream-{p}"
                seed(conn, settings, instance, args.inputs, rng, embedder)
                partition = Partition(instance, "team", instance)
                started = time.perf_counter()
                result = run_dream_partition(conn, settings, partition, model="extractive",
                                             embedder=embedder)
                first.append(time.perf_counter() - started)
                started = time.perf_counter()
                again = run_dream_partition(conn, settings, partition, model="extractive",
                                            embedder=embedder)
                second.append(time.perf_counter() - started)
                stats.append({"status": result.status, "again": again.status,
                              "inputs": result.stats["inputsTotal"],
                              "excludedAutomation": result.stats["excludedAutomation"],
                              "accepted": result.stats.get("accepted"),
                              "activated": result.stats.get("activated"),
                              "rejected": result.stats.get("rejected"),
                              "durations": result.stats["durations"]})
            machine = machine_info(conn)

    payload = {
        "inputs_per_partition": args.inputs,
        "partitions": args.partitions,
        "embedding": f"hash/{args.dimensions}",
        "first_run_seconds": {"median": round(statistics.median(first), 4),
                              "max": round(max(first), 4),
                              "all": [round(x, 4) for x in first]},
        "idempotent_rerun_seconds": {"median": round(statistics.median(second), 4),
                                     "max": round(max(second), 4)},
        "runs": stats,
        "machine": machine,
    }
    path = write_result("dream_partition", payload)
    print(f"time per partition ({args.inputs} inputs, extractive, outbox included): "
          f"median {payload['first_run_seconds']['median'] * 1000:.0f} ms, "
          f"max {payload['first_run_seconds']['max'] * 1000:.0f} ms; idempotent re-run "
          f"median {payload['idempotent_rerun_seconds']['median'] * 1000:.0f} ms")
    for run in stats:
        print(f"  {run['status']}/{run['again']}: inputs {run['inputs']}, excluded automation "
              f"{run['excludedAutomation']}, accepted {run['accepted']}, activated "
              f"{run['activated']}, rejected {run['rejected']}, phases {run['durations']}")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
