"""Imported conversations become conversation turns, like turns written one by one.

A bulk-imported row with a session key and an event time (``session_key`` / ``occurred_at``,
a ``fact``) is a turn of that session (memories/turns.py): after the import's batches are
written, :func:`link_imported_turns` links each such row to the turn before it in its session
and audience, gives its first chunk the context text (the day, the end of the two turns
before) and the context vector (the turn embedded with the turn before it), exactly what
``store_memory`` gives a turn. So a conversation imported as JSONL ranks like the same
conversation written through the API (issue 29, "every way in ranks the same").

Rows are taken in event-time order per session and audience, whatever their order in the
file; the first imported turn of a session links to the newest turn already stored before it.
Only rows without a context yet are linked (a repeated run does nothing); a failed provider
leaves the context vectors to the re-embedding backlog, which fills them in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from itertools import groupby
from typing import Any

import psycopg

from memory_platform.features.memories.bulk.pipeline import batches
from memory_platform.features.memories.turns import previous_turns, walk_contexts
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingError, EmbeddingProvider, key_of

log = logging.getLogger(__name__)

LINK_BATCH = 200  # turns per update (and per embedding call)

# Imported turns still without a context, in the order they are linked.
_UNLINKED = """
    SELECT m.id, m.instance_key, m.session_key, m.visibility_scope, m.audience_key,
           m.occurred_at, c.content, c.embedding_key
      FROM agent_memories m
      JOIN agent_memory_chunks c ON c.instance_key = m.instance_key AND c.memory_id = m.id
                                AND c.chunk_index = 0
     WHERE m.metadata ->> 'memoryClass' = 'import' AND m.source_type = 'fact'
       AND m.session_key IS NOT NULL AND m.occurred_at IS NOT NULL
       AND m.memory_state = 'active' AND c.context IS NULL AND m.created_at >= %s
     ORDER BY m.instance_key, m.session_key, m.visibility_scope, m.audience_key,
              m.occurred_at, m.created_at, m.id
"""
_LINK = """
    UPDATE agent_memories m SET previous_memory_id = v.previous
      FROM unnest(%s::text[], %s::uuid[], %s::uuid[]) AS v(instance_key, id, previous)
     WHERE m.instance_key = v.instance_key AND m.id = v.id
"""
_CONTEXT = """
    UPDATE agent_memory_chunks c
       SET context = v.context,
           context_tsv = to_tsvector('english'::regconfig, v.context)
                         || to_tsvector('german'::regconfig, v.context),
           context_embedding = CASE WHEN c.embedding_key = v.key THEN v.vector END,
           context_memory_ids = string_to_array(v.copied, ',')::uuid[]
      FROM unnest(%s::text[], %s::uuid[], %s::text[], %s::text[], %s::vector[], %s::text[])
           AS v(instance_key, memory_id, context, key, vector, copied)
     WHERE c.instance_key = v.instance_key AND c.memory_id = v.memory_id
       AND c.chunk_index = 0 AND c.context IS NULL
"""


def link_imported_turns(conn: psycopg.Connection, settings: Settings,
                        provider: EmbeddingProvider, since: datetime) -> int:
    """Link the turns imported since ``since`` (see the module text); answers how many."""
    rows = conn.execute(_UNLINKED, (since,)).fetchall()
    linked = 0
    for _, group in groupby(rows, key=lambda r: r[1:5]):
        turns = list(group)
        instance, session, kind, key = turns[0][1:5]
        before = previous_turns(conn, instance, session, kind, key, turns[0][5],
                                exclude=[t[0] for t in turns])
        for part in batches(_contexts(turns, before), LINK_BATCH):
            _write(conn, settings, provider, part)
            linked += len(part)
    return linked


def _contexts(turns: list[tuple], before: list[tuple[Any, str, Any]]) -> Iterator[tuple]:
    """Per turn: (instance, id, the turn before's id, context text, passage or None, the
    chunk's embedding key, the ids its context copies off the links), walking the session in
    order."""
    walked = walk_contexts(before, ((t[0], t[5], t[6]) for t in turns))
    for turn, (memory_id, previous, text, passage, copied) in zip(turns, walked, strict=True):
        yield (turn[1], memory_id, previous, text, passage, turn[7], copied)


def _write(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider,
           part: list[tuple]) -> None:
    """One transaction: the links, the contexts and (embedded first, outside it) the
    context vectors of ``part``."""
    passages = [p[4] for p in part if p[4] is not None and settings.turn_context_vectors]
    vectors: dict[str, Any] = {}
    if passages:
        try:
            embedded = provider.embed_documents(passages)
            vectors = dict(zip(passages, embedded, strict=True))
        except EmbeddingError as exc:
            log.warning("context vectors of imported turns left to the re-embedding "
                        "backlog: %s", exc)
    key = key_of(provider)
    with conn.transaction():
        conn.execute(_LINK, ([p[0] for p in part], [p[1] for p in part],
                             [p[2] for p in part]))
        conn.execute(_CONTEXT, ([p[0] for p in part], [p[1] for p in part],
                                [p[3] for p in part], [key] * len(part),
                                [vectors.get(p[4]) if p[4] is not None else None
                                 for p in part],
                                # One text per row: unnest cannot take an array of arrays
                                # of different lengths.
                                [",".join(str(i) for i in p[6]) or None for p in part]))

