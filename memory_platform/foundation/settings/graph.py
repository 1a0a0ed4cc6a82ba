"""The knowledge graph (graph/): the extraction model, its batches and answer bounds, the
extraction jobs, and knowledge_search's fusion and recency decay."""

from __future__ import annotations

from pydantic import BaseModel, Field


class GraphSettings(BaseModel):
    """Graph extraction and graph search."""

    graph_model: str | None = Field(
        None, description="Exact model of knowledge-graph extraction. Unset: the instance's "
        "persisted Dreaming model, else MEMORY_MAINTENANCE_MODEL, else the exact model of the "
        "instance's last successful Dream, else MEMORY_MAINTENANCE_DEFAULT_MODEL. Never a "
        "fallback: an unreachable model keeps the work queued.")
    graph_max_attempts: int = Field(
        48, ge=1, description="Attempts of a graph extraction job before it stays failed: "
        "graph work waits out an unreachable model or a malformed answer (about two days "
        "with the default backoff; `memory-platform graph build --requeue-failed` revives "
        "jobs that ran out).")
    graph_batch_max_sources: int = Field(
        24, ge=1, le=200, description="Most approved assertions in one extraction request.")
    graph_batch_max_chars: int = Field(
        16_000, ge=1_000, description="Most characters of one rendered extraction block "
        "(provenance headers included); a batch is split before it would grow past it.")
    graph_max_entities: int = Field(48, ge=1, description="Most entities one extraction "
                                    "answer may hold (more: the answer is malformed).")
    graph_max_claims: int = Field(48, ge=1, description="Most claims of one answer.")
    graph_max_edges: int = Field(48, ge=1, description="Most edges of one answer.")
    graph_jobs_per_pass: int = Field(
        500, ge=1, description="Most graph outbox jobs one pass claims (bounded work).")
    graph_embed_batch: int = Field(64, ge=1, description="Texts per embedding call of "
                                   "graph entities and claims.")
    graph_search_limit: int = Field(8, ge=1, le=100, description="Claims, entities and "
                                    "edges returned by knowledge_search by default.")
    graph_search_candidates: int = Field(
        32, ge=1, le=500, description="Candidates per arm (lexical, vector) and item kind "
        "before reciprocal-rank fusion.")
    graph_rrf_k: int = Field(60, ge=1, description="Reciprocal-rank fusion constant.")
    graph_expand_entities: int = Field(
        5, ge=0, le=50, description="Top fused entities whose edges are expanded.")
    graph_decay_enabled: bool = Field(
        True, description="Recency decay of claim and edge scores (never written).")
    graph_decay_half_life_days: float = Field(180.0, gt=0.0)
    graph_decay_floor: float = Field(0.5, ge=0.0, le=1.0)
