"""Operator maintenance (``/internal/memory``): status, re-embedding, retention, workspace
sync, erasure.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import DreamOut, Strict
from memory_platform.features.maintenance.profiles import USER_ID_MAX_CHARS
from memory_platform.shared.access import AudienceKind


class ReembedRequest(Strict):
    limit: int | None = Field(
        None, ge=1, le=5000, description="Most rows converted (default: MEMORY_REEMBED_RUN_LIMIT).")


class ReembedResponse(BaseModel):
    """One bounded re-embedding batch (``memory_platform.features.projection.reembed``)."""

    model_config = ConfigDict(extra="forbid")
    instance_key: str
    generation_key: str
    chunks_converted: int
    assertions_embedded: int
    remaining_chunks: int
    remaining_assertions: int
    batches: int
    error: str | None = None
    graph_embedded: int = Field(0, description="Knowledge-graph entities and claims embedded "
                                "in this run.")
    graph_deferred: int = Field(0, description="Graph items left without a vector (provider "
                                "failure).")


class _Report(BaseModel):
    """A part of the operator report, validated from ``memory_status`` (camelCase keys): a
    key the model does not know is an error, so the document cannot fall behind."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MemoryCounts(_Report):
    by_scope: dict[str, int] = Field(alias="byScope")
    by_visibility: dict[str, int] = Field(alias="byVisibility")
    by_source_type: dict[str, int] = Field(alias="bySourceType")
    by_state: dict[str, int] = Field(alias="byState")


class AssertionCounts(_Report):
    by_status: dict[str, int] = Field(alias="byStatus")
    by_review_state: dict[str, int] = Field(alias="byReviewState")


class ActiveGeneration(_Report):
    id: int
    key: str
    provider: str
    model: str
    dimensions: int


class GenerationCount(_Report):
    id: int
    key: str
    status: str
    chunks: int


class GraphBacklog(_Report):
    entities: int
    claims: int


class ReembedBacklog(_Report):
    chunks: int
    assertions: int
    graph: GraphBacklog = Field(description="Active graph entities and claims without a "
                                "vector of the active generation.")


class EmbeddingStatus(_Report):
    active: ActiveGeneration | None
    generations: list[GenerationCount]
    reembed_backlog: ReembedBacklog = Field(alias="reembedBacklog")


class OutboxStatus(_Report):
    pending: int
    failed: int
    oldest_age_seconds: float | None = Field(alias="oldestAgeSeconds")


class BrokenIndex(_Report):
    index: str
    table: str
    kind: str
    state: str
    generation_key: str | None = Field(alias="generationKey")


class IndexStatus(_Report):
    healthy: bool
    broken: list[BrokenIndex]
    repair: str | None


class SessionStatus(_Report):
    """The maintenance queue (due now; waiting out a failure's backoff), the context graph's
    size, and the last completed flush and compaction."""

    due: int
    waiting_for_retry: int = Field(alias="waitingForRetry")
    oldest_due_age_seconds: float | None = Field(alias="oldestDueAgeSeconds")
    sessions: int
    runs: int
    messages: int
    summaries: int
    last_flush_at: str | None = Field(alias="lastFlushAt")
    last_compaction_at: str | None = Field(alias="lastCompactionAt")


class ModelUsageWindow(_Report):
    """The Dreams' own model calls summed over a window (docs/observability.md)."""

    dreams: int = Field(description="Dreams that called their model.")
    calls: int
    prompt_tokens: int = Field(alias="promptTokens")
    completion_tokens: int = Field(alias="completionTokens")
    total_tokens: int = Field(alias="totalTokens")
    estimated_cost_usd: float = Field(
        alias="estimatedCostUsd", description="Estimated from MEMORY_MODEL_PRICES; calls of "
        "unpriced models count 0 (see unpricedCalls).")
    unpriced_calls: int = Field(alias="unpricedCalls")


class ModelUsageStatus(_Report):
    last24h: ModelUsageWindow
    all_time: ModelUsageWindow = Field(alias="allTime")


class PromptFile(_Report):
    path: str
    sha256: str | None


class GraphCounts(_Report):
    """The knowledge graph's items by status."""

    entities: dict[str, int]
    claims: dict[str, int]
    edges: dict[str, int]


class WorkspaceStatus(_Report):
    """The workspace's synced prompt files (memory/**/*.md and the bootstrap files)."""

    files: int
    last_changed_at: str | None = Field(alias="lastChangedAt",
                                        description="When a sync last changed a file's row.")
    prompt_files: list[PromptFile] = Field(alias="promptFiles", description="Path and "
                                           "content hash of each (the first 50 by path).")
    last_sync: dict[str, Any] | None = Field(
        alias="lastSync", description="The last sync's result: files, added, updated, "
        "unchanged, deleted, refused (path and reason), truncated, seconds, syncedAt; null "
        "before the first sync.")


class StatusResponse(_Report):
    instance: str
    memories: MemoryCounts
    assertions: AssertionCounts
    evidence: int
    conflicts: dict[str, int]
    embeddings: EmbeddingStatus
    outbox: OutboxStatus
    feedback: dict[str, int]
    indexes: IndexStatus
    model_usage: ModelUsageStatus = Field(alias="modelUsage")
    sessions: SessionStatus
    legacy_import: dict[str, Any] | None = Field(
        alias="legacyImport", description="The last legacy transcript import's result "
        "(`memory-platform import-transcripts`), or null.")
    workspace: WorkspaceStatus
    graph: GraphCounts
    recent_dreams: list[DreamOut] = Field(
        alias="recentDreams", description="The five most recent Dreams with their inputs, "
        "outputs, rejections by reason and rollback state (as the Dream list shows them).")


class RetentionRequest(Strict):
    """One retention sweep of the admin key's instance (or one of its audience partitions)."""

    dry_run: bool = Field(False, alias="dryRun", description="Count what would go; delete "
                          "nothing.")
    audience_kind: AudienceKind | None = Field(None, alias="audienceKind")
    audience_key: str | None = Field(None, alias="audienceKey", min_length=1, max_length=512)
    prune_context: bool = Field(False, alias="pruneContext", description="Also delete "
                                "context messages already covered by a summary.")


class RetentionResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dryRun: bool
    instanceKey: str | None
    audience: dict[str, str] | None
    pruneContext: bool
    retentionDays: int
    evidenceCap: int
    deleted: dict[str, int]


class WorkspaceSyncResponse(BaseModel):
    """One forced sync of the configured workspace (MEMORY_WORKSPACE_DIR)."""

    model_config = ConfigDict(extra="allow")


class ErasureRequest(Strict):
    """Erase a person from the admin key's instance (the one sanctioned delete of the
    append-only tables; the report keeps counts, never content)."""

    user_id: str = Field(alias="userId", min_length=1, max_length=USER_ID_MAX_CHARS)


class ErasureResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
