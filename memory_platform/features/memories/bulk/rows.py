"""Stage 1 of a bulk import: everything about a row that needs no database.

A row is checked against the write path's rules (shape, types, content validation with
credential rejection, subject refs, kinds, the event time ``occurred_at``), chunked, and its
texts embedded with the rest of its batch in one provider call. :func:`prepare` runs in a
worker thread or a worker process; :func:`attach` gives each row its vectors in pgvector's
wire format.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memory_platform.features.memories.bulk.reader import MalformedLine, NumberedRow
from memory_platform.features.memories.bulk.results import Rejection
from memory_platform.features.memories.bulk.wire import PackedVector, packed_vectors
from memory_platform.features.memories.chunking import Chunk, chunk_text
from memory_platform.features.memories.validation import (
    clean_content,
    clean_metadata,
    clean_occurred_at,
    clean_title,
)
from memory_platform.features.memories.write_rules import (
    ASSERTION_SOURCE_TYPES,
    clean_subject_refs,
    embedding_texts,
    fact_slot,
    validate_kind,
)
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import refuse_secret
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AUDIENCE_KINDS, AccessContext, Audience
from memory_platform.shared.embeddings.base import EmbeddingError, EmbeddingProvider

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
              "assertion_type", "trust_class", "title", "metadata", "occurred_at", "subject",
              "predicate")
_ROW_FIELD_SET = frozenset(ROW_FIELDS)


@dataclass(slots=True)
class ImportRow:
    """A row that passed the checks; resolution (stage 2) fills ``ctx``, ``audience`` and
    ``subject``."""

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
    # The event time (ISO-8601 with an offset in the row; UTC here), None when not given.
    occurred_at: datetime | None = None
    # The slot a fact fills (write_rules.fact_slot): subject and predicate, or (None, None).
    slot: tuple[str | None, str | None] = (None, None)
    ctx: AccessContext | None = None
    audience: Audience | None = None
    subject: str = ""
    memory_id: uuid.UUID = field(default_factory=uuid.uuid4)
    source_id: uuid.UUID = field(default_factory=uuid.uuid4)
    # pgvector wire format of the row's embedded texts (chunks, then the whole fact's text)
    vectors: list[PackedVector] | None = None

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
    refuse_secret(value, field=name)
    return value


def check_row(value: object, settings: Settings, line: int, *,
              now: datetime | None = None) -> ImportRow:
    """Everything about a row that needs no database: shape, types, content rules, chunks.
    ``occurred_at`` follows the write path's rule against ``now`` (default: the clock)."""
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
    slot = fact_slot(value.get("subject"), value.get("predicate"), refs, assertion_type)
    occurred_at = clean_occurred_at(value.get("occurred_at"), now=now or datetime.now(UTC),
                                    field="occurred_at")
    chunks = chunk_text(content, settings.chunk_target_chars, settings.chunk_overlap_chars)
    return ImportRow(line, value, content, refs, source_type, trust_class, assertion_type,
                     title, metadata, content_hash(content), chunks, occurred_at, slot)


# What prepare answers: the items' count, the rows that passed the checks, the rejected ones,
# an embedding error, and the vectors (one matrix) with each row's span of it.
Prepared = tuple[int, list[ImportRow], list[Rejection], str | None, np.ndarray | None,
                 list[tuple[int, int]]]
# What attach answers: the same without the matrix, the vectors now on the rows.
Checked = tuple[int, list[ImportRow], list[Rejection], str | None]


def prepare(items: list[NumberedRow | MalformedLine], settings: Settings,
            provider: EmbeddingProvider) -> Prepared:
    """Everything about a batch that needs no database. A module function, so that a worker
    process can run it (the matrix travels back as one array, cheap to pickle)."""
    rows: list[ImportRow] = []
    rejected: list[Rejection] = []
    now = datetime.now(UTC)
    for item in items:
        if isinstance(item, MalformedLine):
            rejected.append(Rejection(item.line, item.reason, "malformed_json"))
            continue
        try:
            rows.append(check_row(item.value, settings, item.line, now=now))
        except InvalidInput as exc:
            rejected.append(Rejection(item.line, exc.message, exc.code))
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for row in rows:
        row_texts = embedding_texts(row.content, row.chunks, asserted=row.is_fact)
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


def attach(prepared: Prepared) -> Checked:
    """The rows of a prepared batch with their vectors in pgvector's wire format."""
    count, rows, rejected, error, matrix, spans = prepared
    if matrix is not None:
        packed = packed_vectors(matrix)
        for row, (start, end) in zip(rows, spans, strict=True):
            row.vectors = packed[start:end]
    return count, rows, rejected, error


def check_and_embed(items: list[NumberedRow | MalformedLine], settings: Settings,
                    provider: EmbeddingProvider) -> Checked:
    """Stage 1 in this process: :func:`prepare`, then :func:`attach`."""
    return attach(prepare(items, settings, provider))
