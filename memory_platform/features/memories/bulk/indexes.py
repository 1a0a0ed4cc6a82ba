"""The indexes around a large import: HNSW and GIN swapped out for the load, built once after.

Maintaining an HNSW graph or a GIN index row by row costs a load far more than one bulk build
at the end (docs/benchmarks.md). For an import that is large relative to what the indexes
already hold (:func:`indexes_to_rebuild`, :func:`fulltext_to_rebuild`), the import swaps them
out with the functions here and builds them at the end. Advisory locks keep two imports from
swapping the same index; an import killed half-way leaves placeholders (HNSW) or missing
indexes (GIN): :func:`broken_indexes` finds them (the operator status report shows them) and
:func:`repair_indexes` (``memory-platform db repair-indexes``), or the next import, rebuilds
them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from typing import TypeVar

import psycopg
from psycopg import sql

from memory_platform.foundation.db.units import commit_if_idle, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.generations import ensure_vector_indexes, index_name

log = logging.getLogger(__name__)

_Item = TypeVar("_Item")

_PLACEHOLDER_LOCK = "memory-import-index:"
# Dropping an index waits for an exclusive lock on its table; a long reader must not stall
# every other query behind the import's DROP: after this wait the import keeps the index.
_DROP_LOCK_TIMEOUT = "3s"


# --- the HNSW indexes around a large load ----------------------------------------------------

# The embedding tables an import writes, and the column its placeholder index names.
BULK_INDEX_TABLES = {"agent_memory_chunks": "id",
                     "agent_memory_assertion_embeddings": "assertion_id"}


def _lock_name(key: str) -> str:
    return _PLACEHOLDER_LOCK + key


def try_index_lock(conn: psycopg.Connection, key: str) -> bool:
    return bool(conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                             (_lock_name(key),)).fetchone()[0])


def index_unlock(conn: psycopg.Connection, key: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (_lock_name(key),))


def index_state(conn: psycopg.Connection, table: str, key: str) -> str:
    """'hnsw', 'placeholder' or 'missing': the vector index of ``table`` for ``key``."""
    row = conn.execute(
        "SELECT am.amname FROM pg_class i JOIN pg_am am ON am.oid = i.relam"
        " WHERE i.oid = to_regclass(quote_ident(%s))",
        (index_name(table, key),),
    ).fetchone()
    if row is None:
        return "missing"
    return "hnsw" if row[0] == "hnsw" else "placeholder"


def _key_registered(conn: psycopg.Connection, key: str) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM agent_memory_embedding_generations"
                        " WHERE generation_key = %s)", (key,)).fetchone()[0]


def install_placeholders(conn: psycopg.Connection, key: str, tables: Iterable[str]) -> bool:
    """Swap the HNSW indexes of ``key`` on ``tables`` for empty indexes of the same names:
    inserts skip them (their predicate is false), and ``CREATE INDEX IF NOT EXISTS`` of a
    concurrent generation registration sees the names and does not build them half-way
    through the load. Hold the key's import lock (:func:`try_index_lock`) meanwhile. A table
    that stays busy longer than a few seconds keeps every index (answers False) instead of
    queueing every other query behind the drop."""
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('lock_timeout', %s, true)", (_DROP_LOCK_TIMEOUT,))
            for table in tables:
                name = sql.Identifier(index_name(table, key))
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(name))
                conn.execute(sql.SQL("CREATE INDEX {} ON {} ({}) WHERE false").format(
                    name, sql.Identifier(table), sql.Identifier(BULK_INDEX_TABLES[table])))
    except psycopg.errors.LockNotAvailable:
        log.warning("kept the HNSW indexes of %s: their tables are busy", key)
        return False
    return True


def build_vector_indexes(conn: psycopg.Connection, settings: Settings, key: str,
                         dimensions: int) -> float:
    """Build the HNSW indexes of ``key`` that are missing or placeholders, with the bulk build
    settings (maintenance memory, parallel workers); answers the seconds it took."""
    started = time.perf_counter()
    with conn.transaction():
        conn.execute("SELECT set_config('maintenance_work_mem', %s, true)",
                     (settings.index_build_maintenance_work_mem,))
        conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                     (str(settings.index_build_parallel_workers),))
        for table in BULK_INDEX_TABLES:
            if index_state(conn, table, key) == "placeholder":
                conn.execute(sql.SQL("DROP INDEX {}").format(
                    sql.Identifier(index_name(table, key))))
        ensure_vector_indexes(conn, key, dimensions)
    return time.perf_counter() - started


def repair_vector_index(conn: psycopg.Connection, settings: Settings, key: str,
                        dimensions: int) -> bool:
    """Rebuild the vector indexes of ``key`` that an interrupted import left missing or as
    placeholders (unless an import is loading that key right now). Answers whether it did."""
    def broken() -> bool:
        return any(index_state(conn, table, key) != "hnsw" for table in BULK_INDEX_TABLES)

    if not _key_registered(conn, key) or not broken():
        return False
    if not try_index_lock(conn, key):
        return False  # an import is loading this key; it builds the indexes when done
    try:
        if not broken():
            return False
        log.warning("rebuilding the HNSW indexes of %s left behind by an interrupted import",
                    key)
        build_vector_indexes(conn, settings, key, dimensions)
        return True
    finally:
        index_unlock(conn, key)


def rows_in_index(conn: psycopg.Connection, table: str, key: str, cap: int) -> int:
    """Rows of ``table`` with generation key ``key`` (all instances share its index),
    counted up to ``cap``."""
    return conn.execute(
        sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} WHERE embedding_key = %s LIMIT %s) s")
        .format(sql.Identifier(table)), (key, cap),
    ).fetchone()[0]


def rows_in_table(conn: psycopg.Connection, table: str, cap: int) -> int:
    return conn.execute(
        sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} LIMIT %s) s")
        .format(sql.Identifier(table)), (cap,),
    ).fetchone()[0]


# --- the GIN full-text indexes around a large load -------------------------------------------

# Their definitions as in migrations 0003/0004: an import that dropped them (and was killed
# before it rebuilt them) must be able to put them back without the migration's text.
FULLTEXT_INDEXES = {
    "agent_memory_chunks_tsv_idx": ("agent_memory_chunks", "content_tsv"),
    "agent_memory_assertions_tsv_idx": ("agent_memory_assertions", "assertion_tsv"),
}
FULLTEXT_LOCK = "fulltext"  # the lock "memory-import-index:fulltext"


def _fulltext_statement(name: str) -> sql.Composed:
    table, column = FULLTEXT_INDEXES[name]
    return sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING gin ({})").format(
        sql.Identifier(name), sql.Identifier(table), sql.Identifier(column))


def fulltext_index_exists(conn: psycopg.Connection, name: str) -> bool:
    return conn.execute("SELECT to_regclass(quote_ident(%s)) IS NOT NULL",
                        (name,)).fetchone()[0]


def drop_fulltext_indexes(conn: psycopg.Connection, names: Iterable[str]) -> list[str]:
    """Drop the GIN full-text indexes ``names`` for a bulk load (hold the full-text import
    lock meanwhile); answers the ones dropped. Keyword search keeps every match while they
    are gone (``@@`` scans the table instead), only slower. A drop that cannot get its
    table's lock within a few seconds keeps that index."""
    dropped = []
    for name in names:
        try:
            with conn.transaction():
                conn.execute("SELECT set_config('lock_timeout', %s, true)",
                             (_DROP_LOCK_TIMEOUT,))
                conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
            dropped.append(name)
        except psycopg.errors.LockNotAvailable:
            log.warning("kept %s: its table is busy", name)
    return dropped


def build_fulltext_indexes(conn: psycopg.Connection, settings: Settings) -> float:
    """Create the GIN full-text indexes that are missing, with the bulk build settings;
    answers the seconds it took. Writers of a table wait while its index builds."""
    started = time.perf_counter()
    for name in FULLTEXT_INDEXES:
        if fulltext_index_exists(conn, name):
            continue
        with conn.transaction():
            conn.execute("SELECT set_config('maintenance_work_mem', %s, true)",
                         (settings.index_build_maintenance_work_mem,))
            conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                         (str(settings.index_build_parallel_workers),))
            conn.execute(_fulltext_statement(name))
    return time.perf_counter() - started


def repair_fulltext_indexes(conn: psycopg.Connection, settings: Settings) -> bool:
    """Rebuild the GIN full-text indexes an interrupted import left dropped (unless an
    import is loading without them right now). Answers whether it did."""
    def missing() -> bool:
        return not all(fulltext_index_exists(conn, name) for name in FULLTEXT_INDEXES)

    if not missing() or not try_index_lock(conn, FULLTEXT_LOCK):
        return False
    try:
        if not missing():
            return False
        log.warning("rebuilding the full-text indexes left behind by an interrupted import")
        build_fulltext_indexes(conn, settings)
        return True
    finally:
        index_unlock(conn, FULLTEXT_LOCK)


# --- what an interrupted import left behind --------------------------------------------------


def _generation_keys(conn: psycopg.Connection, instance_key: str | None = None
                     ) -> list[tuple[str, int]]:
    """(generation key, dimensions) of the registered generations (of one instance)."""
    return [(key, dims) for key, dims in conn.execute(
        "SELECT DISTINCT generation_key, dimensions FROM agent_memory_embedding_generations"
        " WHERE %(instance)s::text IS NULL OR instance_key = %(instance)s ORDER BY 1",
        {"instance": instance_key})]


def broken_indexes(conn: psycopg.Connection, instance_key: str | None = None
                   ) -> list[dict[str, str | None]]:
    """The search indexes an interrupted import left broken: vector (HNSW) indexes of the
    registered generation keys (of ``instance_key``'s generations, or all) that are empty
    placeholders or missing, and missing GIN full-text indexes. Search still answers without
    them, only by scanning. An import running right now shows here too until it finishes."""
    broken: list[dict[str, str | None]] = []
    for key, _ in _generation_keys(conn, instance_key):
        for table in BULK_INDEX_TABLES:
            state = index_state(conn, table, key)
            if state != "hnsw":
                broken.append({"index": index_name(table, key), "table": table,
                               "kind": "hnsw", "state": state, "generationKey": key})
    for name, (table, _) in FULLTEXT_INDEXES.items():
        if not fulltext_index_exists(conn, name):
            broken.append({"index": name, "table": table, "kind": "fulltext",
                           "state": "missing", "generationKey": None})
    return broken


def repair_indexes(conn: psycopg.Connection, settings: Settings) -> list[str]:
    """Rebuild every search index :func:`broken_indexes` reports, for every registered
    generation key, except those an import is loading right now (it builds them when done).
    Answers the names of the indexes that were broken and are sound now. Needs a connection
    outside a transaction: each rebuild commits on its own."""
    require_idle(conn, "repair_indexes")
    before = {b["index"] for b in broken_indexes(conn)}
    commit_if_idle(conn)
    for key, dimensions in _generation_keys(conn):
        commit_if_idle(conn)
        repair_vector_index(conn, settings, key, dimensions)
        commit_if_idle(conn)
    repair_fulltext_indexes(conn, settings)
    after = {b["index"] for b in broken_indexes(conn)}
    commit_if_idle(conn)
    return sorted(before - after)


# --- planning: which indexes an import swaps out ---------------------------------------------

# Auto mode looks ahead at most this many rows to learn an import's size when it is not
# given; a longer stream of unknown size keeps the index (slower, never wrong).
LOOKAHEAD_MAX_ROWS = 100_000


def import_size(conn: psycopg.Connection, settings: Settings, key: str,
                items: Iterator[_Item], known: int | None,
                ) -> tuple[int | None, Iterator[_Item]]:
    """The import's size when it matters for auto mode: given, or learnt by a bounded
    look-ahead (None: larger than anything the look-ahead would rebuild for). Answers the
    items too, the looked-ahead ones first."""
    if known is not None:
        return known, items
    threshold = settings.import_rebuild_index_min_rows
    existing = rows_in_index(conn, "agent_memory_chunks", key, LOOKAHEAD_MAX_ROWS + 1)
    bound = max(threshold, existing) + 1
    if bound > LOOKAHEAD_MAX_ROWS:
        return None, items
    head = list(islice(items, bound))
    return len(head), chain(head, items)


def indexes_to_rebuild(conn: psycopg.Connection, settings: Settings, key: str,
                       known: int | None) -> list[str]:
    """Auto mode: rebuild an index of the key when the import has more than
    ``import_rebuild_index_min_rows`` rows and more than the index already holds (the
    chunk index decides; the assertion-vector index follows it by the same test)."""
    if known is None or known <= settings.import_rebuild_index_min_rows:
        return []
    tables = []
    for table in BULK_INDEX_TABLES:
        if known > rows_in_index(conn, table, key, known + 1):
            tables.append(table)
        elif table == "agent_memory_chunks":
            return []
    return tables


def fulltext_to_rebuild(conn: psycopg.Connection, settings: Settings, known: int | None,
                        forced: bool | None) -> list[str]:
    """The full-text indexes to drop for the load: with the HNSW swap (forced or auto),
    each whose table holds fewer rows than the import brings."""
    if not settings.import_rebuild_fulltext or forced is False:
        return []
    if forced:
        return list(FULLTEXT_INDEXES)
    if known is None:
        return []
    return [name for name, (table, _) in FULLTEXT_INDEXES.items()
            if known > rows_in_table(conn, table, known + 1)]
