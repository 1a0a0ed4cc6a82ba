"""Bulk import (memories/bulk/): batch size, concurrent loaders and preparers, and when the
indexes are dropped and rebuilt around a large import."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ImportSettings(BaseModel):
    """Bulk imports."""

    import_batch_size: int = Field(
        500, ge=1, le=5000,
        description="Rows per bulk-import transaction (one embedding call, one COPY each).",
    )
    import_rebuild_index_min_rows: int = Field(
        10_000, ge=0,
        description="Auto mode drops and rebuilds the generation's HNSW index around an "
        "import larger than this and than the rows the index already holds.",
    )
    import_loaders: int = Field(
        2, ge=1, le=8,
        description="Connections that write an import's batches concurrently (rows are "
        "assigned by their dedup key, so repeats meet in one loader); 1 writes on the "
        "caller's connection.",
    )
    import_prepare_processes: int = Field(
        1, ge=0, le=8,
        description="Worker processes that check, chunk and hash-embed a large import's "
        "batches beside the process that writes them (0: a thread; other providers always "
        "use a thread).",
    )
    import_rebuild_fulltext: bool = Field(
        True,
        description="Auto mode also drops the GIN full-text indexes of chunks and assertions "
        "for an import larger than those tables and builds them once after the load.",
    )
