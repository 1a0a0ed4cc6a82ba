"""``import_memories``: the entry of a bulk import. It plans the index swap, opens the loaders,
runs the load (:mod:`.pipeline`) and builds the swapped-out indexes once at the end."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from itertools import chain, islice
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from memory_platform.features.memories.bulk.indexes import (
    BULK_INDEX_TABLES,
    FULLTEXT_LOCK,
    build_fulltext_indexes,
    build_vector_indexes,
    drop_fulltext_indexes,
    fulltext_to_rebuild,
    import_size,
    index_unlock,
    indexes_to_rebuild,
    install_placeholders,
    repair_fulltext_indexes,
    repair_vector_index,
    try_index_lock,
)
from memory_platform.features.memories.bulk.pipeline import (
    PROCESS_MIN_BATCHES,
    open_loaders,
    prepare_processes,
    run,
)
from memory_platform.features.memories.bulk.reader import MalformedLine, NumberedRow, numbered
from memory_platform.features.memories.bulk.results import ImportStats
from memory_platform.features.memories.bulk.statements import TEMP_TABLES
from memory_platform.features.memories.bulk.turns import link_imported_turns
from memory_platform.features.memories.bulk.writer import Importer
from memory_platform.foundation.db.units import commit_if_idle, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider, key_of
from memory_platform.shared.embeddings.factory import get_provider


def import_memories(
    conn: psycopg.Connection,
    settings: Settings,
    ctx_for_row: Callable[[Mapping[str, Any]], AccessContext],
    rows: Iterable[Any],
    *,
    embedder: EmbeddingProvider | None = None,
    batch_size: int | None = None,
    progress: Callable[[ImportStats], None] | None = None,
    rebuild_index: bool | None = None,
    expected_rows: int | None = None,
    loaders: int | None = None,
) -> ImportStats:
    """Import ``rows`` (dicts in the JSONL row format, or :func:`read_jsonl` items that
    carry their line numbers); every batch commits on its own. ``conn`` must be idle.

    ``ctx_for_row`` builds a row's access context from its fields (see
    :func:`context_from_row`). ``rebuild_index``: True/False force the HNSW (and GIN
    full-text) drop-and-rebuild or forbid it; None decides from the import's size
    (``expected_rows``, ``len(rows)``, or a bounded look-ahead) against the rows the indexes
    already hold. ``loaders`` (default ``import_loaders``): connections writing
    concurrently; each writes its share of a batch (the rows whose dedup key hashes to it)
    in its own transaction."""
    require_idle(conn, "import_memories")
    started = time.perf_counter()
    began = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    commit_if_idle(conn)  # the clock read opened no transaction to keep
    provider = embedder or get_provider(settings)
    size = batch_size or settings.import_batch_size
    stats = ImportStats()
    key = key_of(provider)
    stats.generation_key = key
    items: Iterator[NumberedRow | MalformedLine] = numbered(rows)
    if expected_rows is None and isinstance(rows, Sized):
        expected_rows = len(rows)
    repair_vector_index(conn, settings, key, provider.dimensions)
    repair_fulltext_indexes(conn, settings)
    tables: list[str] = []
    known = expected_rows
    if rebuild_index is None:
        known, items = import_size(conn, settings, key, items, expected_rows)
        tables = indexes_to_rebuild(conn, settings, key, known)
    elif rebuild_index:
        tables = list(BULK_INDEX_TABLES)
    holding = holding_fulltext = False
    fulltext: list[str] = []
    if tables:
        holding = try_index_lock(conn, key)
        if holding:
            t0 = time.perf_counter()
            install_placeholders(conn, key, tables)
            stats.index_seconds += time.perf_counter() - t0
        else:
            stats.index_note = "another import is loading this generation; indexes kept"
        fulltext = fulltext_to_rebuild(conn, settings, known, rebuild_index)
        if fulltext:
            holding_fulltext = try_index_lock(conn, FULLTEXT_LOCK)
            if holding_fulltext:
                t0 = time.perf_counter()
                drop_fulltext_indexes(conn, fulltext)
                stats.fulltext_seconds += time.perf_counter() - t0
                stats.index_seconds += time.perf_counter() - t0
    with conn.transaction():
        conn.execute(TEMP_TABLES)
    importer = Importer(conn, settings, provider, ctx_for_row, stats)
    if known is None:  # a stream: a short one needs no loaders and no worker process
        head = list(islice(items, PROCESS_MIN_BATCHES * size))
        items = chain(head, items)
        if len(head) < PROCESS_MIN_BATCHES * size:
            known = len(head)
    count = loaders or settings.import_loaders
    if known is not None and known <= size:
        count = 1  # one batch: nothing to overlap
    try:
        with open_loaders(conn, count) as connections:
            run(importer, connections, items, size, progress,
                prepare_processes(settings, provider, known, size))
    finally:
        stats.load_seconds = time.perf_counter() - started - stats.index_seconds
        idle = not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE
        try:
            if holding_fulltext and idle:
                gin = build_fulltext_indexes(conn, settings)
                stats.fulltext_seconds += gin
                stats.index_seconds += gin
                stats.fulltext_rebuilt = True
            if holding and idle:
                stats.index_seconds += build_vector_indexes(conn, settings, key,
                                                            provider.dimensions)
                stats.index_rebuilt = True
        finally:
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                if holding_fulltext:
                    index_unlock(conn, FULLTEXT_LOCK)
                if holding:
                    index_unlock(conn, key)
        stats.seconds = time.perf_counter() - started
    linking = time.perf_counter()
    stats.turns_linked = link_imported_turns(conn, settings, provider, began)
    stats.seconds += time.perf_counter() - linking
    return stats
