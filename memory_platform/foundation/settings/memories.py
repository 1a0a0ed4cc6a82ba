"""The write path (memories/): memory size, storage quotas, dedup, when vectors are written,
and chunking."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class MemorySettings(BaseModel):
    """Writing one memory or turn."""

    memory_max_chars: int = Field(16_000, ge=100, description="Largest memory accepted.")
    # Storage quota (memory_platform/features/memories/quota.py, migration 0030): bytes of stored
    # text (memory content and titles, session turns) per user and per instance; a write
    # past either is refused (413 storage_quota_exceeded). 0: no limit.
    quota_user_bytes: int = Field(
        1024 ** 3, ge=0, description="Stored text one user of an instance may hold (bytes of "
        "memory content and titles and of session turns); 0: unlimited.")
    quota_instance_bytes: int = Field(
        50 * 1024 ** 3, ge=0, description="Stored text one instance may hold in all (bytes); "
        "0: unlimited.")
    memory_dedup_window_hours: int = Field(
        720, ge=0, description="A repeat of the same memory within this window is a dedup hit."
    )
    write_vectors: Literal["sync", "deferred"] = Field(
        "sync", description="sync: a write inserts its chunk and assertion vectors (two HNSW "
        "inserts) in its own transaction. deferred: the write stores them keyword-only and "
        "an outbox job (written in the same transaction) adds the vectors moments later; "
        "the API drains those jobs in-process (docs/deferred-vectors.md).")
    turn_context_vectors: bool = Field(
        True, description="Embed each conversation turn together with the turn before it as "
        "it is written (a second vector, about twice the embedding work of a turn; search "
        "finds a reply by the question it answers). Off: writes embed the turn only, and the "
        "re-embedding backlog adds the context vectors later.")
    chunk_target_chars: int = Field(1000, ge=100)
    chunk_overlap_chars: int = Field(150, ge=0)
