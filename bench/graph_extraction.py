"""Knowledge-graph extraction throughput with the offline extractive model.

One audience partition (team) of ``--assertions`` approved facts (2,000 by default) written
through ``store_memory`` (the ledger triggers enqueue one graph job per fact), then the graph
worker (``graph.build.process_graph_jobs``) works them off with the offline extractor and hash
embeddings (so the database work is not hidden behind a model): batches planned per audience,
strict validation, upserts with evidence, embeddings of the new entities and claims. Reported:
assertions per second of the first build, and of a rebuild of the same assertions (every item
exists: the reinforce path), alternating nothing: the two are different work.

    .venv/bin/python -m bench.graph_extraction --assertions 2000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector

from bench.common import fresh_database, machine_info, write_result
from memory_platform.features.graph.build import GraphBuild, process_graph_jobs
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.projection.outbox import GRAPH_PROJECTION, enqueue
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from memory_platform.shared.llm.selection import OFFLINE_MODEL

INSTANCE = "bench-graph"
CUSTOMERS = ["Nordwind Logistik", "Helios Energy", "Acme Robotics", "Blue Harbor Bank",
             "Kranich Pharma", "Sierra Foods", "Atlas Insurance", "Lumen Studios"]
TOOLS = ["Keycloak", "PostgreSQL", "Grafana", "Jira", "SAP", "DATEV", "Slack", "GitLab"]
PEOPLE = ["Anna Berger", "Jonas Weber", "Maria Lopez", "Tom Fischer", "Lea Novak",
          "Omar Haddad", "Sofia Rossi", "Ben Carter"]
TEMPLATES = [
    "{customer} uses {tool} for invoice approval in region {n}.",
    "{person} is the account manager of {customer} since {year}.",
    "{customer} prefers {tool} reports every Monday for cost centre {n}.",
    "The {customer} team decided to migrate ticket queue {n} to {tool}.",
    "{person} must approve every {tool} change for {customer} above {n} euros.",
    "Der Mandant {customer} nutzt {tool} für die Buchhaltung seit {year}.",
]


def _facts(count: int, seed: int = 15) -> list[tuple[str, dict[str, str]]]:
    rng = random.Random(seed)
    facts: list[tuple[str, dict[str, str]]] = []
    for n in range(count):
        customer = rng.choice(CUSTOMERS)
        text = rng.choice(TEMPLATES).format(customer=customer, tool=rng.choice(TOOLS),
                                            person=rng.choice(PEOPLE), n=n,
                                            year=rng.randint(2015, 2025))
        facts.append((text, {"mandantId": f"m-{CUSTOMERS.index(customer)}"}))
    return facts


def _drain(conn, settings: Settings, provider, model: GraphModel) -> tuple[GraphBuild, float]:
    total = GraphBuild()
    started = time.perf_counter()
    while True:
        passed = process_graph_jobs(conn, settings, instance_key=INSTANCE, embedder=provider,
                                    model=model)
        total.merge(passed)
        print(f"  pass: {passed.jobs} jobs, {passed.batches} batches, "
              f"+{passed.changes.claims_added} claims, {len(passed.failures)} failures",
              flush=True)
        if passed.jobs == 0:
            break
    return total, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assertions", type=int, default=2000,
                        help="approved facts in the partition (default 2000)")
    parser.add_argument("--database-url", default=None,
                        help="server to create the fresh database on (default: embedded)")
    args = parser.parse_args(argv)

    with fresh_database(args.database_url) as url, \
            psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
        model = GraphModel(OFFLINE_MODEL, "explicit", None)
        ctx = AccessContext(INSTANCE, user_id="bench-user")
        print(f"writing {args.assertions} approved team facts ...", flush=True)
        started = time.perf_counter()
        for text, refs in _facts(args.assertions):
            store_memory(conn, settings, ctx, MemoryWrite(text, source_type="fact",
                                                          visibility="team",
                                                          subject_refs=refs),
                         embedder=provider)
        print(f"  {time.perf_counter() - started:.1f} s", flush=True)
        jobs = conn.execute(
            "SELECT count(*) FROM agent_memory_ingestion_outbox WHERE instance_key = %s"
            " AND job_type = %s AND status = 'pending'", (INSTANCE, GRAPH_PROJECTION)
        ).fetchone()[0]
        print(f"first build ({jobs} graph jobs) ...", flush=True)
        first, first_seconds = _drain(conn, settings, provider, model)

        print("rebuild (every item exists) ...", flush=True)
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM agent_memory_assertions WHERE instance_key = %s", (INSTANCE,))]
        with conn.transaction():
            for assertion_id in ids:
                enqueue(conn, INSTANCE, GRAPH_PROJECTION, assertion_id,
                        f"bench-rebuild:{assertion_id}",
                        {"audienceKind": "team", "audienceKey": INSTANCE})
        second, second_seconds = _drain(conn, settings, provider, model)
        rows = dict(conn.execute(
            "SELECT 'entities', count(*) FROM agent_knowledge_entities WHERE instance_key = %s"
            " UNION ALL SELECT 'claims', count(*) FROM agent_knowledge_claims"
            " WHERE instance_key = %s UNION ALL SELECT 'edges', count(*)"
            " FROM agent_knowledge_edges WHERE instance_key = %s",
            (INSTANCE, INSTANCE, INSTANCE)).fetchall())
        machine = machine_info(conn)

    first_rate = round(first.sources / first_seconds, 1) if first_seconds else 0.0
    second_rate = round(second.sources / second_seconds, 1) if second_seconds else 0.0
    print(f"first build: {first.sources} assertions in {first_seconds:.2f} s = "
          f"{first_rate} assertions/s ({first.batches} batches)")
    print(f"rebuild:     {second.sources} assertions in {second_seconds:.2f} s = "
          f"{second_rate} assertions/s")
    print(f"graph: {rows}")
    target = write_result("graph_extraction", {
        "assertions": args.assertions, "first": {**first.summary(), "seconds": first_seconds,
                                                 "assertionsPerSecond": first_rate},
        "rebuild": {**second.summary(), "seconds": second_seconds,
                    "assertionsPerSecond": second_rate},
        "rows": rows, "machine": machine})
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
