"""The re-embedding backlog: missing and other-generation vectors are converted to the
instance's target generation, in batches, idempotently, without colliding workers."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.projection.reembed import reembed_backfill, reembed_until_done
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.generations import active_generation
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider
from tests.memories.support import OutageEmbedder, TinyLocalEmbedder

TARGET = HashEmbeddingProvider(16)
TARGET_KEY = "hash:feature-hash-v1:16:v1"
INSTANCE = "acme"
LONG = " ".join(f"Satz {i} über die Belege des Mandanten Nordlicht im Quartal." for i in range(30))


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, data_dir=tmp_path / "state",
                    instance_key=INSTANCE, reembed_batch_size=3,
                    _env_file=None)  # type: ignore[call-arg]


def write(conn, settings, content, *, embedder, fact=False, instance=INSTANCE):
    return store_memory(conn, settings, AccessContext(instance, user_id="anna"), MemoryWrite(
        content, source_type="fact" if fact else "manual", visibility="team",
        trust_class="human_direct"), embedder=embedder)


def chunk_keys(conn, instance=INSTANCE) -> list[str | None]:
    return [r[0] for r in conn.execute(
        "SELECT embedding_key FROM agent_memory_chunks WHERE instance_key = %s ORDER BY id",
        (instance,))]


def test_missing_vectors_get_the_target_generation_with_provenance(conn, settings):
    for i in range(4):
        write(conn, settings, f"Keyword-only note {i}.", embedder=OutageEmbedder())
    write(conn, settings, LONG, embedder=OutageEmbedder())
    assert set(chunk_keys(conn)) == {None}

    result = reembed_backfill(conn, settings, limit=100, embedder=TARGET)

    assert result.chunks_converted == len(chunk_keys(conn)) > 5
    assert (result.remaining_chunks, result.error) == (0, None)
    assert set(chunk_keys(conn)) == {TARGET_KEY}
    generation = active_generation(conn, INSTANCE)
    assert generation.generation_key == TARGET_KEY
    row = conn.execute("SELECT content, embedding, generation_id, metadata->'embedding'"
                       " FROM agent_memory_chunks WHERE instance_key = %s LIMIT 1",
                       (INSTANCE,)).fetchone()
    assert row[1].to_list() == pytest.approx(TARGET.embed_documents([row[0]])[0].tolist())
    assert row[2] == generation.id
    assert row[3] == {"key": TARGET_KEY, "strategy": "hash", "model": "feature-hash-v1"}


def test_vectors_of_another_generation_are_converted(conn, settings):
    write(conn, settings, "Embedded by the old model.", embedder=TinyLocalEmbedder())
    write(conn, settings, "Also by the old model.", embedder=TinyLocalEmbedder())
    assert set(chunk_keys(conn)) == {"local:tiny-test-model:64:v1"}

    result = reembed_backfill(conn, settings, limit=100, embedder=TARGET)

    assert result.chunks_converted == 2 and set(chunk_keys(conn)) == {TARGET_KEY}
    dims = conn.execute("SELECT DISTINCT vector_dims(embedding) FROM agent_memory_chunks"
                        " WHERE instance_key = %s", (INSTANCE,)).fetchall()
    assert dims == [(16,)]


def test_active_assertions_without_a_vector_of_the_target_generation_get_one(conn, settings):
    write(conn, settings, "Anna prefers tea.", embedder=TinyLocalEmbedder(), fact=True)
    write(conn, settings, "Anna starts at nine.", embedder=OutageEmbedder(), fact=True)
    pending = store_memory(conn, settings, AccessContext(INSTANCE), MemoryWrite(
        "Workspace facts wait for review.", visibility="workspace", trust_class="human_direct"),
        embedder=OutageEmbedder())
    assert pending.assertion_status == "candidate"

    result = reembed_backfill(conn, settings, limit=100, embedder=TARGET)

    assert result.assertions_embedded == 2 and result.remaining_assertions == 0
    rows = conn.execute(
        "SELECT a.assertion_text, e.embedding_key FROM agent_memory_assertion_embeddings e"
        " JOIN agent_memory_assertions a ON a.id = e.assertion_id ORDER BY 1, 2").fetchall()
    assert rows == [("Anna prefers tea.", TARGET_KEY),
                    ("Anna prefers tea.", "local:tiny-test-model:64:v1"),
                    ("Anna starts at nine.", TARGET_KEY)]


def test_a_second_run_finds_nothing_to_do(conn, settings):
    write(conn, settings, "Keyword-only fact.", embedder=OutageEmbedder(), fact=True)
    first = reembed_backfill(conn, settings, limit=100, embedder=TARGET)
    before = conn.execute("SELECT id, updated_at FROM agent_memory_chunks ORDER BY id").fetchall()

    second = reembed_backfill(conn, settings, limit=100, embedder=TARGET)

    assert (first.chunks_converted, first.assertions_embedded) == (1, 1)
    assert (second.converted, second.remaining, second.batches) == (0, 0, 0)
    assert conn.execute("SELECT id, updated_at FROM agent_memory_chunks ORDER BY id"
                        ).fetchall() == before


def test_the_limit_bounds_a_run_and_the_rest_is_reported_as_backlog(conn, settings):
    for i in range(7):
        write(conn, settings, f"Backlog note number {i}.", embedder=OutageEmbedder())
    seen = []

    result = reembed_backfill(conn, settings, limit=5, embedder=TARGET,
                              progress=lambda r: seen.append(r.chunks_converted))

    assert (result.chunks_converted, result.remaining_chunks, result.batches) == (5, 2, 2)
    assert seen == [3, 5]  # batches of reembed_batch_size=3, the last one cut to the limit


def test_until_done_repeats_runs_until_the_backlog_is_empty_and_reports_totals(conn,
                                                                               settings):
    for i in range(7):
        write(conn, settings, f"Until-done note number {i}.", embedder=OutageEmbedder())
    write(conn, settings, "Until-done fact.", embedder=OutageEmbedder(), fact=True)
    seen = []

    result = reembed_until_done(conn, settings, limit=3, embedder=TARGET,
                                progress=lambda r: seen.append((r.assertions_embedded,
                                                                r.chunks_converted)))

    assert (result.assertions_embedded, result.chunks_converted) == (1, 8)
    assert (result.remaining, result.batches, result.error) == (0, 4, None)
    assert (result.instance_key, result.generation_key) == (INSTANCE, TARGET_KEY)
    assert seen == [(1, 0), (1, 2), (1, 5), (1, 8)]  # running totals over runs of 3 rows
    assert set(chunk_keys(conn)) == {TARGET_KEY}


def test_until_done_stops_at_a_provider_failure_with_the_totals_so_far(conn, settings):
    for i in range(5):
        write(conn, settings, f"Flaky provider note {i}.", embedder=OutageEmbedder())
    calls = []

    class FailsOnThirdBatch(HashEmbeddingProvider):
        def embed_documents(self, texts):
            calls.append(len(texts))
            if len(calls) == 3:
                raise OutageEmbedder().embed_documents(texts)
            return super().embed_documents(texts)

    result = reembed_until_done(conn, settings, limit=2, embedder=FailsOnThirdBatch(16))

    assert "HTTP 503" in result.error
    assert (result.chunks_converted, result.remaining_chunks) == (4, 1)


def test_the_default_run_limit_comes_from_the_settings(conn, settings):
    for i in range(4):
        write(conn, settings, f"Default limit note {i}.", embedder=OutageEmbedder())
    limited = settings.model_copy(update={"reembed_run_limit": 2})

    result = reembed_backfill(conn, limited, embedder=TARGET)

    assert (result.chunks_converted, result.remaining_chunks) == (2, 2)


def test_a_provider_failure_leaves_the_rows_untouched_and_reports_it(conn, settings):
    write(conn, settings, "Old-model note.", embedder=TinyLocalEmbedder())
    write(conn, settings, "Keyword-only note.", embedder=OutageEmbedder())
    before = conn.execute("SELECT id, embedding_key, embedding, metadata, updated_at"
                          " FROM agent_memory_chunks ORDER BY id").fetchall()

    class FailsOnChunks(HashEmbeddingProvider):
        def embed_documents(self, texts):
            raise OutageEmbedder().embed_documents(texts)

    result = reembed_backfill(conn, settings, limit=100, embedder=FailsOnChunks(16))

    assert "HTTP 503" in result.error
    assert (result.converted, result.remaining_chunks) == (0, 2)
    assert conn.execute("SELECT id, embedding_key, embedding, metadata, updated_at"
                        " FROM agent_memory_chunks ORDER BY id").fetchall() == before


def test_rows_another_worker_holds_are_skipped_not_waited_for(conn, settings, database_url):
    for i in range(6):
        write(conn, settings, f"Shared backlog note {i}.", embedder=OutageEmbedder())
    ids = [r[0] for r in conn.execute("SELECT id FROM agent_memory_chunks ORDER BY id")]
    with psycopg.connect(database_url) as other:  # a second worker, mid-batch
        other.execute("SELECT id FROM agent_memory_chunks WHERE id = ANY(%s) FOR UPDATE",
                      (ids[:2],))
        conn.execute("SET lock_timeout = '2s'")  # a collision would fail, not hang
        result = reembed_backfill(conn, settings, limit=100, embedder=TARGET)
        assert (result.chunks_converted, result.remaining_chunks) == (4, 2)
        other.rollback()
    conn.execute("RESET lock_timeout")
    assert reembed_backfill(conn, settings, limit=100, embedder=TARGET).chunks_converted == 2
    assert set(chunk_keys(conn)) == {TARGET_KEY}


def test_concurrent_workers_split_the_backlog_without_converting_a_row_twice(
        conn, settings, database_url):
    for i in range(30):
        write(conn, settings, f"Parallel backlog note {i}.", embedder=OutageEmbedder())
    calls: list[int] = []

    class Counting(HashEmbeddingProvider):
        def embed_documents(self, texts):
            calls.append(len(texts))
            return super().embed_documents(texts)

    results = []

    def worker() -> None:
        with psycopg.connect(database_url, autocommit=True) as own:
            register_vector(own)
            results.append(reembed_backfill(own, settings, limit=100, embedder=Counting(16)))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(r.chunks_converted for r in results) == 30 == sum(calls)
    assert set(chunk_keys(conn)) == {TARGET_KEY}


def test_cli_reembed_until_done_works_off_the_whole_backlog(conn, settings, database_url,
                                                            monkeypatch):
    for i in range(5):
        write(conn, settings, f"CLI backlog note {i}.", embedder=OutageEmbedder())
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "16")
    monkeypatch.setenv("MEMORY_INSTANCE_KEY", INSTANCE)
    from memory_platform.cli import main
    from memory_platform.foundation.settings import get_settings

    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(main, ["embeddings", "reembed", "--limit", "2",
                                           "--until-done", "--provider", "hash"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "5 chunks and 0 assertions embedded with hash:feature-hash-v1:16:v1" in result.stdout
    assert "backlog ~0 chunks" in result.stdout
    assert set(chunk_keys(conn)) == {TARGET_KEY}


def test_f14_only_the_given_instance_is_converted(conn, settings):
    """F14: a run acts on the instance it is given; another instance's rows, generation and
    backlog stay exactly as they were."""
    write(conn, settings, "Acme keyword-only note.", embedder=OutageEmbedder())
    write(conn, settings, "Default keyword-only note.", embedder=OutageEmbedder(),
          instance="default")
    before = conn.execute("SELECT id, embedding_key, metadata, updated_at"
                          " FROM agent_memory_chunks WHERE instance_key = 'default'").fetchall()

    result = reembed_backfill(conn, settings, limit=100, embedder=TARGET, instance_key=INSTANCE)

    assert (result.instance_key, result.chunks_converted) == (INSTANCE, 1)
    assert chunk_keys(conn) == [TARGET_KEY]
    assert conn.execute("SELECT id, embedding_key, metadata, updated_at"
                        " FROM agent_memory_chunks WHERE instance_key = 'default'"
                        ).fetchall() == before
    assert active_generation(conn, "default") is None


def test_f14_every_batch_commits_on_its_own_even_on_a_transactional_connection(
        conn, settings, database_url):
    """F14: on a pool-like connection (not autocommit) each batch is committed when
    ``progress`` sees it: another connection already reads its conversions, and no
    transaction is left open after the run."""
    for i in range(7):
        write(conn, settings, f"Batch visibility note {i}.", embedder=OutageEmbedder())
    visible: list[tuple[int, int]] = []

    def seen_elsewhere(result) -> None:
        converted = conn.execute(
            "SELECT count(*) FROM agent_memory_chunks WHERE instance_key = %s"
            " AND embedding_key = %s", (INSTANCE, TARGET_KEY)).fetchone()[0]
        visible.append((result.chunks_converted, converted))

    with psycopg.connect(database_url) as pooled:  # autocommit off, like the API's pool
        result = reembed_backfill(pooled, settings, limit=100, embedder=TARGET,
                                  instance_key=INSTANCE, progress=seen_elsewhere)
        assert pooled.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

    assert result.chunks_converted == 7
    assert visible == [(3, 3), (6, 6), (7, 7)]


def test_f14_a_connection_inside_a_transaction_is_refused(conn, settings, database_url):
    with psycopg.connect(database_url) as pooled:
        pooled.execute("SELECT 1")
        with pytest.raises(RuntimeError, match="outside a transaction"):
            reembed_backfill(pooled, settings, embedder=TARGET, instance_key=INSTANCE)
