"""The contract every embedding provider meets, and the one place that picks a provider.

Callers (write path, retrieval, re-embedding) only see :class:`EmbeddingProvider`, so the
generation identity (``provider``, ``model``, ``dimensions``, ``preprocessing``) travels with
the vectors and two generations are never mixed up (invariant 6).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from memory_platform.settings import Settings

PREPROCESSING = "v1"


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


def resolve_provider_kind(settings: Settings, *, local_installed: bool | None = None) -> str:
    """The provider ``settings.embedding_provider`` stands for: 'openai', 'local' or 'hash'.

    'auto' follows DESIGN.md: OpenAI when a key is configured, else the local model when its
    package is installed, else the hash embedding. It is resolved once per process, at
    start-up; a failing provider raises instead of silently switching (invariant 5)."""
    choice = settings.embedding_provider
    if choice != "auto":
        return choice
    if settings.openai_api_key is not None and settings.openai_api_key.get_secret_value():
        return "openai"
    if local_installed is None:
        from memory_platform.embeddings.local import is_installed

        local_installed = is_installed(settings.local_embedding_model)
    return "local" if local_installed else "hash"


_CACHE: dict[tuple[object, ...], EmbeddingProvider] = {}
_CACHE_LOCK = threading.Lock()


def _cache_key(kind: str, settings: Settings) -> tuple[object, ...]:
    if kind == "hash":
        return (kind, settings.hash_embedding_dimensions)
    if kind == "local":
        return (kind, settings.local_embedding_model)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return (
        kind,
        key,
        settings.openai_base_url,
        settings.openai_embedding_model,
        settings.openai_embedding_dimensions,
        settings.openai_embedding_batch_size,
        settings.embedding_timeout_seconds,
        settings.embedding_max_retries,
        settings.embedding_retry_backoff_seconds,
    )


def _build(kind: str, settings: Settings) -> EmbeddingProvider:
    if kind == "hash":
        from memory_platform.embeddings.hashing import HashEmbeddingProvider

        return HashEmbeddingProvider(settings.hash_embedding_dimensions)
    if kind == "local":
        from memory_platform.embeddings.local import LocalEmbeddingProvider

        return LocalEmbeddingProvider(settings.local_embedding_model)
    from memory_platform.embeddings.openai_provider import OpenAIEmbeddingProvider

    return OpenAIEmbeddingProvider.from_settings(settings)


def get_provider(settings: Settings) -> EmbeddingProvider:
    """The provider the settings select, one instance per configuration and process.

    Instances are cached because a local model takes seconds and a lot of memory to load, and
    an OpenAI client keeps its connection pool. Explicit 'local' without the extra installed
    raises :class:`EmbeddingError` saying how to install it."""
    kind = resolve_provider_kind(settings)
    if kind == "local":
        from memory_platform.embeddings.local import require_installed

        require_installed(settings.local_embedding_model)
    key = _cache_key(kind, settings)
    with _CACHE_LOCK:
        provider = _CACHE.get(key)
        if provider is None:
            provider = _CACHE[key] = _build(kind, settings)
    return provider


def clear_provider_cache() -> None:
    """Forget cached providers (tests, or a process that reloads its settings)."""
    with _CACHE_LOCK:
        _CACHE.clear()
