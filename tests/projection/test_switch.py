"""Switching the embedding model on a populated instance: the new generation is registered,
indexed and active at once; conversion runs batch by batch while writes keep succeeding and
search keeps answering (keyword path for unconverted rows); the backlog reaches zero."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector

from memory_platform.features.maintenance.reembedding import (
    KINDS,
    backlog_by_kind,
    convert,
    reembed_step,
)
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.projection.switch import switch_generation
from memory_platform.features.retrieval.search import search_memories
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.generations import (
    EMBEDDING_TABLES,
    active_generation,
    index_name,
)
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.graph.support import apply, batch, claim, entity, extraction, fact

OLD_KEY = "hash:feature-hash-v1:64:v1"
NEW = HashEmbeddingProvider(32)
NEW_KEY = "hash:feature-hash-v1:32:v1"
MEMORIES = 300


def note(i: int) -> str:
    return f"Projektnotiz zq{i:04d}: Mandant Nordlicht bucht Beleg {i} im Quartal {i % 4 + 1}."


def populate(db, settings, instance: str, n: int = MEMORIES) -> None:
    """n memories embedded with the 64-d hash provider (every fifth a fact: an active
    assertion with a vector) and a small knowledge graph (entities and claims with vectors)."""
    ctx = AccessContext(instance, user_id="anna")
    for i in range(n):
        store_memory(db, settings, ctx, MemoryWrite(
            note(i), source_type="fact" if i % 5 == 0 else "manual", visibility="team",
            trust_class="human_direct"))
    a = fact(db, settings, instance, "Projekt Apollo ships the Keycloak login for Mandant Nord.")
    apply(db, batch(a), extraction(
        [entity("p", "Projekt Apollo", a, entity_type="project"),
         entity("k", "Keycloak", a, entity_type="tool")],
        [claim("p", "ships", a, obj="k")]))
    from memory_platform.features.graph.embed import reembed_graph
    reembed_graph(db, settings, instance)   # the graph's 64-d vectors


def chunk_keys(db, instance: str) -> dict[str | None, int]:
    return dict(db.execute("SELECT embedding_key, count(*) FROM agent_memory_chunks"
                           " WHERE instance_key = %s GROUP BY 1", (instance,)).fetchall())


@pytest.fixture
def new_settings(settings):
    return settings.model_copy(update={"hash_embedding_dimensions": 32,
                                       "reembed_batch_size": 40, "graph_embed_batch": 2})


def test_switch_registers_indexes_and_activates_without_touching_old_vectors(
        db, settings, new_settings, instance):
    populate(db, settings, instance, n=20)
    old = active_generation(db, instance)
    assert old.generation_key == OLD_KEY
    old_vectors = db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                             " WHERE instance_key = %s", (instance,)).fetchone()[0]

    generation = switch_generation(db, new_settings, NEW, instance_key=instance)

    assert generation.generation_key == NEW_KEY and generation.status == "active"
    assert active_generation(db, instance).id == generation.id
    assert db.execute("SELECT status FROM agent_memory_embedding_generations WHERE id = %s",
                      (old.id,)).fetchone()[0] == "retired"
    for table in EMBEDDING_TABLES:   # built, valid, partial on the new key
        valid, definition = db.execute(
            "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            (index_name(table, NEW_KEY),)).fetchone()
        assert valid and NEW_KEY in definition and "halfvec(32)" in definition
    # Nothing converted yet: old vectors stay in their generation, all of it is backlog.
    assert chunk_keys(db, instance) == {OLD_KEY: 20 + 1}
    assert db.execute("SELECT count(*) FROM agent_memory_assertion_embeddings"
                      " WHERE instance_key = %s", (instance,)).fetchone()[0] == old_vectors
    left = backlog_by_kind(db, generation)
    assert left == {"chunks": 21, "assertions": 5, "entities": 2, "claims": 1}
    # Idempotent: switching again changes nothing.
    assert switch_generation(db, new_settings, NEW, instance_key=instance) == generation


def test_writes_and_search_go_on_while_the_backlog_is_converted(
        db, module_database_url, settings, new_settings, instance):
    populate(db, settings, instance)
    switch_generation(db, new_settings, NEW, instance_key=instance)
    ctx = AccessContext(instance, user_id="anna")
    seen: list[dict] = []
    written: list = []

    with psycopg.connect(module_database_url, autocommit=True) as other:
        register_vector(other)

        def between_batches(totals) -> None:
            """Another client, between two committed batches: a write, then searches for
            a converted-or-not old memory and the memory it just wrote."""
            i = len(written)
            stored = store_memory(other, new_settings, ctx, MemoryWrite(
                f"Live write lv{i:03d} during the model switch.", visibility="team",
                trust_class="human_direct"), embedder=NEW)
            written.append(stored.id)
            old_hits = search_memories(other, new_settings, ctx, "zq0007 Nordlicht",
                                       embedder=NEW, stamp=False)
            new_hits = search_memories(other, new_settings, ctx, f"lv{i:03d}", embedder=NEW,
                                       stamp=False)
            seen.append({"old": [h.content for h in old_hits][:1],
                         "new": [h.memory_id for h in new_hits][:1],
                         "old_keys": chunk_keys(other, instance).get(OLD_KEY, 0)})

        result = convert(db, new_settings, instance, embedder=NEW, progress=between_batches)

    assert result.error is None
    assert result.total_remaining == 0 and result.remaining == dict.fromkeys(KINDS, 0)
    assert result.converted == {"chunks": MEMORIES + 1, "assertions": MEMORIES // 5 + 1,
                                "entities": 2, "claims": 1}
    assert result.batches == len(seen) >= 10
    # Search answered after every batch, through the keyword path while the row was old.
    assert all(s["old"] == [note(7)] for s in seen)
    assert all(s["new"] == [written[i]] for i, s in enumerate(seen))
    assert seen[0]["old_keys"] > 0 and seen[-1]["old_keys"] == 0
    # Every write between batches stored (nothing dropped), with the new generation.
    stored = db.execute("SELECT count(*) FROM agent_memories WHERE id = ANY(%s)",
                        (written,)).fetchone()[0]
    assert stored == len(written) == len(seen)
    assert chunk_keys(db, instance) == {NEW_KEY: MEMORIES + 1 + len(written)}
    # Old vectors of assertions and graph items stayed in their generation.
    keys = db.execute("SELECT DISTINCT embedding_key FROM agent_memory_assertion_embeddings"
                      " WHERE instance_key = %s ORDER BY 1", (instance,)).fetchall()
    assert keys == [(NEW_KEY,), (OLD_KEY,)]
    # Vector search now works in the new generation.
    hits = search_memories(db, new_settings, ctx, note(42), embedder=NEW, stamp=False)
    assert hits[0].content == note(42) and hits[0].vector_score is not None


def test_reembed_step_is_bounded_and_reports_counts_per_kind(
        db, settings, new_settings, instance):
    populate(db, settings, instance, n=100)
    switch_generation(db, new_settings, NEW, instance_key=instance)

    first = reembed_step(db, new_settings, instance, batches=3, embedder=NEW)

    # Two graph batches (2 entities, 1 claim), then one batch's rows (40): the last
    # assertions and the first chunks, committed as two units.
    assert first["batches"] == 4 and first["provider_failed"] == 0
    assert (first["converted_entities"], first["converted_claims"]) == (2, 1)
    assert first["converted_assertions"] + first["converted_chunks"] == 40
    assert first["remaining"] == first["remaining_chunks"] + first["remaining_assertions"] > 0
    assert all(isinstance(v, int) for v in first.values())
    steps = [first]
    while steps[-1]["remaining"]:
        steps.append(reembed_step(db, new_settings, instance, batches=3, embedder=NEW))
        assert len(steps) < 10
    assert sum(s["converted_chunks"] for s in steps) == 101
    assert sum(s["converted_assertions"] for s in steps) == 21
    again = reembed_step(db, new_settings, instance, embedder=NEW)
    assert (again["converted"], again["remaining"]) == (0, 0)


def test_cli_switch_until_done(db, settings, module_database_url, instance, monkeypatch):
    populate(db, settings, instance, n=30)
    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "32")
    monkeypatch.setenv("MEMORY_REEMBED_BATCH_SIZE", "8")
    from memory_platform.cli import main
    from memory_platform.foundation.settings import get_settings

    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["embeddings", "switch", "--provider", "hash",
                                           "--instance", instance, "--until-done"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert (f"{instance}: switched to {NEW_KEY}; converted 31 chunks, 7 assertions, "
            "2 entities, 1 claims; backlog ~0 chunks" in result.stdout)
    assert "converted" in result.stderr and "rows/s" in result.stderr
    assert active_generation(db, instance).generation_key == NEW_KEY
    assert chunk_keys(db, instance) == {NEW_KEY: 31}
