"""The contract every embedding provider meets (the factory that picks one is ``factory.py``).

Callers (write path, retrieval, re-embedding) only see :class:`EmbeddingProvider`, so the
generation identity (``provider``, ``model``, ``dimensions``, ``preprocessing``) travels with
the vectors and vectors of two generations are never compared with each other.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

PREPROCESSING = "v1"
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._/-]+")

log = logging.getLogger(__name__)


class EmbeddingError(RuntimeError):
    """The provider could not embed (network, HTTP error, bad answer).

    Callers keep the row keyword-only and queue re-embedding; they never fall back to another
    provider, because vectors of different generations must not be compared."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    provider: str
    model: str
    dimensions: int
    preprocessing: str
    strategy: str
    # Cosine similarity that unrelated texts reach with this model: below it, a vector match
    # is noise (retrieval's inclusion gate). Models differ a lot (hash ~0, e5 ~0.75).
    similarity_floor: float
    # (what unrelated texts reach, a clear match): the scale search scores are measured on
    # (retrieval/scores.py); None when not measured for the model (scores stay relative).
    similarity_scale: tuple[float, float] | None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...


def prepare_text(text: str) -> str:
    """Preprocessing ``v1``: NFC and collapsed whitespace.

    Every provider applies it, so the same memory written twice with different line breaks
    yields the same vector; changing it means a new ``PREPROCESSING`` tag (a new generation)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows in float32, so cosine similarity is a dot product everywhere.

    A zero row stays zero; providers make sure they never produce one."""
    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def generation_key(provider: str, model: str, dimensions: int, preprocessing: str) -> str:
    """The identity stamped on every vector: two vectors compare only when their keys match."""
    parts = [provider, model, str(dimensions), preprocessing]
    return ":".join(_KEY_UNSAFE.sub("-", part) for part in parts)


def key_of(provider: EmbeddingProvider) -> str:
    """The generation key of the vectors ``provider`` makes."""
    return generation_key(provider.provider, provider.model, provider.dimensions,
                          provider.preprocessing)


def embed_or_defer(provider: EmbeddingProvider, texts: Sequence[str],
                   what: str) -> np.ndarray | None:
    """Document vectors for ``texts``, or None when the provider fails: the caller writes the
    rows keyword-only and re-embedding fills them later (never another provider's vectors)."""
    try:
        return provider.embed_documents(texts)
    except EmbeddingError as exc:
        log.warning("%s: embedding deferred: %s", what, exc)
        return None
