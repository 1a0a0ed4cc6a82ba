"""The floor of an import for ``bench/scale.py``: a raw binary COPY of the rows a bulk import
wrote into empty copies of its tables, then the same deferred index builds.

The rows are taken from a database the bulk import just filled (``COPY ... TO`` binary, into
a temporary file, not timed), so both sides write exactly the same rows. The copies live in a
schema of their own (``CREATE TABLE ... (LIKE ... INCLUDING ALL)`` minus the indexes the
import swaps out: the HNSW index of the generation and the GIN full-text indexes, which are
built after the COPY with the definitions and build settings the import uses). Stored
generated columns (tsvectors) are computed by the server on both sides; identity values are
copied as they are. No triggers, no foreign keys, no checking, chunking, embedding,
deduplication or ledger replay: what remains is PostgreSQL's own cost of the rows.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import psycopg
from psycopg import sql

from memory_platform.features.memories.bulk.indexes import BULK_INDEX_TABLES, FULLTEXT_INDEXES
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.generations import index_name

RAW_SCHEMA = "bench_raw"
_BLOCK = 1 << 20


def table_rows(conn: psycopg.Connection) -> dict[str, int]:
    """Rows of every table of the public schema (exact counts)."""
    names = [r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
    return {name: conn.execute(sql.SQL("SELECT count(*) FROM {}").format(
        sql.Identifier("public", name))).fetchone()[0] for name in names}


def written_tables(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The tables an import added rows to, with their row counts after it."""
    return {name: rows for name, rows in after.items() if rows > before.get(name, 0)}


def deferred_indexes(generation_key: str) -> set[str]:
    """Names of the indexes the bulk import drops for the load and builds after it."""
    return ({index_name(table, generation_key) for table in BULK_INDEX_TABLES}
            | set(FULLTEXT_INDEXES))


def _copy_columns(conn: psycopg.Connection, table: str) -> list[str]:
    """The columns COPY writes (stored generated columns are computed, not copied)."""
    return [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0"
        " AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        (f"public.{table}",))]


def _index_definitions(conn: psycopg.Connection, table: str, names: set[str]
                       ) -> list[tuple[str, str]]:
    """(name, CREATE INDEX text) of the deferred indexes of ``table``, pointed at the copy."""
    rows = conn.execute(
        "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i"
        "  JOIN pg_class c ON c.oid = i.indexrelid"
        " WHERE i.indrelid = %s::regclass ORDER BY 1", (f"public.{table}",)).fetchall()
    return [(name, definition) for name, definition in rows if name in names]


def retarget(definition: str, table: str, name: str) -> str:
    """``CREATE INDEX name ON public.table ...`` as the same index of the copy."""
    out = definition.replace(f" ON public.{table} ", f" ON {RAW_SCHEMA}.{table} ", 1)
    return out.replace(f"INDEX {name} ON", f"INDEX raw_{name[:50]} ON", 1)


def raw_copy(url: str, settings: Settings, tables: dict[str, int], generation_key: str,
             spool: Path | None = None) -> dict:
    """Spool ``tables`` of the database at ``url`` to binary files, COPY them into empty
    copies (timed: ``load_seconds``) and build the deferred indexes on the copies with the
    import's build settings (timed: ``index_seconds``); drop the copies. Answers the
    timings and what was copied."""
    deferred = deferred_indexes(generation_key)
    with tempfile.TemporaryDirectory(prefix="scale-raw-", dir=spool) as tmp, \
            psycopg.connect(url, autocommit=True) as conn:
        files: dict[str, tuple[Path, list[str]]] = {}
        spooled = 0
        for table in tables:
            columns = _copy_columns(conn, table)
            target = Path(tmp) / f"{table}.bin"
            cols = sql.SQL(", ").join(map(sql.Identifier, columns))
            with target.open("wb") as out, conn.cursor().copy(
                    sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT (FORMAT binary)").format(
                        cols, sql.Identifier("public", table))) as copy:
                for block in copy:
                    out.write(block)
            spooled += target.stat().st_size
            files[table] = (target, columns)
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
            sql.Identifier(RAW_SCHEMA)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(RAW_SCHEMA)))
        builds: list[str] = []
        try:
            for table in tables:
                conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS"
                                     " INCLUDING GENERATED INCLUDING CONSTRAINTS"
                                     " INCLUDING INDEXES INCLUDING STORAGE)").format(
                    sql.Identifier(RAW_SCHEMA, table), sql.Identifier("public", table)))
                definitions = _index_definitions(conn, table, deferred)
                # the copies of the deferred indexes: dropped for the load, built after
                copies = conn.execute(
                    "SELECT c.relname, pg_get_indexdef(c.oid) FROM pg_index i"
                    "  JOIN pg_class c ON c.oid = i.indexrelid"
                    " WHERE i.indrelid = %s::regclass", (f"{RAW_SCHEMA}.{table}",)).fetchall()
                wanted = {d.split(" USING ", 1)[1] for _, d in definitions}
                for name, definition in copies:
                    if definition.split(" USING ", 1)[1] in wanted:
                        conn.execute(sql.SQL("DROP INDEX {}").format(
                            sql.Identifier(RAW_SCHEMA, name)))
                builds += [retarget(d, table, n) for n, d in definitions]
            started = time.perf_counter()
            for table, (path, columns) in files.items():
                cols = sql.SQL(", ").join(map(sql.Identifier, columns))
                with path.open("rb") as src, conn.cursor().copy(
                        sql.SQL("COPY {} ({}) FROM STDIN (FORMAT binary)").format(
                            sql.Identifier(RAW_SCHEMA, table), cols)) as copy:
                    while block := src.read(_BLOCK):
                        copy.write(block)
            load_seconds = time.perf_counter() - started
            started = time.perf_counter()
            with conn.transaction():
                conn.execute("SELECT set_config('maintenance_work_mem', %s, true)",
                             (settings.index_build_maintenance_work_mem,))
                conn.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)",
                             (str(settings.index_build_parallel_workers),))
                for statement in builds:
                    conn.execute(statement.encode())
            index_seconds = time.perf_counter() - started
        finally:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                sql.Identifier(RAW_SCHEMA)))
    return {"load_seconds": round(load_seconds, 2), "index_seconds": round(index_seconds, 2),
            "seconds": round(load_seconds + index_seconds, 2), "tables": tables,
            "spooled_mb": round(spooled / 2**20, 1), "index_builds": builds}
