"""Embedding providers, generations and re-embedding."""

from memory_platform.embeddings.base import (
    EmbeddingError,
    EmbeddingProvider,
    clear_provider_cache,
    get_provider,
    resolve_provider_kind,
)

__all__ = [
    "EmbeddingError",
    "EmbeddingProvider",
    "clear_provider_cache",
    "get_provider",
    "resolve_provider_kind",
]
