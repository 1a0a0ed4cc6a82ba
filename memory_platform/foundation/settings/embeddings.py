"""Embeddings (embeddings/, projection/reembed.py): the provider and its model, request
batching and retries, re-embedding runs and the bulk HNSW index builds."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class EmbeddingSettings(BaseModel):
    """Embedding providers, re-embedding and vector index builds."""

    embedding_provider: Literal["auto", "openai", "local", "hash"] = "auto"
    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    openai_embedding_model: str = "text-embedding-3-small"
    openai_embedding_dimensions: int = Field(1536, ge=1, le=2000)
    hash_embedding_dimensions: int = Field(1536, ge=1, le=2000)
    openai_embedding_batch_size: int = Field(
        256, ge=1, le=2048, description="Inputs per /v1/embeddings request."
    )
    embedding_timeout_seconds: float = Field(
        30.0, gt=0.0, description="Timeout of one embedding request (connect, read, write)."
    )
    embedding_max_retries: int = Field(
        2, ge=0, le=10, description="Retries of a request after 429, 5xx or connection errors."
    )
    embedding_retry_backoff_seconds: float = Field(
        0.5, ge=0.0, le=30.0, description="First retry delay; doubles on each further retry."
    )
    local_embedding_model: Literal["e5-small", "use"] = Field(
        "e5-small",
        description="Offline model of the 'local' provider (extra: memory-platform[local]).",
    )
    reembed_batch_size: int = Field(
        128, ge=1, le=2048,
        description="Chunks/assertions re-embedded per transaction (rows locked meanwhile).",
    )
    reembed_run_limit: int = Field(
        200, ge=1, le=5000,
        description="Rows (assertions, then chunks) one re-embedding run converts: a POST "
        "/internal/memory/reembed without a limit, or one round of `embeddings reembed`.",
    )
    reembed_chain_batches: int = Field(
        5, ge=1, description="Re-embedding batches the daily chain converts per partition.")
    index_build_maintenance_work_mem: str = Field(
        "1GB", pattern=r"^\d+\s*(kB|MB|GB|TB)?$",
        description="maintenance_work_mem of a bulk HNSW index (re)build: the graph must fit.",
    )
    index_build_parallel_workers: int = Field(
        2, ge=0, le=64, description="max_parallel_maintenance_workers of an HNSW index build."
    )
