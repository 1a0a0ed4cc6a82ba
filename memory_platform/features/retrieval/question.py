"""A question's embedding, computed before any database work.

The provider call is network I/O (its timeout times its retries, at worst): it must not hold a
pool connection, let alone sit inside an open transaction. The API's search routes call
:func:`embed_question` before they take a connection and hand the result to the search; a
search called without one embeds first, before its first statement. A context search embeds
its question once, for the assertion and the chunk arm alike.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from memory_platform.shared.embeddings.base import EmbeddingError, EmbeddingProvider, key_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryVector:
    """A question's vector and the generation it belongs to. ``vector`` is None when the
    provider failed (or the question is blank): the search is keyword only then."""

    generation_key: str
    dimensions: int
    similarity_floor: float
    vector: np.ndarray | None
    similarity_scale: tuple[float, float] | None = None  # the provider's (retrieval/scores.py)


def embed_question(provider: EmbeddingProvider, query: str) -> QueryVector:
    """Embed ``query`` with ``provider``; a provider failure gives a vector-less result (the
    search answers from its keyword arms), never an error."""
    vector = None
    if isinstance(query, str) and query.strip():
        try:
            vector = provider.embed_query(query)
        except EmbeddingError as exc:
            log.warning("query embedding failed; keyword-only results: %s", exc)
    return QueryVector(key_of(provider), provider.dimensions, provider.similarity_floor, vector,
                       getattr(provider, "similarity_scale", None))


def vector_of(question: QueryVector, active_generation_key: str | None) -> np.ndarray | None:
    """The question's vector when it belongs to the instance's active generation (only then
    are stored vectors comparable with it), else None."""
    if active_generation_key is None or question.generation_key != active_generation_key:
        return None
    return question.vector
