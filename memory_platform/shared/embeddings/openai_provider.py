"""Embeddings from the OpenAI API or any OpenAI-compatible server (vLLM, Ollama, LM Studio).

The SDK's own retries are off (``max_retries=0``): its defaults back off for up to a minute,
which would stall a write request. This module retries 429/5xx/connection failures a bounded
number of times with a short backoff, then raises :class:`EmbeddingError` and the caller
keeps the row keyword-only until re-embedding. Answers are validated before use, because a
vector of the wrong shape or order would be stored silently and poison similarity scores.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import openai

from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import (
    PREPROCESSING,
    EmbeddingError,
    l2_normalise,
    prepare_text,
)

_RETRYABLE = (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError)
_MAX_DETAIL_CHARS = 300


def accepts_dimensions(model: str) -> bool:
    """Only the text-embedding-3 family can shorten its vectors; others reject the field."""
    return model.startswith("text-embedding-3")


class OpenAIEmbeddingProvider:
    provider = "openai"
    preprocessing = PREPROCESSING
    strategy = "openai"
    similarity_floor = 0.15  # text-embedding-3: unrelated texts mostly score below this
    # Any model behind an OpenAI-compatible endpoint: not measured here, so scores stay
    # relative unless MEMORY_RETRIEVAL_SIMILARITY_SCALE names the model's scale.
    similarity_scale = None

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        model: str,
        dimensions: int,
        batch_size: int,
        timeout_seconds: float,
        max_retries: int,
        backoff_seconds: float,
    ) -> None:
        self.model = model
        self.dimensions = dimensions
        self._api_key = api_key
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff_seconds = backoff_seconds
        self._client = openai.OpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_seconds
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbeddingProvider:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        if not key:
            raise EmbeddingError(
                "embedding provider 'openai' needs MEMORY_OPENAI_API_KEY "
                "(any non-empty value for a keyless OpenAI-compatible server)"
            )
        return cls(
            api_key=key,
            base_url=settings.openai_base_url,
            model=settings.openai_embedding_model,
            dimensions=settings.openai_embedding_dimensions,
            batch_size=settings.openai_embedding_batch_size,
            timeout_seconds=settings.embedding_timeout_seconds,
            max_retries=settings.embedding_max_retries,
            backoff_seconds=settings.embedding_retry_backoff_seconds,
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        prepared = [prepare_text(text) for text in texts]
        empty = [position for position, text in enumerate(prepared) if not text]
        if empty:
            raise EmbeddingError(
                f"OpenAI embeddings reject empty input (texts at positions {empty[:10]})"
            )
        out = np.empty((len(prepared), self.dimensions), dtype=np.float32)
        for start in range(0, len(prepared), self._batch_size):
            batch = prepared[start : start + self._batch_size]
            out[start : start + len(batch)] = self._embed_batch(batch)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        response = self._request_with_retries(batch)
        return l2_normalise(self._validated(response, len(batch)))

    def _request_with_retries(self, batch: list[str]) -> Any:
        extra: dict[str, Any] = {}
        if accepts_dimensions(self.model):
            extra["dimensions"] = self.dimensions
        attempt = 0
        while True:
            failure: Exception
            try:
                return self._client.embeddings.create(
                    input=batch, model=self.model, encoding_format="float", **extra
                )
            except _RETRYABLE as exc:
                if attempt < self._max_retries:
                    time.sleep(self._backoff_seconds * (2**attempt))
                    attempt += 1
                    continue
                failure = exc
            except Exception as exc:  # HTTP 4xx, undecodable body, SDK surprises
                failure = exc
            # Raised outside the except blocks, so the SDK's exception (whose message may
            # quote a server echoing the Authorization header) is neither cause nor context.
            raise self._error(failure, attempts=attempt + 1)

    def _validated(self, response: Any, expected: int) -> np.ndarray:
        """The vectors in input order, or EmbeddingError if the answer does not fit."""
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise EmbeddingError(f"OpenAI embeddings answer without a data list ({self.model})")
        if len(data) != expected:
            raise EmbeddingError(
                f"OpenAI embeddings answered {len(data)} vectors for {expected} inputs "
                f"({self.model})"
            )
        indices = [getattr(item, "index", None) for item in data]
        if not all(type(index) is int for index in indices) or sorted(indices) != list(
            range(expected)
        ):
            raise EmbeddingError(
                f"OpenAI embeddings answer has indices {indices[:10]}, expected 0..{expected - 1} "
                f"({self.model})"
            )
        ordered = [item for _, item in sorted(zip(indices, data, strict=True), key=_first)]
        vectors = [getattr(item, "embedding", None) for item in ordered]
        try:
            matrix = np.array(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            lengths = sorted({len(v) for v in vectors if isinstance(v, list)})
            raise EmbeddingError(
                f"OpenAI embeddings answer holds malformed vectors (lengths {lengths}, "
                f"expected {self.dimensions}; {self.model})"
            ) from None
        if matrix.shape != (expected, self.dimensions):
            raise EmbeddingError(
                f"OpenAI embeddings answer has shape {matrix.shape}, expected "
                f"({expected}, {self.dimensions}) ({self.model})"
            )
        if not np.isfinite(matrix).all() or (np.linalg.norm(matrix, axis=1) == 0.0).any():
            raise EmbeddingError(
                f"OpenAI embeddings answer holds a zero or non-finite vector ({self.model})"
            )
        return matrix

    def _error(self, exc: Exception, *, attempts: int) -> EmbeddingError:
        """A message an operator can act on, which never repeats the API key."""
        status = getattr(exc, "status_code", None)
        detail = str(exc)
        if self._api_key:
            detail = detail.replace(self._api_key, "***")
        detail = " ".join(detail.split())[:_MAX_DETAIL_CHARS]
        where = f"HTTP {status}" if status is not None else type(exc).__name__
        return EmbeddingError(
            f"OpenAI embeddings failed ({self.model}, {where}, "
            f"{attempts} attempt{'s' if attempts != 1 else ''}): {detail}"
        )


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]
