"""Dreaming (dreaming/): input selection, the model's output limits, the safety pass's
thresholds, stale Dreams and listings."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DreamingSettings(BaseModel):
    """One Dream: its inputs, its answer and what the safety pass accepts."""

    dream_max_assertions: int = Field(12, ge=1)
    dream_max_wiki_proposals: int = Field(1, ge=0)
    dream_max_evidence_per_assertion: int = Field(3, ge=1)
    dream_max_field_chars: int = Field(600, ge=50)
    dream_phase_timeout_minutes: int = Field(10, ge=1, le=30)
    dream_completion_tokens: int = Field(12_000, ge=256)
    dream_stale_minutes: int = Field(90, ge=1)
    dream_reconcile_interval_seconds: int = Field(30, ge=1)
    automation_session_prefixes: list[str] = Field(
        default_factory=lambda: [
            "system:", "heartbeat:", "webhook:", "cron:", "scheduled:", "automation:",
            "github:", "release:", "docproc:", "livestream:",
        ],
        description="Session keys starting with one of these (case-insensitive) are the "
        "agent's own automation runs: never Dreaming input (and skipped by the flush).",
    )
    dream_candidate_limit: int = Field(
        1000, ge=1, description="Most recent eligible rows per partition and input pool "
        "considered (automation sessions are excluded before this limit).",
    )
    dream_max_inputs: int = Field(
        200, ge=1, le=1000, description="Inputs one Dream partition sends to the model."
    )
    dream_per_session_activity_cap: int = Field(
        12, ge=1, description="Summary/flush rows one session may contribute to a partition."
    )
    dream_fact_quota_ratio: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Share of the inputs reserved for direct human facts (filled first).",
    )
    dream_min_inputs: int = Field(
        3, ge=1, description="Inputs a partition needs before it is dreamed (manual runs too)."
    )
    dream_activation_confidence: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Confidence at which the safety pass activates a Dream assertion.",
    )
    dream_update_confidence: float = Field(
        0.9, ge=0.0, le=1.0,
        description="Confidence an 'updates' relation needs when it is a correction "
        "rather than an exact duplicate.",
    )
    dream_input_max_chars: int = Field(
        4000, ge=200, description="Characters of one input shown to the model."
    )
    dream_min_excerpt_chars: int = Field(
        20, ge=1, description="Characters a Dream evidence excerpt needs at least."
    )
    dream_min_excerpt_words: int = Field(
        3, ge=1,
        description="Informative words (not stopwords, not very short) a Dream evidence "
        "excerpt needs at least.",
    )
    dream_min_text_support: float = Field(
        0.5, gt=0.0, le=1.0,
        description="Share of a Dream assertion's informative words (folded, stemmed) that "
        "must occur in its cited excerpts.",
    )
    dream_list_limit: int = Field(
        50, ge=1, le=1000,
        description="Newest dream rows a listing answers (`dream list`, GET "
        "/internal/memory/dreams) when it names no limit.",
    )
