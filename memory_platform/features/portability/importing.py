"""``import_export``: a memory-platform export file into an instance, all or nothing.

Two passes. The first (portability/verify.py) reads the whole file and writes nothing: line
bounds, header, footer, the footer's SHA-256 and counts, the header's audience. A cut,
truncated, altered or crafted file fails there with its line number. The second pass writes
every row in **one transaction**: nothing is visible until the commit, and any failure (a
line the database or a write's guard refuses, unless ``skip_rejected``; the file changing
under the import; anything unexpected) rolls all of it back.

What a file may write is narrowed by portability/gate.py (sessions and channel memberships
only for what the file brings and the target does not use; approvals re-gated unless the
caller trusts the file's states) and by the rule that a row attaching to another (a chunk to
its memory, evidence to its assertion, a review, a link) is written only when this import
added that row: a file never attaches anything to rows the target already holds.

Idempotent: rows keep their exported ids and are inserted ``ON CONFLICT DO NOTHING``; rows
without a stable id (review decisions, history, chunks) are recognised by their natural key.
Importing a file twice adds nothing.

Consecutive rows of one kind go into one statement (``jsonb_populate_recordset``); when it
fails, its lines are tried one by one, each in a savepoint, to name the lines that fail.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.portability.format import (
    ADDED_KINDS,
    BY_NAME,
    FOOTER,
    LINK,
    LINK_TARGETS,
    MAX_LINE_BYTES,
    Kind,
)
from memory_platform.features.portability.gate import Gate, open_gate
from memory_platform.features.portability.rewrite import Audience, Rewriter
from memory_platform.features.portability.verify import (
    DamagedFile,
    parse_line,
    read_lines,
    verify_file,
)
from memory_platform.foundation.db.units import require_idle
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.embeddings.base import EmbeddingProvider, key_of
from memory_platform.shared.embeddings.generations import Generation, ensure_generation

ANALYZED = ("agent_memories", "agent_memory_chunks", "agent_memory_assertions",
            "agent_memory_sources", "agent_knowledge_entities", "agent_knowledge_claims")
UNATTACHED = ("rows attached to a row the target already held (or to one outside the "
              "file)")


@dataclass(frozen=True)
class Rejection:
    line: int
    reason: str


@dataclass
class PortImportStats:
    instance_key: str = ""
    lines: int = 0
    verified: bool = False         # the file's checksum was checked (not --no-verify)
    committed: bool = False
    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)   # already there (idempotency)
    refused: dict[str, int] = field(default_factory=dict)   # why -> rows the gate kept out
    links_set: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    vectors_kept: int = 0
    vectors_dropped: int = 0
    seconds: float = 0.0

    @property
    def total_added(self) -> int:
        return sum(self.added.values())


class ImportRejected(InvalidInput):
    """Lines were refused by the database or a write's guard: the import was rolled back."""

    code = "import_rejected"

    def __init__(self, stats: PortImportStats) -> None:
        count = len(stats.rejected)
        super().__init__(f"{count:,} line{'s were' if count != 1 else ' was'} refused: "
                         "nothing was imported (--skip-rejected imports the rest)")
        self.stats = stats


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
        if kind.name in ADDED_KINDS:
            statement += sql.SQL(" RETURNING id::text")
        self.cache[(kind.name, names)] = statement
        return statement


def import_export(conn: psycopg.Connection, path: str, *, instance: str,
                  audiences: dict[Audience, Audience] | None = None,
                  embedder: EmbeddingProvider | None = None, batch_size: int = 1000,
                  verify: bool = True, skip_rejected: bool = False,
                  allow_existing_memberships: bool = False, trust_file_states: bool = False,
                  max_line_bytes: int = MAX_LINE_BYTES,
                  progress: Callable[[PortImportStats], None] | None = None
                  ) -> PortImportStats:
    """Import the export at ``path`` into ``instance`` (the caller's choice, never the
    file's), moving ``audiences`` (``{(kind, key): (kind, key)}``), in one transaction.

    DamagedFile when the file is not whole (before anything is written); ImportRejected
    (its ``stats`` name the lines) when lines were refused and not ``skip_rejected``; both
    leave the target as it was. ``verify=False`` imports a file without a checksum.
    ``allow_existing_memberships`` and ``trust_file_states``: portability/gate.py. Vectors
    are kept when the file's generation is ``embedder``'s; otherwise chunks are stored
    keyword-only and the caller re-embeds (maintenance/reembedding). ``conn`` must be
    idle."""
    require_idle(conn, "import_export")
    if not instance:
        raise InvalidInput("name the target instance: an import never takes it from the file")
    started = time.perf_counter()
    summary = verify_file(path, verify=verify, max_line_bytes=max_line_bytes)
    head = summary.header
    rewriter = Rewriter(head["instance_key"], instance, audiences)
    stats = PortImportStats(instance_key=instance, verified=summary.verified)
    try:
        with conn.transaction():
            # Every check at its statement, inside its savepoint (a deferred foreign key
            # would otherwise fail the commit, not the line).
            conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
            gate = open_gate(conn, instance, summary, rewriter,
                             allow_existing=allow_existing_memberships,
                             trust_states=trust_file_states)
            generation: Generation | None = None
            file_key = (head.get("embedding") or {}).get("generation_key")
            if embedder is not None and file_key and file_key == key_of(embedder):
                generation = ensure_generation(conn, instance, embedder)
            batcher = _Batch(conn, _Statements(conn), rewriter, gate, generation, stats)
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                numbered = read_lines(handle, max_line_bytes)
                while batch := list(islice(numbered, batch_size)):
                    for number, raw in batch:
                        if number > summary.lines:
                            raise DamagedFile("the file changed while it was imported: "
                                              "nothing was imported")
                        if number < summary.lines:
                            digest.update(raw)
                    batcher.run([(n, raw) for n, raw in batch if n > 1 and raw.strip()])
                    stats.lines += len(batch)
                    if progress:
                        progress(stats)
            if digest.hexdigest() != summary.sha256:
                raise DamagedFile("the file changed while it was imported: nothing was "
                                  "imported")
            if stats.rejected and not skip_rejected:
                raise ImportRejected(stats)
    except psycopg.Error as exc:
        raise DamagedFile(f"the database refused the import ({_reason(exc)}): nothing was "
                          "imported") from exc
    stats.committed = True
    for table in ANALYZED:   # fresh statistics: the searches' plans and rarity weights
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    if progress:
        progress(stats)
    stats.seconds = time.perf_counter() - started
    return stats


class _Batch:
    """The rows of the file, in order: consecutive rows of one kind (and column set) go in
    one statement, consecutive links of one column in one update; when a statement fails,
    its lines are tried one by one (each in a savepoint) and the failing ones reported.
    The file was verified before (verify.py), so every line parses and kinds come in order.
    """

    def __init__(self, conn: psycopg.Connection, statements: _Statements, rewriter: Rewriter,
                 gate: Gate, generation: Generation | None, stats: PortImportStats) -> None:
        self.conn = conn
        self.statements = statements
        self.rewriter = rewriter
        self.gate = gate
        self.generation = generation
        self.stats = stats
        # ids of the file's rows this import added, and of those the target already had
        self.added: dict[str, set[str]] = {name: set() for name in ADDED_KINDS}
        self.present_ids: dict[str, set[str]] = {name: set() for name in ADDED_KINDS}
        self.group_key: tuple | None = None
        self.group: list[tuple[int, dict]] = []

    def run(self, lines: list[tuple[int, bytes]]) -> None:
        for line_no, raw in lines:
            self._line(line_no, raw)
        self._flush()

    def _reject(self, line_no: int, reason: str) -> None:
        self.stats.rejected.append(Rejection(line_no, reason))

    def _refuse(self, reason: str) -> None:
        self.stats.refused[reason] = self.stats.refused.get(reason, 0) + 1

    def _add(self, key: tuple, line_no: int, item: dict) -> None:
        if key != self.group_key:
            self._flush()
            self.group_key = key
        self.group.append((line_no, item))

    def _line(self, line_no: int, raw: bytes) -> None:
        record = parse_line(line_no, raw, None)   # its depth was checked by the first pass
        name = record["kind"]
        if name == FOOTER:
            return
        if name == LINK:
            self._add((LINK, record["of"], record["column"]), line_no,
                      {"id": self.rewriter.id(record.get("id")),
                       "value": self.rewriter.id(record.get("value"))})
            return
        prepared = self._prepare(BY_NAME[name], record["row"], line_no)
        if prepared is not None:
            names, row = prepared
            self._add((name, names), line_no, row)

    def _prepare(self, kind: Kind, row: dict,
                 line_no: int) -> tuple[frozenset[str], dict] | None:
        try:
            row = self.rewriter.row(kind, row)
        except InvalidInput as exc:
            self._reject(line_no, str(exc))
            return None
        refusal = self.gate.refusal(kind, row)
        if refusal is not None:
            self._refuse(refusal)
            return None
        self.gate.regate(kind, row)
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

    def _attached(self, key: tuple, line_no: int, item: dict) -> bool:
        """Whether every row ``item`` attaches to was added by this import. A row attaching
        to one the file holds but the target already had is refused (counted); to one the
        file does not hold at all (damage, or a crafted reference into the target) it is
        rejected, except a link's target (an audience export may link outside itself)."""
        if key[0] == LINK:
            named = ((item["id"], key[1], True), (item["value"], LINK_TARGETS[key[2]], False))
        else:
            named = tuple((item.get(column), kind, True)
                          for column, kind in BY_NAME[key[0]].refs
                          if item.get(column) is not None)
        for value, kind, required in named:
            value = value.lower() if isinstance(value, str) else value
            if value in self.added[kind]:
                continue
            if value in self.present_ids[kind] or not required:
                self._refuse(UNATTACHED)
            else:
                self._reject(line_no, f"{key[0] if key[0] != LINK else 'link'}: names a "
                                      f"{kind} the file does not hold ({value})")
            return False
        return True

    def _flush(self) -> None:
        key, group = self.group_key, self.group
        self.group_key, self.group = None, []
        if not group or key is None:
            return
        kept = [(line_no, item) for line_no, item in group
                if self._attached(key, line_no, item)]
        if not kept:
            return
        try:
            with self.conn.transaction():
                done = self._execute(key, [item for _, item in kept])
            self._count(key, len(kept), done)
            return
        except psycopg.Error:
            pass
        for line_no, item in kept:          # one by one: find the lines that fail
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
        cur = self.conn.execute(statement, {"rows": Jsonb(items)})
        if key[0] in self.added:
            ids = {row[0] for row in cur.fetchall()}
            self.added[key[0]].update(ids)
            self.present_ids[key[0]].update(
                str(item["id"]).lower() for item in items
                if str(item.get("id")).lower() not in ids)
            return len(ids)
        return cur.rowcount

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
