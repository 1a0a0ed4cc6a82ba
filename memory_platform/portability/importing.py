"""``import_export``: a memory-platform export file into an instance.

Idempotent: rows keep their exported ids and are inserted ``ON CONFLICT DO NOTHING``; rows
without a stable id (review decisions, history, chunks) are recognised by their natural key.
Importing a file twice adds nothing.

Resumable: batches of ``batch_size`` lines commit with a checkpoint (the file's sha256 and
the last line done) in ``app_settings`` of the target instance; a second run of the same
file continues after it (``restart=True`` reads the file from the start again, adding
nothing that is there).

Consecutive rows of one kind go into one statement (``jsonb_populate_recordset``); when it
fails, its lines are tried one by one, each in a savepoint: a line the database or a guard
refuses (a credential in its text, a reference to a row that was refused) is reported with
its number and the reason, and the import continues.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.db.units import require_idle
from memory_platform.embeddings.base import EmbeddingProvider, key_of
from memory_platform.embeddings.generations import Generation, ensure_generation
from memory_platform.errors import InvalidInput
from memory_platform.portability.format import (
    BY_NAME,
    FOOTER,
    FORMAT,
    HEADER,
    LINK,
    ORDER,
    VERSION,
    Kind,
)
from memory_platform.portability.rewrite import Audience, Rewriter

CHECKPOINT_PREFIX = "import_checkpoint_"
ANALYZED = ("agent_memories", "agent_memory_chunks", "agent_memory_assertions",
            "agent_memory_sources", "agent_knowledge_entities", "agent_knowledge_claims")


@dataclass(frozen=True)
class Rejection:
    line: int
    reason: str


@dataclass
class PortImportStats:
    instance_key: str = ""
    lines: int = 0
    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)   # already there (idempotency)
    links_set: int = 0
    resumed_after: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    vectors_kept: int = 0
    vectors_dropped: int = 0
    complete: bool = False         # the footer was read
    seconds: float = 0.0

    @property
    def total_added(self) -> int:
        return sum(self.added.values())


def file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _columns(conn: psycopg.Connection, table: str) -> dict[str, str]:
    """Columns an insert may name (neither generated nor identity) and their types."""
    rows = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND table_name = %s AND is_generated = 'NEVER' "
        "AND is_identity = 'NO'", (table,)).fetchall()
    return {r[0]: r[1] for r in rows}


class _Statements:
    """The insert of a kind for a set of columns, composed once."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.allowed: dict[str, set[str]] = {}
        self.uuids: dict[str, set[str]] = {}
        self.cache: dict[tuple[str, frozenset[str]], sql.Composed] = {}

    def columns(self, kind: Kind) -> set[str]:
        if kind.table not in self.allowed:
            types = _columns(self.conn, kind.table)
            self.allowed[kind.table] = set(types) - set(kind.skip) - set(kind.links)
            self.uuids[kind.table] = {c for c, t in types.items() if t == "uuid"}
        return self.allowed[kind.table]

    def uuid_columns(self, kind: Kind) -> set[str]:
        self.columns(kind)
        return self.uuids[kind.table]

    def insert(self, kind: Kind, names: frozenset[str]) -> sql.Composed:
        cached = self.cache.get((kind.name, names))
        if cached is not None:
            return cached
        ordered = sorted(names)
        targets = [sql.Identifier(c) for c in ordered]
        values = [sql.SQL("r.{}").format(sql.Identifier(c)) for c in ordered]
        if kind.name == "chunk":   # the chunk writer's context tsvector (memories/chunk_rows)
            targets.append(sql.Identifier("context_tsv"))
            values.append(sql.SQL(
                "coalesce(to_tsvector('english'::regconfig, r.context)"
                " || to_tsvector('german'::regconfig, r.context), ''::tsvector)"))
        statement = sql.SQL(
            "INSERT INTO {table} ({targets}) SELECT {values} "
            "FROM jsonb_populate_recordset(NULL::{table}, %(rows)s) r").format(
            table=sql.Identifier(kind.table), targets=sql.SQL(", ").join(targets),
            values=sql.SQL(", ").join(values))
        if kind.natural_key and kind.name != "chunk":
            match = sql.SQL(" AND ").join(
                sql.SQL("x.{c} IS NOT DISTINCT FROM r.{c}").format(c=sql.Identifier(c))
                for c in ("instance_key", *kind.natural_key))
            statement += sql.SQL(" WHERE NOT EXISTS (SELECT 1 FROM {} x WHERE {})").format(
                sql.Identifier(kind.table), match)
        else:
            statement += sql.SQL(" ON CONFLICT DO NOTHING")
        self.cache[(kind.name, names)] = statement
        return statement


def _read_header(path: str) -> dict[str, Any]:
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        head = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"line 1 is not a JSON header: {exc}") from exc
    if not isinstance(head, dict) or head.get("kind") != HEADER \
            or head.get("format") != FORMAT:
        raise InvalidInput(f"not a {FORMAT} file (line 1 is no header)")
    if not isinstance(head.get("version"), int) or head["version"] > VERSION:
        raise InvalidInput(f"format version {head.get('version')!r} is newer than this "
                           f"release reads ({VERSION})")
    if not head.get("instance_key"):
        raise InvalidInput("the header names no instance_key")
    return head


def _run_key(digest: str, audiences: dict[Audience, Audience] | None) -> str:
    """The checkpoint's name: the file and the audience map (another map is another run)."""
    mapping = sorted((list(k), list(v)) for k, v in (audiences or {}).items())
    return hashlib.sha256(f"{digest}\n{json.dumps(mapping)}".encode()).hexdigest()[:32]


def _checkpoint(conn: psycopg.Connection, instance: str, run: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM app_settings WHERE instance_key = %s AND key = %s",
                       (instance, CHECKPOINT_PREFIX + run)).fetchone()
    return json.loads(row[0]) if row else None


def _save_checkpoint(conn: psycopg.Connection, instance: str, run: str, digest: str, line: int,
                     done: bool) -> None:
    conn.execute(
        "INSERT INTO app_settings (instance_key, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (instance_key, key) DO UPDATE SET value = EXCLUDED.value",
        (instance, CHECKPOINT_PREFIX + run,
         json.dumps({"sha256": digest, "line": line, "done": done})))


def import_export(conn: psycopg.Connection, path: str, *, instance: str | None = None,
                  audiences: dict[Audience, Audience] | None = None,
                  embedder: EmbeddingProvider | None = None, batch_size: int = 1000,
                  restart: bool = False,
                  progress: Callable[[PortImportStats], None] | None = None,
                  stop_after: int | None = None) -> PortImportStats:
    """Import the export at ``path`` into ``instance`` (default: the exported one), moving
    ``audiences`` (``{(kind, key): (kind, key)}``). Vectors are kept when the file's
    generation is ``embedder``'s (the target's active generation is then that one); otherwise
    chunks are stored keyword-only and the caller re-embeds (maintenance/reembedding).
    ``stop_after`` ends after that many lines (tests of resuming). ``conn`` must be idle."""
    require_idle(conn, "import_export")
    started = time.perf_counter()
    head = _read_header(path)
    target = instance or head["instance_key"]
    rewriter = Rewriter(head["instance_key"], target, audiences)
    digest = file_digest(path)
    run = _run_key(digest, audiences)
    stats = PortImportStats(instance_key=target)
    mark = None if restart else _checkpoint(conn, target, run)
    if mark and mark.get("done"):
        stats.resumed_after = mark["line"]
        stats.complete = True
        stats.seconds = time.perf_counter() - started
        return stats
    skip_to = mark["line"] if mark else 0
    stats.resumed_after = skip_to

    generation: Generation | None = None
    file_key = (head.get("embedding") or {}).get("generation_key")
    if embedder is not None and file_key and file_key == key_of(embedder):
        generation = ensure_generation(conn, target, embedder)
    statements = _Statements(conn)
    batcher = _Batch(conn, statements, rewriter, generation, stats)
    with open(path, "rb") as lines:
        numbered = ((n, raw) for n, raw in enumerate(lines, 1)
                    if n > max(1, skip_to) and raw.strip())
        last = skip_to
        while batch := list(islice(numbered, batch_size)):
            with conn.transaction():
                batcher.run(batch)
                last = batch[-1][0]
                stats.lines += len(batch)
                _save_checkpoint(conn, target, run, digest, last, done=False)
            if progress:
                progress(stats)
            if stop_after is not None and stats.lines >= stop_after:
                stats.seconds = time.perf_counter() - started
                return stats
        _save_checkpoint(conn, target, run, digest, last, done=stats.complete)
    for table in ANALYZED:   # fresh statistics: the searches' plans and rarity weights
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    if progress:
        progress(stats)
    stats.seconds = time.perf_counter() - started
    return stats


class _Batch:
    """The lines of one committed batch: consecutive rows of one kind (and column set) go in
    one statement, consecutive links of one column in one update; when a statement fails,
    its lines are tried one by one (each in a savepoint) and the failing ones reported."""

    def __init__(self, conn: psycopg.Connection, statements: _Statements, rewriter: Rewriter,
                 generation: Generation | None, stats: PortImportStats) -> None:
        self.conn = conn
        self.statements = statements
        self.rewriter = rewriter
        self.generation = generation
        self.stats = stats
        self.last_kind = -1
        self.group_key: tuple | None = None
        self.group: list[tuple[int, dict]] = []

    def run(self, lines: list[tuple[int, bytes]]) -> None:
        for line_no, raw in lines:
            self._line(line_no, raw)
        self._flush()

    def _reject(self, line_no: int, reason: str) -> None:
        self.stats.rejected.append(Rejection(line_no, reason))

    def _add(self, key: tuple, line_no: int, item: dict) -> None:
        if key != self.group_key:
            self._flush()
            self.group_key = key
        self.group.append((line_no, item))

    def _line(self, line_no: int, raw: bytes) -> None:
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._reject(line_no, f"malformed JSON: {exc}")
            return
        name = record.get("kind") if isinstance(record, dict) else None
        if name == FOOTER:
            self.stats.complete = True
        elif name == LINK:
            kind = BY_NAME.get(record.get("of", ""))
            column = record.get("column")
            if kind is None or column not in kind.links:
                self._reject(line_no, f"link of unknown column {column!r}")
                return
            self._add((LINK, kind.name, column), line_no,
                      {"id": self.rewriter.id(record.get("id")),
                       "value": self.rewriter.id(record.get("value"))})
        elif name in BY_NAME:
            if ORDER[name] < self.last_kind:
                self._reject(line_no, f"{name} record out of order")
            self.last_kind = max(self.last_kind, ORDER[name])
            prepared = self._prepare(BY_NAME[name], record, line_no)
            if prepared is not None:
                names, row = prepared
                self._add((name, names), line_no, row)
        else:
            self._reject(line_no, f"unknown record kind {name!r}")

    def _prepare(self, kind: Kind, record: dict,
                 line_no: int) -> tuple[frozenset[str], dict] | None:
        row = record.get("row")
        if not isinstance(row, dict):
            self._reject(line_no, f"{kind.name}: no row object")
            return None
        try:
            row = self.rewriter.row(kind, row)
        except InvalidInput as exc:
            self._reject(line_no, str(exc))
            return None
        self.rewriter.ids(row, self.statements.uuid_columns(kind))
        allowed = self.statements.columns(kind)
        if kind.vector:
            generation = self.generation
            if row.get("embedding") is not None:
                if generation is not None and row.get("embedding_key") == generation.generation_key:
                    row["generation_id"] = generation.id
                    self.stats.vectors_kept += 1
                else:
                    self.stats.vectors_dropped += 1
                    if kind.name != "chunk":
                        return None   # an embedding of another model: re-embedded instead
                    row["embedding"] = row["embedding_key"] = None
            if row.get("embedding") is None:
                row["embedding"] = row["embedding_key"] = row["generation_id"] = None
            allowed = allowed | {"generation_id", "embedding", "embedding_key"}
        return frozenset(c for c in row if c in allowed), row

    def _flush(self) -> None:
        key, group = self.group_key, self.group
        self.group_key, self.group = None, []
        if not group or key is None:
            return
        try:
            with self.conn.transaction():
                done = self._execute(key, [item for _, item in group])
            self._count(key, len(group), done)
            return
        except psycopg.Error:
            pass
        for line_no, item in group:         # one by one: find the lines that fail
            try:
                with self.conn.transaction():
                    done = self._execute(key, [item])
                self._count(key, 1, done)
            except psycopg.Error as exc:
                what = f"link {key[1]}.{key[2]}" if key[0] == LINK else key[0]
                self._reject(line_no, f"{what}: {_reason(exc)}")

    def _execute(self, key: tuple, items: list[dict]) -> int:
        if key[0] == LINK:
            kind = BY_NAME[key[1]]
            statement = sql.SQL(
                "UPDATE {t} t SET {c} = v.value FROM jsonb_to_recordset(%(rows)s) "
                "AS v(id uuid, value uuid) WHERE t.instance_key = %(instance)s "
                "AND t.id = v.id AND t.{c} IS NULL").format(
                t=sql.Identifier(kind.table), c=sql.Identifier(key[2]))
            cur = self.conn.execute(statement, {"rows": Jsonb(items),
                                                "instance": self.rewriter.target})
            return cur.rowcount
        statement = self.statements.insert(BY_NAME[key[0]], key[1])
        return self.conn.execute(statement, {"rows": Jsonb(items)}).rowcount

    def _count(self, key: tuple, lines: int, done: int) -> None:
        if key[0] == LINK:
            self.stats.links_set += done
            return
        name = key[0]
        if done:
            self.stats.added[name] = self.stats.added.get(name, 0) + done
        if lines - done:
            self.stats.present[name] = self.stats.present.get(name, 0) + lines - done


def _reason(exc: psycopg.Error) -> str:
    diag = getattr(exc, "diag", None)
    text = (diag.message_primary if diag and diag.message_primary else str(exc)).strip()
    return text.splitlines()[0][:300]
