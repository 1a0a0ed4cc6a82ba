"""Writing a memory's chunks: text slices, their vectors and embedding provenance.

Shared by the write path (store_memory) and the projection outbox, so a chunk written by
either carries the same columns and the same ``metadata.embedding = {key, strategy, model}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.memories.chunking import Chunk
from memory_platform.features.memories.write_rules import embedding_provenance
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.embeddings.generations import Generation


def insert_chunks(conn: psycopg.Connection, instance_key: str, memory_id: UUID,
                  chunks: Sequence[Chunk], vectors: np.ndarray | None,
                  generation: Generation | None, provider: EmbeddingProvider,
                  context: str | None = None,
                  context_vector: np.ndarray | None = None,
                  copied: Sequence[UUID] = ()) -> None:
    """Insert the chunks; without a generation (embedding failed) they are keyword-only.
    ``context`` (a conversation turn's, memories/turns.py) goes to the first chunk, with its
    tsvector made the way ``content_tsv`` is (migration 0017 says why it is no generated
    column), and so does the turn's ``context_vector`` (of the same generation) and the ids of
    the turns the context ``copied`` where the links do not lead to it (deleting one clears it:
    migration 0042)."""
    embedded = generation is not None and vectors is not None
    context_vector = context_vector if embedded else None
    metadata = Jsonb({"embedding": embedding_provenance(
        generation.generation_key, provider.strategy, provider.model)} if embedded else {})
    with conn.cursor() as cur:
        cur.executemany(
            """
            INSERT INTO agent_memory_chunks
                   (instance_key, memory_id, chunk_index, content, start_offset, end_offset,
                    embedding, generation_id, embedding_key, metadata, context_embedding,
                    context, context_tsv)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                    coalesce(to_tsvector('english'::regconfig, %s::text)
                             || to_tsvector('german'::regconfig, %s::text), ''::tsvector))
            """,
            [(instance_key, memory_id, c.index, c.content, c.start, c.end,
              vectors[c.index] if embedded else None,
              generation.id if embedded else None,
              generation.generation_key if embedded else None,
              metadata, context_vector if c.index == 0 else None,
              *[context if c.index == 0 else None] * 3)
             for c in chunks],
        )
        if copied:  # rare (off the links, memories/turns.py): a statement of its own
            cur.execute("UPDATE agent_memory_chunks SET context_memory_ids = %s"
                        " WHERE instance_key = %s AND memory_id = %s AND chunk_index = 0",
                        (list(copied), instance_key, memory_id))
