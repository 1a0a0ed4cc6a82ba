"""The one place that picks the embedding provider the settings select, and caches it."""

from __future__ import annotations

import threading

from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider


def resolve_provider_kind(settings: Settings, *, local_installed: bool | None = None) -> str:
    """The provider ``settings.embedding_provider`` stands for: 'openai', 'local' or 'hash'.

    'auto': OpenAI when a key is configured, else the local model when its
    package is installed, else the hash embedding. It is resolved once per process, at
    start-up; a failing provider raises instead of silently switching (invariant 5)."""
    choice = settings.embedding_provider
    if choice != "auto":
        return choice
    if settings.openai_api_key is not None and settings.openai_api_key.get_secret_value():
        return "openai"
    if local_installed is None:
        from memory_platform.shared.embeddings.local import is_installed

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
        from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider

        return HashEmbeddingProvider(settings.hash_embedding_dimensions)
    if kind == "local":
        from memory_platform.shared.embeddings.local import LocalEmbeddingProvider

        return LocalEmbeddingProvider(settings.local_embedding_model)
    from memory_platform.shared.embeddings.openai_provider import OpenAIEmbeddingProvider

    return OpenAIEmbeddingProvider.from_settings(settings)


def get_provider(settings: Settings) -> EmbeddingProvider:
    """The provider the settings select, one instance per configuration and process.

    Instances are cached because a local model takes seconds and a lot of memory to load, and
    an OpenAI client keeps its connection pool. Explicit 'local' without the extra installed
    raises ``EmbeddingError`` saying how to install it."""
    kind = resolve_provider_kind(settings)
    if kind == "local":
        from memory_platform.shared.embeddings.local import require_installed

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
