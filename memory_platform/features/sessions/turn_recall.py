"""Session items recalled as conversation turns: every way in ranks the same (issue 29.3).

An item appended to a session (``items.append_items``) is kept verbatim in
``agent_context_messages``. Context search's history arm finds it by its words alone. A turn
stored through ``POST /api/v1/memory`` gets much more (memories/turns.py): its vector, a
*context vector* (the turn embedded with the turn before it), a context text (the day and the
two turns before) and a link to the turn before. On LoCoMo's real conversations that is the
difference between R@10 0.60 and 0.77 (docs/benchmarks.md, "Every way in").

So each new item that a person or an assistant said (role ``user`` or ``assistant``, with an
author, with text) also becomes a **turn memory**:

* an ``agent_memories`` row of source type ``message`` (memory class ``session``);
* with **the item's own id**, so ``memory:<id>`` and ``message:<id>`` name the same turn:
  context search answers it as the item (``context._memory_identity``), and its history arm
  leaves it to the memory arm (``context._not_recalled``). ``metadata.sourceMessageId``
  says so too, so every erasure of the item removes the row
  (maintenance/erasure_statements.py);
* in the **author's private audience**: the history rule shows a shared session's items to
  every participant, the memory only to its author, so the copy never widens who reads the
  text. A participant still finds the others' items through the history arm;
* with the session key and the item's event time (its ``occurredAt``, else when it was
  appended), linked to the author's turn before it in the session (an earlier item, or a turn
  written as a memory), with the context and the vectors a memory turn gets.

What it is not:

* **No assertion.** A turn memory is recall material, not a reviewed fact. Facts drawn from
  the session still come from its maintenance: shared facts and the flush.
* **No dedup.** Two "ok"s are two turns.
* **Not counted twice against the quota.** The item's bytes are counted already (migration
  0041).
* **No text beyond ``memory_max_chars``** (its first part is recalled; the item stays whole).

The item is written first, in the append's transaction. Its turn follows, after that
transaction committed:

1. read the turns before;
2. embed every chunk and context passage of the batch in one provider call, with no
   transaction open;
3. write the turns, one short transaction each (in event-time order, so a turn's link
   always names a stored row).

A provider failure stores the turns keyword-only, and the re-embedding backlog fills the
vectors. A database failure loses only the turn memory: the item is stored, and its words
still find it. ``session_turn_recall = false`` turns all of this off.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.memories.chunk_rows import insert_chunks
from memory_platform.features.memories.chunking import Chunk, chunk_text
from memory_platform.features.memories.turns import (
    SESSION_TURN_CLASS,
    SESSION_TURN_SOURCE,
    previous_turns,
    walk_contexts,
)
from memory_platform.features.memories.vectors import enqueue_vectors, notify_written
from memory_platform.features.memories.write_rules import memory_metadata
from memory_platform.foundation.db.units import commit_if_idle, rollback_if_open
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.embeddings.base import EmbeddingProvider, embed_or_defer
from memory_platform.shared.embeddings.factory import get_provider
from memory_platform.shared.embeddings.generations import ensure_generation

log = logging.getLogger(__name__)

TURN_ROLES = ("user", "assistant")   # who says a turn; system and tool items are not turns

# The new items that are turns and not recalled yet, grouped by author, in event-time order.
_APPENDED = """
    SELECT msg.id, msg.user_id, msg.role, msg.content,
           coalesce(msg.occurred_at, msg.created_at)
      FROM agent_context_messages msg
     WHERE msg.instance_key = %s AND msg.session_key = %s AND msg.id = ANY(%s)
       AND msg.role = ANY(%s) AND msg.user_id IS NOT NULL AND btrim(msg.content) <> ''
       AND NOT EXISTS (SELECT 1 FROM agent_memories m
                        WHERE m.instance_key = msg.instance_key AND m.id = msg.id)
     ORDER BY msg.user_id, coalesce(msg.occurred_at, msg.created_at), msg.seq
"""

_INSERT = """
    INSERT INTO agent_memories
           (id, instance_key, memory_scope, visibility_scope, audience_key, user_id,
            session_key, source_type, content, content_hash, metadata, occurred_at,
            previous_memory_id)
    VALUES (%s, %s, 'session', 'private', %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING
"""


@dataclass(frozen=True)
class _Turn:
    """One item to recall as a turn, with what the write needs."""

    id: uuid.UUID
    author: str
    content: str
    occurred_at: datetime
    previous_id: uuid.UUID | None
    context: str
    passage: str | None
    chunks: list[Chunk]
    copied: tuple[uuid.UUID, ...]  # the turns its context copies, when off the links


def recall_turns(conn: psycopg.Connection, settings: Settings, instance_key: str,
                 session_key: str, message_ids: Sequence[uuid.UUID], *,
                 provider: EmbeddingProvider | None = None) -> int:
    """Write the turn memories of the new items ``message_ids`` of the session (see the module
    text), with no transaction open on ``conn`` when it is called; answers how many. Never
    raises on a database error after the items are stored: it is logged, the items stay."""
    if not settings.session_turn_recall or not message_ids:
        return 0
    try:
        turns = _plan(conn, settings, instance_key, session_key, list(message_ids))
        if not turns:
            commit_if_idle(conn)
            return 0
        provider = provider or get_provider(settings)
        commit_if_idle(conn)   # no transaction stays open while the provider is called
        texts = [c.content for t in turns for c in t.chunks]
        passages = [t.passage for t in turns if t.passage is not None]
        vectors = embed_or_defer(provider, texts + passages, "session turns")
        _write(conn, settings, instance_key, session_key, turns, vectors, provider)
        return len(turns)
    except psycopg.Error as exc:
        if conn.closed or conn.broken:
            raise
        rollback_if_open(conn)
        # No session key or text in the log: either may name a person.
        log.warning("%d session items stored without their turn memories: %s",
                    len(message_ids), type(exc).__name__)
        return 0


def _plan(conn: psycopg.Connection, settings: Settings, instance_key: str,
          session_key: str, message_ids: list[uuid.UUID]) -> list[_Turn]:
    """The turns of the new items, each with the turn before it and its context, per author
    (a private audience of its own) in event-time order."""
    rows = conn.execute(_APPENDED, (instance_key, session_key, message_ids,
                                    list(TURN_ROLES))).fetchall()
    planned: list[_Turn] = []
    for author, group in groupby(rows, key=lambda row: row[1]):
        items = [(ident, content[:settings.memory_max_chars], at)
                 for ident, _, _, content, at in group]
        before = previous_turns(conn, instance_key, session_key, "private", author,
                                items[0][2], exclude=[i[0] for i in items])
        chunked = [(ident, content, at, chunk_text(content, settings.chunk_target_chars,
                                                   settings.chunk_overlap_chars))
                   for ident, content, at in items]
        # Walked over the first chunks, as the import does (memories/bulk/turns.py): a
        # context vector embeds the turn before with the turn's first chunk.
        walked = walk_contexts(before, ((i, at, chunks[0].content)
                                        for i, _, at, chunks in chunked))
        for (ident, content, at, chunks), (_, previous, context, passage, copied) in zip(
                chunked, walked, strict=True):
            planned.append(_Turn(ident, author, content, at, previous, context,
                                 passage if settings.turn_context_vectors else None, chunks,
                                 copied))
    return planned


def _write(conn: psycopg.Connection, settings: Settings, instance_key: str,
           session_key: str, turns: list[_Turn], vectors: np.ndarray | None,
           provider: EmbeddingProvider) -> None:
    """Every turn's memory row and chunks (with their vectors, or an outbox job for them when
    writes defer their vectors), in event-time order, one short transaction per turn: the
    rows a turn's write locks (its words' counts, migration 0033) are held for one turn, not
    for a whole batch, so concurrent appends do not queue behind each other's batches."""
    defer = settings.write_vectors == "deferred"
    generation = None
    if vectors is not None:
        with conn.transaction():
            generation = ensure_generation(conn, instance_key, provider)
    chunk_at, passage_at = 0, sum(len(t.chunks) for t in turns)
    for turn in turns:
        own = None if vectors is None else vectors[chunk_at:chunk_at + len(turn.chunks)]
        context_vector = None
        if vectors is not None and turn.passage is not None:
            context_vector, passage_at = vectors[passage_at], passage_at + 1
        chunk_at += len(turn.chunks)
        metadata = memory_metadata({"sourceMessageId": str(turn.id)}, SESSION_TURN_CLASS)
        with conn.transaction():
            inserted = conn.execute(_INSERT, (
                turn.id, instance_key, turn.author, turn.author, session_key,
                SESSION_TURN_SOURCE, turn.content, content_hash(turn.content),
                Jsonb(metadata), turn.occurred_at, turn.previous_id)).rowcount
            if not inserted:   # already recalled (a repeated call): nothing more to write
                continue
            if defer and generation is not None and own is not None:
                insert_chunks(conn, instance_key, turn.id, turn.chunks, None, None, provider,
                              context=turn.context, copied=turn.copied)
                enqueue_vectors(conn, instance_key, turn.id, own, len(turn.chunks),
                                generation, provider, None, context_vector)
            else:
                insert_chunks(conn, instance_key, turn.id, turn.chunks, own, generation,
                              provider, context=turn.context, context_vector=context_vector,
                              copied=turn.copied)
    if defer and vectors is not None:
        notify_written()
