"""Registering an embedding generation: one active per instance, indexes per model key."""

from __future__ import annotations

from psycopg import sql

from memory_platform.foundation.settings import PROJECT_ROOT
from memory_platform.shared.embeddings.generations import (
    EMBEDDING_TABLES,
    active_generation,
    index_name,
    register_generation,
)


def _index_definitions(conn, key: str) -> dict[str, str]:
    rows = conn.execute(
        "SELECT tablename, indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
        ([index_name(table, key) for table in EMBEDDING_TABLES],),
    ).fetchall()
    return dict(rows)


def test_registering_creates_a_partial_hnsw_index_per_embedding_table(conn):
    generation = register_generation(conn, "acme", "hash", "feature-hash", 1536)
    definitions = _index_definitions(conn, generation.generation_key)
    assert set(definitions) == set(EMBEDDING_TABLES)
    for definition in definitions.values():
        assert "USING hnsw" in definition
        assert "halfvec(1536)" in definition and "halfvec_cosine_ops" in definition
        assert f"embedding_key = '{generation.generation_key}'" in definition


def test_registering_twice_finds_the_same_generation(conn):
    first = register_generation(conn, "acme", "hash", "feature-hash", 1536)
    again = register_generation(conn, "acme", "hash", "feature-hash", 1536)
    assert again == first
    count = conn.execute("SELECT count(*) FROM agent_memory_embedding_generations").fetchone()[0]
    assert count == 1


def test_a_new_model_becomes_active_and_retires_the_previous_one(conn):
    old = register_generation(conn, "acme", "hash", "feature-hash", 1536)
    new = register_generation(conn, "acme", "openai", "text-embedding-3-small", 1536)
    assert active_generation(conn, "acme") == new
    status = conn.execute(
        "SELECT status FROM agent_memory_embedding_generations WHERE id = %s", (old.id,)
    ).fetchone()[0]
    assert status == "retired"


def test_generations_are_per_instance_but_share_the_model_index(conn):
    a = register_generation(conn, "acme", "hash", "feature-hash", 384)
    b = register_generation(conn, "globex", "hash", "feature-hash", 384)
    assert a.id != b.id and a.generation_key == b.generation_key
    assert active_generation(conn, "acme") == a and active_generation(conn, "globex") == b
    assert len(_index_definitions(conn, a.generation_key)) == len(EMBEDDING_TABLES)


def test_registering_without_activation_keeps_the_active_generation(conn):
    active = register_generation(conn, "acme", "hash", "feature-hash", 1536)
    building = register_generation(conn, "acme", "local", "e5-small", 384, activate=False)
    assert building.status == "building"
    assert active_generation(conn, "acme") == active


def test_vector_search_within_a_generation_can_use_its_index(conn):
    generation = register_generation(conn, "acme", "hash", "feature-hash", 3)
    memory_id = conn.execute(
        "INSERT INTO agent_memories (instance_key, memory_scope, visibility_scope, audience_key,"
        " source_type, content, content_hash) VALUES ('acme', 'workspace', 'workspace', 'acme',"
        " 'manual', 'hello', 'h') RETURNING id"
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO agent_memory_chunks (instance_key, memory_id, chunk_index, content,"
        " embedding, generation_id, embedding_key) VALUES ('acme', %s, 0, 'hello',"
        " '[1,0,0]', %s, %s)",
        (memory_id, generation.id, generation.generation_key),
    )
    conn.execute("SET enable_seqscan = off")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN SELECT id FROM agent_memory_chunks WHERE embedding_key = %s"
        " ORDER BY embedding::halfvec(3) <=> '[1,0,0]' LIMIT 5",
        (generation.generation_key,),
    ))
    assert index_name("agent_memory_chunks", generation.generation_key) in plan


def test_migration_0010_rebuilds_full_precision_indexes_as_half_precision(conn):
    # A database from before 0010 has `embedding::vector(N)` indexes under the same names.
    generation = register_generation(conn, "acme", "hash", "feature-hash", 8)
    for table in EMBEDDING_TABLES:
        name = sql.Identifier(index_name(table, generation.generation_key))
        conn.execute(sql.SQL("DROP INDEX {}").format(name))
        conn.execute(sql.SQL("CREATE INDEX {} ON {} USING hnsw ((embedding::vector(8))"
                             " vector_cosine_ops) WHERE embedding_key = {}").format(
            name, sql.Identifier(table), sql.Literal(generation.generation_key)))
    conn.execute((PROJECT_ROOT / "migrations" / "0010_halfvec_indexes.sql").read_text())
    definitions = _index_definitions(conn, generation.generation_key)
    assert set(definitions) == set(EMBEDDING_TABLES)
    for definition in definitions.values():
        assert "halfvec(8)) halfvec_cosine_ops" in definition
        assert f"embedding_key = '{generation.generation_key}'" in definition


def test_embedding_tables_keep_their_vectors_in_the_row(conn):
    # Migration 0009: a 6 KB vector stays inline instead of costing a TOAST lookup per read.
    options = dict(conn.execute(
        "SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)",
        (list(EMBEDDING_TABLES),)).fetchall())
    assert set(options) == set(EMBEDDING_TABLES)
    assert all("toast_tuple_target=8160" in (opts or []) for opts in options.values())
    # A chunk row like the real one (same columns, storage and options) with a 1536-d vector:
    # nothing of it goes to the TOAST table.
    conn.execute("CREATE TEMP TABLE probe (LIKE agent_memory_chunks INCLUDING ALL)"
                 " WITH (toast_tuple_target = 8160)")
    conn.execute("INSERT INTO probe (instance_key, memory_id, chunk_index, content, embedding)"
                 " SELECT 'i', gen_random_uuid(), 0, repeat('Beleg ', 100),"
                 " array_fill(0.5, ARRAY[1536])::vector")
    toast = conn.execute("SELECT reltoastrelid FROM pg_class"
                         " WHERE oid = 'probe'::regclass").fetchone()[0]
    assert conn.execute("SELECT pg_relation_size(%s)", (toast,)).fetchone()[0] == 0
