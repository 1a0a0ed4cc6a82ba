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

from memory_platform.shared.embeddings.base import EmbeddingError
from tests.support.tables import row_counts


def nothing_written(conn: psycopg.Connection, instance_key: str) -> bool:
    """Whether no ledger table holds a row of ``instance_key``."""
    return not any(row_counts(conn, instance_key).values())


class OutageEmbedder:
    """A provider whose service is down: every call raises EmbeddingError."""

    provider = "openai"
    model = "text-embedding-3-small"
    dimensions = 1536
    preprocessing = "v1"
    strategy = "openai"
    similarity_floor = 0.0

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
    similarity_floor = 0.0

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
