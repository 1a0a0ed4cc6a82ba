"""Small real helpers shared by the write-path and retrieval tests (no mocks).

The embedding providers here implement the EmbeddingProvider protocol for real: one fails
the way a provider outage does (EmbeddingError), one is a tiny deterministic model of another
generation (provider 'local', its own model name and dimensions).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg import sql

from memory_platform.embeddings.base import EmbeddingError

# Every table a memory write may touch, all keyed by instance.
WRITE_TABLES = (
    "agent_memory_sources",
    "agent_memories",
    "agent_memory_chunks",
    "agent_memory_assertions",
    "agent_memory_assertion_evidence",
    "agent_memory_assertion_reviews",
    "agent_memory_assertion_embeddings",
    "agent_memory_embedding_generations",
)


def row_counts(conn: psycopg.Connection, instance_key: str) -> dict[str, int]:
    """How many rows of ``instance_key`` each write-path table holds."""
    return {
        table: conn.execute(
            sql.SQL("SELECT count(*) FROM {} WHERE instance_key = %s").format(
                sql.Identifier(table)),
            (instance_key,),
        ).fetchone()[0]
        for table in WRITE_TABLES
    }


def nothing_written(conn: psycopg.Connection, instance_key: str) -> bool:
    return not any(row_counts(conn, instance_key).values())


class OutageEmbedder:
    """A provider whose service is down: every call raises EmbeddingError."""

    provider = "openai"
    model = "text-embedding-3-small"
    dimensions = 1536
    preprocessing = "v1"
    strategy = "openai"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingError("embeddings service unavailable (HTTP 503)")

    def embed_query(self, text: str) -> np.ndarray:
        raise EmbeddingError("embeddings service unavailable (HTTP 503)")


class TinyLocalEmbedder:
    """A deterministic bag-of-words model of another generation ('local', 64 dimensions)."""

    provider = "local"
    model = "tiny-test-model"
    dimensions = 64
    preprocessing = "v1"
    strategy = "local"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "big") % self.dimensions] += 1.0
            out[row, 0] += 0.01  # never an all-zero row
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]
