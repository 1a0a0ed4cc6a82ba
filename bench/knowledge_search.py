"""Latency of the library-level knowledge-graph search (``knowledge_search``) over a large graph.

Bulk-loads a synthetic German/English graph into a fresh database (default 100,000 claims,
a quarter as many entities, an edge per entity, hash-provider vectors of 1536 dimensions
for every claim and entity; COPY, not one row at a time; the partial HNSW indexes are built
once after the load), spread over workspace, team, private (20 users) and channel (10
channels, each user a member of two) audiences. Then random callers (users, users in a
channel, channel-only readers, the empty context, a user who sees nothing private) ask
questions that hit and questions that miss, and the same questions run through the bare
lexical statement (the graph arm context_search had before: one GIN arm over claim texts),
alternating rounds in the same run so that the ratio compares like with like.

    .venv/bin/python bench/knowledge_search.py --claims 100000 --queries 400

Results: stdout and bench/results/knowledge_search.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from bench.common import (
    RESULTS_DIR,
    _memory_text,
    fresh_database,
    machine_info,
    percentile,
    write_result,
)
from memory_platform.features.graph.search import knowledge_search
from memory_platform.features.retrieval.lexicon import generating_terms, rarity
from memory_platform.features.retrieval.question import embed_question
from memory_platform.features.retrieval.terms import or_tsquery, query_terms
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.generations import (
    EMBEDDING_TABLES,
    ensure_generation,
    ensure_vector_indexes,
    index_name,
)
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

INSTANCE = "bench-graph"
USERS = [f"user-{i:03d}" for i in range(20)]
CHANNELS = [f"slack:C{i}" for i in range(10)]
PEOPLE = [f"{f} {la}" for f in ("Anna", "Jonas", "Lea", "Felix", "Marie", "Paul")
          for la in ("Müller", "Schmidt", "Weber", "Becker", "Koch")]
HITS = ("Who owns the migration of the billing service?", "Nordlicht GmbH Rechnung",
        "Wann ist die Inventur bei Alpen Logistik AG?", "payment gateway outage certificate",
        "Lohnabrechnung Elbtal Software", "Anna Müller parental leave")
MISSES = ("zebra quantum xylophone", "Quasar Nebula Vortex 88412")
TYPES = ("person", "organization", "project", "document", "tool")
BATCH = 2000


def audiences(rng: random.Random) -> tuple[str, str]:
    pick = rng.random()
    if pick < 0.3:
        return "workspace", INSTANCE
    if pick < 0.55:
        return "team", INSTANCE
    if pick < 0.85:
        return "private", rng.choice(USERS)
    return "channel", rng.choice(CHANNELS)


def load(conn: psycopg.Connection, provider: HashEmbeddingProvider, claims: int,
         seed: int) -> dict[str, float]:
    """Entities, claims, edges and their vectors, by COPY; the HNSW indexes afterwards."""
    rng = random.Random(seed)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    generation = ensure_generation(conn, INSTANCE, provider)
    for table in ("agent_knowledge_entity_embeddings", "agent_knowledge_claim_embeddings"):
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
            sql.Identifier(index_name(table, generation.generation_key))))
    for i, user in enumerate(USERS):
        for channel in (CHANNELS[i % len(CHANNELS)], CHANNELS[(i * 3 + 1) % len(CHANNELS)]):
            conn.execute("INSERT INTO agent_channel_members (instance_key, channel_key, user_id)"
                         " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (INSTANCE, channel, user))
    entity_count = max(4, claims // 4)
    entities: list[tuple[uuid.UUID, str, str, str]] = []
    by_audience: dict[tuple[str, str], list[int]] = {}
    for i in range(entity_count):
        kind, key = audiences(rng)
        label = f"{rng.choice(PEOPLE)} {i}" if rng.random() < 0.5 else \
            _memory_text(rng, PEOPLE, 10, 40).split(".")[0][:60] + f" {i}"
        entities.append((uuid.uuid4(), label, kind, key))
        by_audience.setdefault((kind, key), []).append(i)
    with conn.cursor() as cur, cur.copy(
            "COPY agent_knowledge_entities (id, instance_key, entity_type, label,"
            " normalized_label, visibility_scope, audience_key, subject_refs) FROM STDIN") as cp:
        for i, (ident, label, kind, key) in enumerate(entities):
            refs = f'{{"userId": "{key}"}}' if kind == "private" else "{}"
            cp.write_row((ident, INSTANCE, TYPES[i % len(TYPES)], label, label.lower(), kind,
                          key, refs))
    timings["entities_s"] = time.perf_counter() - started
    _vectors(conn, provider, generation, "entity",
             [(e[0], e[1]) for e in entities])
    timings["entity_vectors_s"] = time.perf_counter() - started - timings["entities_s"]

    mark = time.perf_counter()
    claim_rows = []
    now = datetime.now(UTC)
    for _ in range(claims):
        subject = entities[rng.randrange(entity_count)]
        text = _memory_text(rng, PEOPLE, 60, 200)
        claim_rows.append((uuid.uuid4(), subject[0], subject[2], subject[3], text,
                           rng.randint(0, 400)))
    with conn.cursor() as cur, cur.copy(
            "COPY agent_knowledge_claims (id, instance_key, subject_entity_id, predicate,"
            " object_value, assertion_text, confidence, visibility_scope, audience_key,"
            " updated_at) FROM STDIN") as cp:
        for ident, subject, kind, key, text, age in claim_rows:
            cp.write_row((ident, INSTANCE, subject, "states", text[:40], text,
                          round(rng.uniform(0.5, 1.0), 2), kind, key,
                          now - timedelta(days=age)))
    timings["claims_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    _vectors(conn, provider, generation, "claim", [(c[0], c[4]) for c in claim_rows])
    timings["claim_vectors_s"] = time.perf_counter() - mark

    mark = time.perf_counter()
    with conn.cursor() as cur, cur.copy(
            "COPY agent_knowledge_edges (instance_key, source_entity_id, target_entity_id,"
            " relation_type, visibility_scope, audience_key) FROM STDIN") as cp:
        for members in by_audience.values():
            for a, b in zip(members, members[1:], strict=False):
                cp.write_row((INSTANCE, entities[a][0], entities[b][0], "related_to",
                              entities[a][2], entities[a][3]))
    timings["edges_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("SET max_parallel_maintenance_workers = 2")
    ensure_vector_indexes(conn, generation.generation_key, provider.dimensions)
    conn.execute("VACUUM ANALYZE")
    timings["indexes_s"] = time.perf_counter() - mark
    return {k: round(v, 1) for k, v in timings.items()}


def _vectors(conn, provider, generation, item: str, texts: list[tuple[uuid.UUID, str]]) -> None:
    statement = sql.SQL(
        "COPY {} (instance_key, {}, generation_id, embedding_key, embedding, content_hash)"
        " FROM STDIN WITH (FORMAT BINARY)").format(
        sql.Identifier(f"agent_knowledge_{item}_embeddings"), sql.Identifier(f"{item}_id"))
    with conn.cursor() as cur, cur.copy(statement) as cp:
        cp.set_types(["text", "uuid", "int8", "text", "vector", "text"])
        for start in range(0, len(texts), BATCH):
            batch = texts[start:start + BATCH]
            vectors = provider.embed_documents([t for _, t in batch])
            for (ident, _), vector in zip(batch, vectors, strict=True):
                cp.write_row((INSTANCE, ident, generation.id, generation.generation_key,
                              vector, "h"))
            print(f"  {item} vectors {start + len(batch):,}/{len(texts):,}", file=sys.stderr,
                  flush=True)


def random_context(rng: random.Random) -> AccessContext:
    pick = rng.random()
    user = rng.choice(USERS)
    if pick < 0.5:
        return AccessContext(INSTANCE, user_id=user)
    if pick < 0.7:
        return AccessContext(INSTANCE, user_id=user, channel_thread_key=rng.choice(CHANNELS),
                             channel_type="slack")
    if pick < 0.8:
        return AccessContext(INSTANCE, channel_thread_key=rng.choice(CHANNELS))
    if pick < 0.9:
        return AccessContext(INSTANCE, user_id="stranger")
    return AccessContext(INSTANCE)


def bare_lexical(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
                 query: str) -> int:
    """The former graph arm of context_search: one bounded GIN arm over claim texts."""
    from memory_platform.shared.access import graph_predicate

    terms = query_terms(query)
    generating = generating_terms(rarity(conn, ctx.instance_key, terms), settings)
    if not generating:
        return 0
    return len(conn.execute(sql.SQL("""
        SELECT k.id FROM (SELECT * FROM agent_knowledge_claims
                           WHERE claim_tsv @@ {generating} LIMIT {scan_cap}) k
         WHERE {visible} AND k.status = 'active'
         ORDER BY ts_rank(k.claim_tsv, {ranked}, 0) DESC LIMIT {cap}
    """).format(generating=or_tsquery(generating), ranked=or_tsquery(terms),
                scan_cap=sql.Literal(settings.retrieval_lexical_scan_cap),
                visible=graph_predicate(ctx, "k"), cap=sql.Literal(32))).fetchall())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--claims", type=int, default=100_000, help="claims in the graph")
    parser.add_argument("--queries", type=int, default=400, help="questions per path")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds")
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    with fresh_database(args.database_url) as url:
        settings = Settings(database_url=url, embedding_provider="hash",
                            _env_file=None)  # type: ignore[call-arg]
        provider = HashEmbeddingProvider(settings.hash_embedding_dimensions)
        with psycopg.connect(url, autocommit=True) as conn:
            register_vector(conn)
            print(f"loading {args.claims:,} claims ...", file=sys.stderr, flush=True)
            timings = load(conn, provider, args.claims, args.seed)
            print(f"loaded: {timings}", file=sys.stderr, flush=True)
            questions = [(q, q in HITS) for q in HITS + MISSES]

            def one(path: str) -> tuple[float, int, bool]:
                query, hit = rng.choice(questions)
                ctx = random_context(rng)
                started = time.perf_counter()
                if path == "knowledge":
                    # The question is embedded first, as the API does, outside the timing.
                    question = embed_question(provider, query)
                    started = time.perf_counter()
                    result = knowledge_search(conn, settings, ctx, query, question=question)
                    found = len(result.claims) + len(result.entities)
                else:
                    found = bare_lexical(conn, settings, ctx, query)
                return (time.perf_counter() - started) * 1000, found, hit

            for _ in range(args.warmup):
                one("knowledge"), one("lexical")
            samples: dict[str, list[tuple[float, int, bool]]] = {"knowledge": [],
                                                                  "lexical": []}
            per_round = max(1, args.queries // args.rounds)
            for number in range(args.rounds):
                order = ("knowledge", "lexical") if number % 2 == 0 else ("lexical", "knowledge")
                for path in order:
                    samples[path].extend(one(path) for _ in range(per_round))
                print(f"round {number + 1}/{args.rounds} done", file=sys.stderr, flush=True)
            plan: list[str] = []
            knowledge_search(conn, settings, AccessContext(INSTANCE, user_id=USERS[0]),
                             HITS[0], embedder=provider, explain=plan)
            sizes = {table: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
                sql.Identifier(table))).fetchone()[0]
                for table in ("agent_knowledge_entities", "agent_knowledge_claims",
                              "agent_knowledge_edges", *EMBEDDING_TABLES[2:])}
            machine = machine_info(conn)

    def stats(rows: list[tuple[float, int, bool]]) -> dict[str, float | None]:
        ms = [r[0] for r in rows]
        return {"n": len(ms), "p50_ms": round(percentile(ms, 50), 2),
                "p95_ms": round(percentile(ms, 95), 2), "p99_ms": round(percentile(ms, 99), 2),
                "mean_ms": round(statistics.fmean(ms), 2),
                "mean_found": round(statistics.fmean(r[1] for r in rows), 2)}

    result = {
        "claims": args.claims, "rows": sizes, "load_seconds": timings,
        "embedding": {"provider": provider.provider, "dimensions": provider.dimensions},
        "knowledge_search": stats(samples["knowledge"]),
        "knowledge_search_hits": stats([r for r in samples["knowledge"] if r[2]]),
        "knowledge_search_misses": stats([r for r in samples["knowledge"] if not r[2]]),
        "bare_lexical": stats(samples["lexical"]),
        "uses_hnsw": any("hnsw" in line for line in plan),
        "plan": plan, "machine": machine,
    }
    result["ratio_p50"] = round(result["knowledge_search"]["p50_ms"]
                                / max(result["bare_lexical"]["p50_ms"], 1e-3), 2)
    result["ratio_p95"] = round(result["knowledge_search"]["p95_ms"]
                                / max(result["bare_lexical"]["p95_ms"], 1e-3), 2)
    target = write_result("knowledge_search", result, args.results_dir)
    ks, lx = result["knowledge_search"], result["bare_lexical"]
    print(f"{args.claims:,} claims: knowledge_search p50 {ks['p50_ms']} ms, p95 {ks['p95_ms']} ms"
          f" (hits p95 {result['knowledge_search_hits']['p95_ms']} ms, misses p95"
          f" {result['knowledge_search_misses']['p95_ms']} ms); bare lexical p50"
          f" {lx['p50_ms']} ms, p95 {lx['p95_ms']} ms; ratio p50 {result['ratio_p50']}x,"
          f" p95 {result['ratio_p95']}x; HNSW in plan {result['uses_hnsw']}")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
