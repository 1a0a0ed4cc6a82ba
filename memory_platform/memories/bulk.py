"""Bulk import of memories: ``store_memory``'s rules, at COPY speed.

Every row goes through the same rules as a single write (memories/rules.py, validation.py,
sharing.py): content validation with credential rejection, subject refs, visibility derived
from the row's own access fields, dedup against the database and within the batch, chunking,
an immutable source envelope, the ``agent_memories`` row (memoryClass ``import``), chunks with
vectors and, for facts, the canonical assertion with verbatim evidence and the write-path
policy decision. A row that breaks a rule is reported with its line number and the reason;
the other rows continue.

What differs is the mechanics: a batch is embedded in one provider call and written with
binary COPY; assertions, evidence and assertion vectors go through temporary tables and
``INSERT ... SELECT ... ON CONFLICT`` because their uniqueness must be honoured. Checks,
chunking and embedding of the next batches overlap the database work of the current one in a
worker thread, or, for a large import with the hash model (pure Python, it holds the GIL), in
a worker process (``import_prepare_processes``).

Loaders: the rows of a batch are written by ``import_loaders`` connections at once (the server
work of a COPY is single-threaded per connection). A row goes to the loader chosen by a hash of
its instance, audience and normalised content, so every repeat of a memory (its dedup key) and
every fact of one assertion identity meet in the same loader, which writes its shares in batch
order: dedup and the ledger decisions are those of a sequential import. Each loader's share of
a batch is one transaction (a batch commits as up to ``import_loaders`` transactions; a share
is all or nothing, and rows the database refuses are found row by row as before). Results and
progress are merged in batch order; a failure lets the shares already handed out commit, as
the batches before a failing one do, and then raises.

Planner statistics: the dedup lookup and the assertion joins are planned from the statistics
of the tables the import fills; planned from an empty table they scan (a nested loop over a
sequential scan, or over the audience index, which holds thousands of rows of one audience).
The import analyses ``agent_memories`` and ``agent_memory_assertions`` after the first batch
and whenever it has doubled them since.

The ledger decisions of a batch (a fact's policy decision, the activation of an undecided
assertion that a person restates, which row gives an assertion its vector) are replayed in
line order, so a batch ends in the state one-by-one writes would have left (tests compare the
two field by field).

The index swaps live in :mod:`memory_platform.memories.bulk_indexes`.
HNSW maintenance dominates a large load (a vector insert into an HNSW graph is ~20x slower than
a COPY without it). When the import is large relative to what the generation's indexes already
hold, the chunk index (and the assertion-vector index, by the same test) is replaced by an
empty placeholder of the same name for the duration of the load (so a concurrent
``ensure_vector_indexes`` does not rebuild it half-way) and built once at the end, with more
maintenance memory and parallel workers. A session advisory lock per generation key keeps two
imports from swapping the same index; an import killed half-way leaves placeholders that the
next import (or :func:`repair_vector_index`) rebuilds.

The GIN full-text indexes of chunks and assertions are dropped as well for such an import
(when it brings more rows than their tables hold; ``import_rebuild_fulltext``) and built once
after the load (a bulk GIN build of 100,000 chunks takes ~3 s; maintaining the index row by
row cost the load several times that). Meanwhile
keyword search loses no match: ``@@`` scans the table instead, only slower. The drop waits at
most a few seconds for its table's lock (a long reader keeps the index); a lock of its own
("memory-import-index:fulltext") keeps two imports from dropping them twice; an import killed
half-way leaves them missing, and the next import (or :func:`repair_fulltext_indexes`)
rebuilds them from the definitions of migrations 0003/0004 (:data:`FULLTEXT_INDEXES`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import multiprocessing
import pickle
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format, TransactionStatus
from psycopg.types import TypeInfo

from memory_platform.access import AUDIENCE_KINDS, AccessContext, Audience, audience_for
from memory_platform.db.units import require_idle
from memory_platform.embeddings.base import EmbeddingError, EmbeddingProvider, key_of
from memory_platform.embeddings.factory import get_provider
from memory_platform.embeddings.generations import (
    Generation,
    ensure_generation,
)
from memory_platform.errors import AccessDenied, InvalidInput
from memory_platform.ledger.assertions import identity_hash
from memory_platform.ledger.policy import PolicyDecision, write_path_decision
from memory_platform.ledger.recall import is_approved_active
from memory_platform.memories.bulk_indexes import (
    BULK_INDEX_TABLES,
    FULLTEXT_INDEXES,
    FULLTEXT_LOCK,
    build_fulltext_indexes,
    build_vector_indexes,
    drop_fulltext_indexes,
    index_unlock,
    install_placeholders,
    repair_fulltext_indexes,
    repair_vector_index,
    rows_in_index,
    rows_in_table,
    try_index_lock,
)
from memory_platform.memories.chunking import Chunk, chunk_text
from memory_platform.memories.rules import (
    ASSERTION_SOURCE_TYPES,
    audience_refs,
    clean_subject_refs,
    dedup_lock_key,
    embedding_provenance,
    embedding_texts,
    fact_assertion_fields,
    memory_metadata,
    memory_scope,
    source_locator,
    source_owner,
    subject_key,
    validate_kind,
)
from memory_platform.memories.sharing import resolve_visibility
from memory_platform.memories.validation import clean_content, clean_metadata, clean_title
from memory_platform.settings import Settings
from memory_platform.text import content_hash

log = logging.getLogger(__name__)

MEMORY_CLASS = "import"
IMPORT_SOURCE_TYPES = ("fact", "manual", "flush", "summary", "prompt_file")
DEFAULT_SOURCE_TYPE = "manual"
# Imported text was not just said by a person to the agent: facts wait for review.
DEFAULT_TRUST_CLASS = "imported"
DEFAULT_ASSERTION_TYPE = "fact"
ACCESS_FIELDS = ("user_id", "session_key", "group_room_id", "channel_thread_key",
                 "channel_type", "instance_key")
ROW_FIELDS = ("content", "visibility", *ACCESS_FIELDS, "subject_refs", "source_type",
              "assertion_type", "trust_class", "title", "metadata")
_ROW_FIELD_SET = frozenset(ROW_FIELDS)
# Auto mode looks ahead at most this many rows to learn an import's size when it is not
# given; a longer stream of unknown size keeps the index (slower, never wrong).
LOOKAHEAD_MAX_ROWS = 100_000
# Worker processes prepare an import of at least this many batches (or of unknown size).
_PROCESS_MIN_BATCHES = 8


# --- input ------------------------------------------------------------------------------


@dataclass(frozen=True)
class NumberedRow:
    """A decoded row and the line it came from."""

    line: int
    value: object


@dataclass(frozen=True)
class MalformedLine:
    """A line that is not a JSON value; reported, never fatal."""

    line: int
    reason: str


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def read_jsonl(lines: Iterable[bytes | str]) -> Iterator[NumberedRow | MalformedLine]:
    """Decode JSON Lines, numbering lines from 1; blank lines are skipped, a line that is not
    UTF-8 or not JSON becomes a :class:`MalformedLine`."""
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield MalformedLine(number, f"line is not valid UTF-8 (byte {exc.start})")
                continue
        text = raw.strip()
        if not text:
            continue
        try:
            value = json.loads(text, parse_constant=_no_constants)
        except json.JSONDecodeError as exc:
            yield MalformedLine(number, f"malformed JSON: {exc.msg} (column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            yield MalformedLine(number, f"malformed JSON: {exc}")
            continue
        yield NumberedRow(number, value)


def context_from_row(default_instance: str) -> Callable[[Mapping[str, Any]], AccessContext]:
    """The access context a row describes: its own access fields, in its own instance or
    ``default_instance``."""

    def ctx_for_row(row: Mapping[str, Any]) -> AccessContext:
        return AccessContext(
            instance_key=row.get("instance_key") or default_instance,
            user_id=row.get("user_id"),
            session_key=row.get("session_key"),
            group_room_id=row.get("group_room_id"),
            channel_thread_key=row.get("channel_thread_key"),
            channel_type=row.get("channel_type"),
        )

    return ctx_for_row


# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rejection:
    line: int
    reason: str
    code: str = "invalid_input"


@dataclass
class ImportStats:
    rows: int = 0  # input rows seen (blank lines not counted)
    accepted: int = 0  # new memories written
    deduplicated: int = 0  # rows that matched an existing memory (or an earlier row)
    rejected: list[Rejection] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0  # accepted memories written with vectors
    assertions_created: int = 0
    assertions_activated: int = 0
    evidence: int = 0
    batches: int = 0
    embedding_errors: list[str] = field(default_factory=list)
    generation_key: str | None = None
    index_rebuilt: bool = False
    fulltext_rebuilt: bool = False  # the GIN full-text indexes were dropped and rebuilt
    index_note: str | None = None
    load_seconds: float = 0.0  # validating, embedding and writing the rows
    index_seconds: float = 0.0  # swapping out and rebuilding the HNSW and GIN indexes
    fulltext_seconds: float = 0.0  # the GIN share of index_seconds
    seconds: float = 0.0  # all of it

    @property
    def keyword_only(self) -> int:
        return self.accepted - self.embedded

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    @property
    def load_rows_per_second(self) -> float:
        return self.rows / self.load_seconds if self.load_seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows, "accepted": self.accepted, "deduplicated": self.deduplicated,
            "rejected": len(self.rejected), "chunks": self.chunks, "embedded": self.embedded,
            "keyword_only": self.keyword_only, "assertions_created": self.assertions_created,
            "assertions_activated": self.assertions_activated, "evidence": self.evidence,
            "batches": self.batches, "embedding_errors": self.embedding_errors,
            "generation_key": self.generation_key, "index_rebuilt": self.index_rebuilt,
            "fulltext_rebuilt": self.fulltext_rebuilt,
            "index_note": self.index_note,
            "load_seconds": round(self.load_seconds, 3),
            "index_seconds": round(self.index_seconds, 3),
            "fulltext_seconds": round(self.fulltext_seconds, 3),
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "load_rows_per_second": round(self.load_rows_per_second, 1),
        }


# --- binary COPY of vectors ------------------------------------------------------------------


class _PackedVector(bytes):
    """A vector already in pgvector's binary wire format (dims, unused, big-endian f4)."""


def _packed_vectors(matrix: np.ndarray) -> list[_PackedVector]:
    """All rows of ``matrix`` in pgvector's binary format, converted in one numpy pass."""
    rows, dims = matrix.shape
    packed = np.empty((rows, 4 + 4 * dims), dtype=np.uint8)
    packed[:, :4] = np.frombuffer(np.array([dims, 0], dtype=">u2").tobytes(), dtype=np.uint8)
    packed[:, 4:] = np.ascontiguousarray(matrix, dtype=">f4").view(np.uint8).reshape(rows, -1)
    return [_PackedVector(row.tobytes()) for row in packed]


def _packed_dumper(oid: int) -> type[Dumper]:
    """A binary dumper for the ``vector`` oid that sends packed vectors as they are (COPY
    with ``set_types`` looks dumpers up by oid)."""

    class PackedVectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> bytes:
            return obj

    PackedVectorDumper.oid = oid
    return PackedVectorDumper


# --- per-row preparation ------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    line: int
    fields: dict[str, Any]
    content: str
    refs: dict[str, str]
    source_type: str
    trust_class: str
    assertion_type: str
    title: str | None
    metadata: dict[str, Any]
    digest: str
    chunks: list[Chunk]
    ctx: AccessContext | None = None
    audience: Audience | None = None
    subject: str = ""
    memory_id: uuid.UUID = field(default_factory=uuid.uuid4)
    source_id: uuid.UUID = field(default_factory=uuid.uuid4)
    # pgvector wire format of the row's embedded texts (chunks, then the whole fact's text)
    vectors: list[_PackedVector] | None = None

    @property
    def is_fact(self) -> bool:
        return self.source_type in ASSERTION_SOURCE_TYPES

    @property
    def dedup_key(self) -> tuple[str, str, str, str, str]:
        assert self.ctx is not None and self.audience is not None
        return (self.ctx.instance_key, self.audience.kind, self.audience.key, self.digest,
                self.subject)


def _optional_text(row: Mapping[str, Any], name: str) -> str | None:
    value = row.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{name} must be a non-empty string or null",
                           details={"field": name})
    return value


def _check_row(value: object, settings: Settings, line: int) -> _Row:
    """Everything about a row that needs no database: shape, types, content rules, chunks."""
    if not isinstance(value, dict):
        raise InvalidInput(f"a row must be a JSON object, not {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in _ROW_FIELD_SET)
    if unknown:
        raise InvalidInput(f"unknown field(s): {', '.join(unknown)} "
                           f"(allowed: {', '.join(ROW_FIELDS)})", details={"fields": unknown})
    if "content" not in value:
        raise InvalidInput("content is missing", details={"field": "content"})
    content = clean_content(value["content"], max_chars=settings.memory_max_chars)
    for name in ACCESS_FIELDS:
        _optional_text(value, name)
    visibility = value.get("visibility")
    if visibility is not None and visibility not in AUDIENCE_KINDS:
        raise InvalidInput(f"visibility must be one of {', '.join(AUDIENCE_KINDS)} or null",
                           details={"field": "visibility"})
    source_type = value.get("source_type") or DEFAULT_SOURCE_TYPE
    if source_type not in IMPORT_SOURCE_TYPES:
        raise InvalidInput(f"source_type must be one of {', '.join(IMPORT_SOURCE_TYPES)}",
                           details={"field": "source_type"})
    trust_class = value.get("trust_class") or DEFAULT_TRUST_CLASS
    assertion_type = value.get("assertion_type") or DEFAULT_ASSERTION_TYPE
    if not isinstance(trust_class, str) or not isinstance(assertion_type, str):
        raise InvalidInput("trust_class and assertion_type must be strings")
    validate_kind(source_type, trust_class, assertion_type)
    title = clean_title(value.get("title"))
    metadata = clean_metadata(value.get("metadata"))
    refs = clean_subject_refs(value.get("subject_refs"))
    chunks = chunk_text(content, settings.chunk_target_chars, settings.chunk_overlap_chars)
    return _Row(line, value, content, refs, source_type, trust_class, assertion_type, title,
                metadata, content_hash(content), chunks)




# --- stage 1: checks, chunks and vectors, in a worker thread or process -------------------------

# What _prepare answers: the items' count, the rows that passed the checks, the rejected ones,
# an embedding error, and the vectors (one matrix) with each row's span of it.
_Prepared = tuple[int, list[_Row], list[Rejection], str | None, np.ndarray | None,
                  list[tuple[int, int]]]


def _prepare(items: list[NumberedRow | MalformedLine], settings: Settings,
             provider: EmbeddingProvider) -> _Prepared:
    """Everything about a batch that needs no database. A module function, so that a worker
    process can run it (the matrix travels back as one array, cheap to pickle)."""
    rows: list[_Row] = []
    rejected: list[Rejection] = []
    for item in items:
        if isinstance(item, MalformedLine):
            rejected.append(Rejection(item.line, item.reason, "malformed_json"))
            continue
        try:
            rows.append(_check_row(item.value, settings, item.line))
        except InvalidInput as exc:
            rejected.append(Rejection(item.line, exc.message, exc.code))
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for row in rows:
        row_texts = embedding_texts(row.source_type, row.content, row.chunks)
        spans.append((len(texts), len(texts) + len(row_texts)))
        texts.extend(row_texts)
    if not texts:
        return len(items), rows, rejected, None, None, spans
    try:
        matrix = provider.embed_documents(texts)
    except EmbeddingError as exc:
        log.warning("embedding failed; importing keyword-only, re-embed later: %s", exc)
        return len(items), rows, rejected, str(exc), None, spans
    return len(items), rows, rejected, None, matrix, spans


def _attach(prepared: _Prepared) -> tuple[int, list[_Row], list[Rejection], str | None]:
    """The rows of a prepared batch with their vectors in pgvector's wire format."""
    count, rows, rejected, error, matrix, spans = prepared
    if matrix is not None:
        packed = _packed_vectors(matrix)
        for row, (start, end) in zip(rows, spans, strict=True):
            row.vectors = packed[start:end]
    return count, rows, rejected, error


# --- the importer ---------------------------------------------------------------------------

_TEMP_TABLES = """
CREATE TEMP TABLE IF NOT EXISTS memory_import_assertions (
    ord int, instance_key text, audience_kind text, audience_key text, owner_user_id text,
    identity_hash text, assertion_type text, assertion_text text, origin text,
    confidence real, subject_refs jsonb, metadata jsonb, status text, review_state text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS memory_import_evidence (
    ord int, instance_key text, audience_kind text, audience_key text, assertion_id uuid,
    source_id uuid, excerpt text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE IF NOT EXISTS memory_import_assertion_vectors (
    ord int, instance_key text, assertion_id uuid, generation_id bigint, embedding_key text,
    embedding vector, content_hash text
) ON COMMIT DELETE ROWS;
"""

_EXISTING = """
SELECT DISTINCT ON (k.ord) k.ord, m.id, m.assertion_id, a.status, a.review_state
  FROM unnest(%(instances)b::text[], %(kinds)b::text[], %(keys)b::text[], %(digests)b::text[],
              %(subjects)b::text[], %(ords)b::int[])
       AS k(instance_key, kind, audience_key, digest, subject, ord)
  JOIN agent_memories m
    ON m.instance_key = k.instance_key
   AND m.visibility_scope = k.kind
   AND m.audience_key = k.audience_key
   AND m.content_hash = k.digest
   AND m.subject_key = k.subject
  LEFT JOIN agent_memory_assertions a
    ON a.instance_key = m.instance_key AND a.id = m.assertion_id
 WHERE m.memory_state = 'active'
   AND m.updated_at > now() - make_interval(hours => %(window)s)
 ORDER BY k.ord, m.updated_at DESC
"""

_INSERT_ASSERTIONS = """
WITH created AS (
INSERT INTO agent_memory_assertions
       (instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
        assertion_type, assertion_text, origin, confidence, subject_refs, metadata, status,
        review_state)
SELECT DISTINCT ON (instance_key, audience_kind, audience_key, identity_hash)
       instance_key, audience_kind, audience_key, owner_user_id, identity_hash,
       assertion_type, assertion_text, origin, confidence, subject_refs, metadata, status,
       review_state
  FROM memory_import_assertions
 ORDER BY instance_key, audience_kind, audience_key, identity_hash, ord
ON CONFLICT (instance_key, audience_kind, audience_key, identity_hash) DO NOTHING
RETURNING id, instance_key, audience_kind, audience_key, identity_hash, status, review_state
)
-- Every fact row's assertion: created just now (only visible through RETURNING within this
-- statement) or already there.
SELECT t.ord, coalesce(c.id, a.id), coalesce(c.status, a.status),
       coalesce(c.review_state, a.review_state), c.id IS NOT NULL
  FROM memory_import_assertions t
  LEFT JOIN created c
    ON c.instance_key = t.instance_key
   AND c.audience_kind = t.audience_kind
   AND c.audience_key = t.audience_key
   AND c.identity_hash = t.identity_hash
  LEFT JOIN agent_memory_assertions a
    ON a.instance_key = t.instance_key
   AND a.audience_kind = t.audience_kind
   AND a.audience_key = t.audience_key
   AND a.identity_hash = t.identity_hash
"""

# A conflict with an assertion committed after the statement above took its snapshot is
# invisible to its join: look again, in a new snapshot.
_ASSERTION_REFS = """
SELECT t.ord, a.id, a.status, a.review_state, false
  FROM memory_import_assertions t
  JOIN agent_memory_assertions a
    ON a.instance_key = t.instance_key
   AND a.audience_kind = t.audience_kind
   AND a.audience_key = t.audience_key
   AND a.identity_hash = t.identity_hash
"""

_INSERT_EVIDENCE = """
INSERT INTO agent_memory_assertion_evidence
       (instance_key, audience_kind, audience_key, assertion_id, source_id, excerpt)
SELECT instance_key, audience_kind, audience_key, assertion_id, source_id, excerpt
  FROM memory_import_evidence
 ORDER BY ord
ON CONFLICT (assertion_id, source_id, stance, md5(excerpt)) DO NOTHING
"""

_INSERT_ASSERTION_VECTORS = """
INSERT INTO agent_memory_assertion_embeddings
       (instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash)
SELECT DISTINCT ON (assertion_id)
       instance_key, assertion_id, generation_id, embedding_key, embedding, content_hash
  FROM memory_import_assertion_vectors
 ORDER BY assertion_id, ord
ON CONFLICT (assertion_id, generation_id) DO NOTHING
"""


@dataclass
class _AssertionRef:
    id: uuid.UUID
    status: str
    review_state: str
    created: bool = False


@dataclass(frozen=True)
class _Hit:
    """A live memory in the database that a row repeats."""

    memory_id: uuid.UUID
    assertion_id: uuid.UUID | None
    status: str | None
    review_state: str | None


def _decision(row: _Row) -> PolicyDecision:
    assert row.audience is not None
    return write_path_decision(row.trust_class, row.assertion_type, row.audience.kind)


def _created_state(decision: PolicyDecision) -> tuple[str, str]:
    return ("active", "policy_approved") if decision.activate else ("candidate", "pending")


@dataclass
class _Ledger:
    """The ledger decisions of one batch, replayed in line order exactly as store_memory
    takes them one write at a time: the creating row's policy decision; a restatement by a
    row that qualifies on its own activates an undecided (pending) assertion; a new row
    stores the vector of its assertion when that is recallable at that point."""

    state: dict[uuid.UUID, list[str]] = field(default_factory=dict)
    reviews: list[tuple[str, uuid.UUID, str, str, str]] = field(default_factory=list)
    restated: set[uuid.UUID] = field(default_factory=set)
    vectors: dict[uuid.UUID, _Row] = field(default_factory=dict)
    created: int = 0
    activated: int = 0

    def replay(self, rows: list[_Row], refs: dict[int, _AssertionRef],
               hits: dict[int, _Hit], repeats: dict[int, list[_Row]]) -> None:
        """``rows``: the batch's distinct rows; ``refs``: assertion of each new fact row
        (keyed by ``id(row)``); ``hits``: rows repeating a live memory (by line);
        ``repeats``: later rows repeating a batch row (by the first row's line)."""
        events: list[tuple[int, _Row, uuid.UUID | None, bool]] = []
        for row in rows:
            hit = hits.get(row.line)
            if hit is not None:
                self._know(hit.assertion_id, hit.status, hit.review_state)
                assertion_id = hit.assertion_id
                events.append((row.line, row, assertion_id, False))
            else:
                ref = refs.get(id(row))
                assertion_id = ref.id if ref else None
                if ref and not ref.created:
                    self._know(ref.id, ref.status, ref.review_state)
                events.append((row.line, row, assertion_id, True))
            for repeat in repeats.get(row.line, ()):
                events.append((repeat.line, repeat, assertion_id, False))
        events.sort(key=lambda event: event[0])
        for _, row, assertion_id, new in events:
            if assertion_id is None:
                continue
            ref = refs.get(id(row)) if new else None
            if ref is not None and ref.created and assertion_id not in self.state:
                self._create(row, assertion_id)
            else:
                self._restate(row, assertion_id)
            if new and row.vectors is not None and assertion_id not in self.vectors \
                    and self._recallable(assertion_id):
                self.vectors[assertion_id] = row

    def _know(self, assertion_id: uuid.UUID | None, status: str | None,
              review_state: str | None) -> None:
        if assertion_id is not None and assertion_id not in self.state:
            self.state[assertion_id] = [status or "", review_state or ""]

    def _create(self, row: _Row, assertion_id: uuid.UUID) -> None:
        decision = _decision(row)
        self.state[assertion_id] = list(_created_state(decision))
        self._review(row, assertion_id, "activate" if decision.activate else "defer",
                     decision.reason_code)
        self.created += 1
        self.activated += decision.activate

    def _restate(self, row: _Row, assertion_id: uuid.UUID) -> None:
        state = self.state.get(assertion_id)
        if state is None or state[1] != "pending" or not _decision(row).activate:
            return
        state[:] = ["active", "policy_approved"]
        self._review(row, assertion_id, "activate", "direct_human_restatement")
        self.restated.add(assertion_id)
        self.activated += 1

    def _review(self, row: _Row, assertion_id: uuid.UUID, decision: str, reason: str) -> None:
        assert row.ctx is not None
        self.reviews.append((row.ctx.instance_key, assertion_id, decision, "policy", reason))

    def _recallable(self, assertion_id: uuid.UUID) -> bool:
        return is_approved_active(*self.state[assertion_id])


@dataclass
class _Outcome:
    """What one committed batch wrote (merged into the stats only after the commit)."""

    accepted: int = 0
    deduplicated: int = 0
    chunks: int = 0
    embedded: int = 0
    assertions_created: int = 0
    assertions_activated: int = 0
    evidence: int = 0


class _BatchFailed(Exception):
    def __init__(self, error: psycopg.Error) -> None:
        super().__init__(str(error))
        self.error = error


class _Importer:
    def __init__(self, conn: psycopg.Connection, settings: Settings,
                 provider: EmbeddingProvider,
                 ctx_for_row: Callable[[Mapping[str, Any]], AccessContext],
                 stats: ImportStats) -> None:
        self.conn = conn
        self.settings = settings
        self.provider = provider
        self.ctx_for_row = ctx_for_row
        self.stats = stats
        self.generations: dict[str, Generation] = {}
        self.visibility: dict[tuple[str | None, ...], object] = {}
        info = TypeInfo.fetch(conn, "vector")
        if info is None:
            raise RuntimeError("the vector type is missing: run `memory-platform db migrate`")
        self.vector_info = info
        self.vector_dumper = _packed_dumper(info.oid)

    # -- stage 1 (worker thread or process): pure checks, chunking, embedding -------------
    def check_and_embed(self, items: list[NumberedRow | MalformedLine]
                        ) -> tuple[int, list[_Row], list[Rejection], str | None]:
        return _attach(_prepare(items, self.settings, self.provider))

    # -- stage 2 (connection owner): audience, dedup, write -------------------------------
    def resolve(self, rows: list[_Row]
                ) -> tuple[list[_Row], list[Rejection], dict[int, list[_Row]]]:
        """Access context, visibility, audience refs and in-batch dedup; answers the rows
        to write, the rejected ones and the repeats of each kept row (by its line)."""
        keep: list[_Row] = []
        rejected: list[Rejection] = []
        seen: dict[tuple[str, str, str, str, str], _Row] = {}
        repeats: dict[int, list[_Row]] = {}
        for row in rows:
            try:
                ctx = self.ctx_for_row(row.fields)
                kind = self._visibility(ctx, row.fields.get("visibility"))
                audience = audience_for(kind, ctx)
            except (AccessDenied, InvalidInput) as exc:
                rejected.append(Rejection(row.line, exc.message, exc.code))
                continue
            row.ctx, row.audience = ctx, audience
            row.refs = audience_refs(row.refs, ctx, audience)
            row.subject = subject_key(row.refs)
            first = seen.get(row.dedup_key)
            if first is not None:
                repeats.setdefault(first.line, []).append(row)
                continue
            seen[row.dedup_key] = row
            keep.append(row)
        return keep, rejected, repeats

    def _visibility(self, ctx: AccessContext, requested: Any) -> Any:
        # resolve_visibility reads the share-with-team preference (one query); an import
        # asks once per distinct context. The session key plays no part in the decision.
        key = (ctx.instance_key, ctx.user_id, ctx.group_room_id, ctx.channel_thread_key,
               ctx.channel_type, requested)
        answer = self.visibility.get(key)
        if answer is None:
            try:
                answer = resolve_visibility(self.conn, ctx, requested)
            except (AccessDenied, InvalidInput) as exc:
                answer = exc
            self.visibility[key] = answer
        if isinstance(answer, Exception):
            raise answer
        return answer

    def generation(self, instance_key: str) -> Generation:
        generation = self.generations.get(instance_key)
        if generation is None:
            generation = ensure_generation(self.conn, instance_key, self.provider)
            self.generations[instance_key] = generation
        return generation

    def _existing(self, rows: list[_Row]) -> dict[int, _Hit]:
        """Position in ``rows`` -> the live memory each one duplicates."""
        if not rows:
            return {}
        keys = [row.dedup_key for row in rows]
        found = self.conn.execute(_EXISTING, {
            "instances": [k[0] for k in keys], "kinds": [k[1] for k in keys],
            "keys": [k[2] for k in keys], "digests": [k[3] for k in keys],
            "subjects": [k[4] for k in keys], "ords": list(range(len(keys))),
            "window": self.settings.memory_dedup_window_hours,
        }).fetchall()
        return {ord_: _Hit(memory_id, assertion_id, status, review)
                for ord_, memory_id, assertion_id, status, review in found}

    def _touch(self, memory_ids: Iterable[uuid.UUID]) -> None:
        ids = list(memory_ids)
        if ids:
            self.conn.execute("UPDATE agent_memories SET updated_at = now() WHERE id = ANY(%s)",
                              (ids,))

    def generations_for(self, rows: list[_Row]) -> dict[str, Generation]:
        """The generation of each instance whose rows carry vectors (registered on the
        resolving connection, before a loader writes)."""
        return {row.ctx.instance_key: self.generation(row.ctx.instance_key)
                for row in rows if row.vectors is not None and row.ctx}

    def on(self, conn: psycopg.Connection) -> _Importer:
        """This importer writing on ``conn`` (a loader's own connection)."""
        clone = copy.copy(self)
        clone.conn = conn
        return clone

    def write(self, rows: list[_Row], repeats: dict[int, list[_Row]],
              generations: dict[str, Generation]) -> _Outcome:
        """One transaction: lock the dedup keys (the same locks store_memory takes), look for
        duplicates in the database, COPY the new rows, then apply the ledger decisions of
        the batch in line order, as one-by-one writes would have made them."""
        outcome = _Outcome()
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT"
                    " hashtextextended(k, 0) AS h FROM unnest(%b::text[]) AS k) s ORDER BY h",
                    ([dedup_lock_key(r.ctx.instance_key, r.audience, r.digest, r.subject)
                      for r in rows if r.ctx and r.audience],),
                )
                existing = self._existing(rows)
                self._touch(hit.memory_id for hit in existing.values())
                hits = {rows[i].line: hit for i, hit in existing.items()}
                fresh = [row for i, row in enumerate(rows) if i not in existing]
                outcome.deduplicated = len(hits) + sum(len(r) for r in repeats.values())
                self._write_rows(rows, fresh, hits, repeats, generations, outcome)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            raise
        except psycopg.Error as exc:
            raise _BatchFailed(exc) from exc
        return outcome

    def _write_rows(self, rows: list[_Row], fresh: list[_Row], hits: dict[int, _Hit],
                    repeats: dict[int, list[_Row]], generations: dict[str, Generation],
                    outcome: _Outcome) -> None:
        with self.conn.cursor() as cur:
            self.vector_info.register(cur)
            cur.adapters.register_dumper(_PackedVector, self.vector_dumper)
            refs: dict[int, _AssertionRef] = {}
            if fresh:
                self._copy_sources(cur, fresh)
                refs = self._assertions(cur, fresh)
                self._copy_memories(cur, fresh, refs)
                self._copy_chunks(cur, fresh, generations, outcome)
                self._evidence(cur, fresh, refs, outcome)
            ledger = _Ledger()
            ledger.replay(rows, {id(fresh[i]): ref for i, ref in refs.items()}, hits, repeats)
            self._apply(cur, ledger, generations, outcome)
        outcome.accepted = len(fresh)

    def _copy_sources(self, cur: psycopg.Cursor, rows: list[_Row]) -> None:
        with cur.copy(
            "COPY agent_memory_sources (id, instance_key, audience_kind, audience_key,"
            " owner_user_id, session_key, source_key, source_kind, trust_class, source_locator,"
            " memory_id, content, content_hash, metadata) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "text", "text", "text", "text", "text", "text", "text",
                            "text", "jsonb", "uuid", "text", "text", "jsonb"])
            for r in rows:
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                copy.write_row((
                    r.source_id, ctx.instance_key, audience.kind, audience.key,
                    source_owner(ctx, audience), ctx.session_key, f"memory:{r.memory_id}",
                    "memory", r.trust_class, source_locator(r.memory_id, r.source_type),
                    r.memory_id, r.content, r.digest, {},
                ))

    def _assertions(self, cur: psycopg.Cursor, rows: list[_Row]) -> dict[int, _AssertionRef]:
        """Canonical assertions of the fact rows: created in the state the creating row's
        policy decision gives (the first row of an identity creates it, as if written one by
        one) or found. Answers row position -> assertion, as the database has it now."""
        facts = [(i, r) for i, r in enumerate(rows) if r.is_fact]
        if not facts:
            return {}
        with cur.copy(
            "COPY memory_import_assertions (ord, instance_key, audience_kind, audience_key,"
            " owner_user_id, identity_hash, assertion_type, assertion_text, origin, confidence,"
            " subject_refs, metadata, status, review_state) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "text", "text", "text", "text", "text", "text",
                            "text", "float4", "jsonb", "jsonb", "text", "text"])
            for i, r in facts:
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                origin, confidence, metadata = fact_assertion_fields(MEMORY_CLASS,
                                                                     r.trust_class)
                status, review = _created_state(_decision(r))
                copy.write_row((
                    i, ctx.instance_key, audience.kind, audience.key,
                    source_owner(ctx, audience), identity_hash(r.content), r.assertion_type,
                    r.content, origin, confidence, r.refs, metadata, status, review,
                ))
        found = cur.execute(_INSERT_ASSERTIONS).fetchall()
        created = {id_ for _, id_, _, _, new in found if new}
        if any(id_ is None for _, id_, _, _, _ in found):
            found = cur.execute(_ASSERTION_REFS).fetchall()
        return {ord_: _AssertionRef(id_, status, review, id_ in created)
                for ord_, id_, status, review, _ in found}

    def _copy_memories(self, cur: psycopg.Cursor, rows: list[_Row],
                       refs: dict[int, _AssertionRef]) -> None:
        with cur.copy(
            "COPY agent_memories (id, instance_key, memory_scope, visibility_scope, audience_key,"
            " user_id, session_key, group_room_id, channel_thread_key, channel_type,"
            " subject_refs, source_type, title, content, content_hash, subject_key, metadata,"
            " assertion_id, source_id) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "text", "text", "text", "text", "text", "text", "text",
                            "text", "text", "jsonb", "text", "text", "text", "text", "text",
                            "jsonb", "uuid", "uuid"])
            for i, r in enumerate(rows):
                ctx, audience = r.ctx, r.audience
                assert ctx is not None and audience is not None
                ref = refs.get(i)
                copy.write_row((
                    r.memory_id, ctx.instance_key, memory_scope(audience, ctx, r.source_type),
                    audience.kind, audience.key, ctx.user_id, ctx.session_key,
                    ctx.group_room_id, ctx.channel_thread_key, ctx.channel_type, r.refs,
                    r.source_type, r.title, r.content, r.digest, r.subject,
                    memory_metadata(r.metadata, MEMORY_CLASS), ref.id if ref else None,
                    r.source_id,
                ))

    def _copy_chunks(self, cur: psycopg.Cursor, rows: list[_Row],
                     generations: dict[str, Generation], outcome: _Outcome) -> None:
        with cur.copy(
            "COPY agent_memory_chunks (instance_key, memory_id, chunk_index, content,"
            " start_offset, end_offset, embedding, generation_id, embedding_key, metadata)"
            " FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "uuid", "int4", "text", "int4", "int4", "vector", "int8",
                            "text", "jsonb"])
            for r in rows:
                ctx = r.ctx
                assert ctx is not None
                generation = generations.get(ctx.instance_key) if r.vectors is not None else None
                if generation is None:
                    for c in r.chunks:
                        copy.write_row((ctx.instance_key, r.memory_id, c.index, c.content,
                                        c.start, c.end, None, None, None, {}))
                    continue
                assert r.vectors is not None
                metadata = {"embedding": embedding_provenance(
                    generation.generation_key, self.provider.strategy, self.provider.model)}
                for c in r.chunks:
                    copy.write_row((ctx.instance_key, r.memory_id, c.index, c.content, c.start,
                                    c.end, r.vectors[c.index], generation.id,
                                    generation.generation_key, metadata))
                outcome.embedded += 1
            outcome.chunks += sum(len(r.chunks) for r in rows)

    def _evidence(self, cur: psycopg.Cursor, rows: list[_Row], refs: dict[int, _AssertionRef],
                  outcome: _Outcome) -> None:
        if not refs:
            return
        with cur.copy(
            "COPY memory_import_evidence (ord, instance_key, audience_kind, audience_key,"
            " assertion_id, source_id, excerpt) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "text", "text", "uuid", "uuid", "text"])
            for i, ref in refs.items():
                r = rows[i]
                assert r.ctx is not None and r.audience is not None
                copy.write_row((i, r.ctx.instance_key, r.audience.kind, r.audience.key, ref.id,
                                r.source_id, r.chunks[0].content))
        outcome.evidence += cur.execute(_INSERT_EVIDENCE).rowcount

    def _apply(self, cur: psycopg.Cursor, ledger: _Ledger,
               generations: dict[str, Generation], outcome: _Outcome) -> None:
        """Write what the replay decided: review rows in order, restatement activations, and
        the vector of each assertion that became recallable (ON CONFLICT DO NOTHING, as
        store_memory stores it)."""
        if ledger.reviews:
            with cur.copy(
                "COPY agent_memory_assertion_reviews (instance_key, assertion_id, decision,"
                " reviewer_kind, reason_code) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "uuid", "text", "text", "text"])
                for review in ledger.reviews:
                    copy.write_row(review)
        if ledger.restated:
            cur.execute(
                "UPDATE agent_memory_assertions SET status = 'active',"
                " review_state = 'policy_approved'"
                " WHERE id = ANY(%s) AND review_state NOT IN ('human_approved', 'human_rejected')",
                (list(ledger.restated),),
            )
        outcome.assertions_created += ledger.created
        outcome.assertions_activated += ledger.activated
        if not ledger.vectors:
            return
        with cur.copy(
            "COPY memory_import_assertion_vectors (ord, instance_key, assertion_id,"
            " generation_id, embedding_key, embedding, content_hash) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int4", "text", "uuid", "int8", "text", "vector", "text"])
            for ord_, (assertion_id, r) in enumerate(ledger.vectors.items()):
                assert r.ctx is not None and r.vectors is not None
                generation = generations[r.ctx.instance_key]
                copy.write_row((ord_, r.ctx.instance_key, assertion_id, generation.id,
                                generation.generation_key, r.vectors[-1],
                                content_hash(r.content)))
        cur.execute(_INSERT_ASSERTION_VECTORS)


# --- planner statistics during a load --------------------------------------------------------

# The dedup lookup and the assertion joins are planned from the statistics of the tables the
# import fills. Planned from an empty (or much smaller) table they pick a sequential scan or
# the audience index (one audience holds thousands of rows), and each batch gets slower.
# The import analyses these tables whenever it has doubled them since the last analysis.
_ANALYZED_TABLES = ("agent_memories", "agent_memory_assertions")


class _Statistics:
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        before = conn.execute(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_class"
            " WHERE oid = 'agent_memories'::regclass").fetchone()[0]
        self.rows = before  # what the statistics describe
        self.written = 0

    def wrote(self, accepted: int) -> None:
        self.written += accepted
        if self.written and self.written >= max(self.rows, 1):
            t0 = time.perf_counter()
            with self.conn.transaction():
                for table in _ANALYZED_TABLES:
                    self.conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
            log.debug("analysed %s in %.2f s", ", ".join(_ANALYZED_TABLES),
                      time.perf_counter() - t0)
            self.rows += self.written
            self.written = 0


# --- entry point -----------------------------------------------------------------------------


def _numbered(rows: Iterable[Any]) -> Iterator[NumberedRow | MalformedLine]:
    for position, item in enumerate(rows, 1):
        if isinstance(item, NumberedRow | MalformedLine):
            yield item
        else:
            yield NumberedRow(position, item)


def _chain(head: list[Any], tail: Iterator[Any]) -> Iterator[Any]:
    yield from head
    yield from tail


def _import_size(conn: psycopg.Connection, settings: Settings, key: str,
                 items: Iterator[NumberedRow | MalformedLine], known: int | None,
                 ) -> tuple[int | None, Iterator[NumberedRow | MalformedLine]]:
    """The import's size when it matters for auto mode: given, or learnt by a bounded
    look-ahead (None: larger than anything the look-ahead would rebuild for)."""
    if known is not None:
        return known, items
    threshold = settings.import_rebuild_index_min_rows
    existing = rows_in_index(conn, "agent_memory_chunks", key, LOOKAHEAD_MAX_ROWS + 1)
    bound = max(threshold, existing) + 1
    if bound > LOOKAHEAD_MAX_ROWS:
        return None, items
    head = list(islice(items, bound))
    return len(head), _chain(head, items)


def _indexes_to_rebuild(conn: psycopg.Connection, settings: Settings, key: str,
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


def _fulltext_to_rebuild(conn: psycopg.Connection, settings: Settings, known: int | None,
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
    carry their line numbers); every batch commits on its own.

    ``ctx_for_row`` builds a row's access context from its fields (see
    :func:`context_from_row`). ``rebuild_index``: True/False force the HNSW (and GIN
    full-text) drop-and-rebuild or forbid it; None decides from the import's size
    (``expected_rows``, ``len(rows)``, or a bounded look-ahead) against the rows the indexes
    already hold. ``loaders`` (default ``import_loaders``): connections writing
    concurrently; each writes its share of a batch (the rows whose dedup key hashes to it)
    in its own transaction."""
    require_idle(conn, "import_memories")
    started = time.perf_counter()
    provider = embedder or get_provider(settings)
    size = batch_size or settings.import_batch_size
    stats = ImportStats()
    key = key_of(provider)
    stats.generation_key = key
    items: Iterator[NumberedRow | MalformedLine] = _numbered(rows)
    if expected_rows is None and isinstance(rows, Sized):
        expected_rows = len(rows)
    repair_vector_index(conn, settings, key, provider.dimensions)
    repair_fulltext_indexes(conn, settings)
    tables: list[str] = []
    known = expected_rows
    if rebuild_index is None:
        known, items = _import_size(conn, settings, key, items, expected_rows)
        tables = _indexes_to_rebuild(conn, settings, key, known)
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
        fulltext = _fulltext_to_rebuild(conn, settings, known, rebuild_index)
        if fulltext:
            holding_fulltext = try_index_lock(conn, FULLTEXT_LOCK)
            if holding_fulltext:
                t0 = time.perf_counter()
                drop_fulltext_indexes(conn, fulltext)
                stats.fulltext_seconds += time.perf_counter() - t0
                stats.index_seconds += time.perf_counter() - t0
    with conn.transaction():
        conn.execute(_TEMP_TABLES)
    importer = _Importer(conn, settings, provider, ctx_for_row, stats)
    if known is None:  # a stream: a short one needs no loaders and no worker process
        head = list(islice(items, _PROCESS_MIN_BATCHES * size))
        items = _chain(head, items)
        if len(head) < _PROCESS_MIN_BATCHES * size:
            known = len(head)
    count = loaders or settings.import_loaders
    if known is not None and known <= size:
        count = 1  # one batch: nothing to overlap
    try:
        with _open_loaders(conn, count) as connections:
            _run(importer, connections, items, size, progress,
                 _prepare_processes(settings, provider, known, size))
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
    return stats


# --- the load: checks, resolution and loaders ------------------------------------------------


@contextmanager
def _open_loaders(conn: psycopg.Connection, count: int) -> Iterator[list[psycopg.Connection]]:
    """``count`` connections to the database of ``conn`` for the loaders, with the import's
    temporary tables (none when ``count`` is 1: the caller's connection writes). If a
    connection cannot be opened, fewer loaders write."""
    opened: list[psycopg.Connection] = []
    try:
        if count > 1:
            params = conn.info.get_parameters()
            if conn.info.password:
                params["password"] = conn.info.password
            for _ in range(count):
                try:
                    other = psycopg.connect(**params, autocommit=True)  # type: ignore[arg-type]
                except psycopg.OperationalError as exc:
                    log.warning("importing with %d loader(s): %s", len(opened) or 1, exc)
                    break
                opened.append(other)
                with other.transaction():
                    other.execute(_TEMP_TABLES)
            if len(opened) < 2:
                for other in opened:
                    other.close()
                opened = []
        yield opened
    finally:
        for other in opened:
            other.close()


def _loader_of(row: _Row, count: int) -> int:
    """The loader that writes ``row``: by instance, audience and normalised content, so
    repeats of a memory (its dedup key adds the subject) and every fact of one assertion
    identity (a hash of the same normalised content) are written by the same loader, in
    line order."""
    assert row.ctx is not None and row.audience is not None
    slot = f"{row.ctx.instance_key}\x1f{row.audience.kind}\x1f{row.audience.key}\x1f{row.digest}"
    return int.from_bytes(hashlib.blake2b(slot.encode(), digest_size=8).digest()) % count


@dataclass
class _Pending:
    """One input batch in flight: its row count, the rows resolution rejected, and the
    writes of its loader shares."""

    count: int
    rejected: list[Rejection]
    error: str | None
    writes: list[Future]


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(islice(items, size)):
        yield batch


@contextmanager
def _preparer(importer: _Importer, processes: int) -> Iterator[Callable[[list[Any]], Future]]:
    """Submits a batch's checks and embedding: to a worker thread, or (``processes``) to
    worker processes, which answer :func:`_prepare`'s result (vectors not yet packed)."""
    if processes:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
            yield lambda batch: pool.submit(_prepare, batch, importer.settings,
                                            importer.provider)
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-import") as pool:
            yield lambda batch: pool.submit(importer.check_and_embed, batch)


def _prepare_processes(settings: Settings, provider: EmbeddingProvider, known: int | None,
                       size: int) -> int:
    """Worker processes for the checks and embedding of a large import: only for a provider
    that computes in Python (the hash model holds the GIL; a network or native model releases
    it, so a thread overlaps it already) and that can be sent to another process."""
    count = settings.import_prepare_processes
    if not count or getattr(provider, "provider", None) != "hash":
        return 0
    if known is not None and known < _PROCESS_MIN_BATCHES * size:
        return 0  # starting a process costs about a second
    try:
        pickle.dumps((settings, provider))
    except Exception:  # anything unpicklable: stay in a thread
        return 0
    return count


def _run(importer: _Importer, connections: list[psycopg.Connection],
         items: Iterator[NumberedRow | MalformedLine], size: int,
         progress: Callable[[ImportStats], None] | None, processes: int = 0) -> None:
    """Checks and embedding of the next batches run in a worker thread (or process) while
    batch n is resolved (audience, dedup within the batch) and handed to the loaders. Each
    loader writes its share of each batch, in batch order, on its own connection; the
    caller's connection only resolves (and analyses). Results are merged, and progress
    reported, in batch order."""
    stats = importer.stats
    writers = [importer.on(c) for c in connections] or [importer]
    pools = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"memory-import-load-{i}")
             for i in range(len(connections))]
    statistics = _Statistics(importer.conn)
    in_flight: deque[_Pending] = deque()
    max_in_flight = 2

    def finish(pending: _Pending) -> None:
        outcomes: list[_Outcome] = []
        rejected = pending.rejected
        for write in pending.writes:
            done, failed = write.result()
            outcomes.extend(done)
            rejected.extend(failed)
        if pending.error and pending.error not in stats.embedding_errors:
            stats.embedding_errors.append(pending.error)
        stats.rows += pending.count
        accepted = 0
        for outcome in outcomes:
            accepted += outcome.accepted
            stats.accepted += outcome.accepted
            stats.deduplicated += outcome.deduplicated
            stats.chunks += outcome.chunks
            stats.embedded += outcome.embedded
            stats.assertions_created += outcome.assertions_created
            stats.assertions_activated += outcome.assertions_activated
            stats.evidence += outcome.evidence
        stats.rejected.extend(sorted(rejected, key=lambda r: r.line))
        stats.batches += 1
        statistics.wrote(accepted)
        if progress:
            progress(stats)

    with _preparer(importer, processes) as prepare:
        try:
            batches = _batches(items, size)
            prepared: deque[Future] = deque()
            for batch in islice(batches, 2):
                prepared.append(prepare(batch))
            while prepared:
                result = prepared.popleft().result()
                for batch in islice(batches, 1):
                    prepared.append(prepare(batch))
                count, rows, rejected, error = (
                    _attach(result) if processes else result)
                rows, unreachable, repeats = importer.resolve(rows)
                rejected.extend(unreachable)
                generations = importer.generations_for(rows)
                if importer.conn.info.transaction_status == TransactionStatus.INTRANS:
                    importer.conn.commit()  # the loaders must see a new generation row
                if not pools:
                    done = Future()
                    done.set_result(_write_share(importer, rows, repeats, generations))
                    finish(_Pending(count, rejected, error, [done]))
                    continue
                shares: list[list[_Row]] = [[] for _ in pools]
                for row in rows:
                    shares[_loader_of(row, len(pools))].append(row)
                writes = [
                    loader.submit(_write_share, writer, share,
                                  {r.line: repeats[r.line] for r in share if r.line in repeats},
                                  generations)
                    for loader, writer, share in zip(pools, writers, shares, strict=True)
                    if share
                ]
                in_flight.append(_Pending(count, rejected, error, writes))
                while len(in_flight) > max_in_flight or (
                        in_flight and all(w.done() for w in in_flight[0].writes)):
                    finish(in_flight.popleft())
            while in_flight:
                finish(in_flight.popleft())
        finally:
            # A failure (here or in a loader): what was handed to the loaders still commits,
            # as the batches before a failing one do in a sequential import.
            for loader in pools:
                loader.shutdown(wait=True)
            while in_flight:
                head = in_flight.popleft()
                if all(w.exception() is None for w in head.writes):
                    finish(head)


def _write_share(importer: _Importer, rows: list[_Row], repeats: dict[int, list[_Row]],
                 generations: dict[str, Generation]) -> tuple[list[_Outcome], list[Rejection]]:
    """Write rows in one transaction; if the database refuses the batch, row by row to find
    the row(s) it refuses. Answers the committed outcomes and the rows refused."""
    rejected: list[Rejection] = []
    if not rows:
        return [], rejected
    try:
        return [importer.write(rows, repeats, generations)], rejected
    except _BatchFailed as exc:
        log.warning("batch rejected by the database (%s); retrying row by row", exc)
    outcomes = []
    for row in rows:
        try:
            own = {row.line: repeats[row.line]} if row.line in repeats else {}
            outcomes.append(importer.write([row], own, generations))
        except _BatchFailed as single:
            diag = single.error.diag.message_primary or str(single.error)
            rejected.append(Rejection(row.line, f"database rejected the row: {diag}",
                                      "database_error"))
    return outcomes, rejected
