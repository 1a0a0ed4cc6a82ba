"""Feedback ranking (retrieval/feedback/): how injections, citations and corrections move an
assertion's score, and the bounds of the cited sensor's text matching."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FeedbackSettings(BaseModel):
    """Feedback multipliers and the cited sensor."""

    feedback_ranking_enabled: bool = True
    feedback_boost_max: float = Field(1.3, ge=1.0)
    feedback_correction_penalty: float = Field(0.7, gt=0.0, le=1.0)
    feedback_min_multiplier: float = Field(0.4, gt=0.0, le=1.0)
    feedback_rate_floor: int = Field(3, ge=1)
    cited_min_overlap_tokens: int = Field(3, ge=1)
    cited_containment_threshold: float = Field(0.5, gt=0.0, le=1.0)
    cited_response_max_chars: int = Field(
        16_000, ge=100, description="Longest responseText the cited sensor reads; a longer one "
        "is refused (400) and records nothing.")
    cited_max_candidates: int = Field(
        200, ge=1, description="Injected assertions of one run the cited sensor compares with "
        "the response (the first ones injected): bounds the text work of one report.")
    feedback_correction_window_hours: int = Field(
        72, ge=1, description="A conflict/supersede counts as a correction of an assertion "
        "injected at most this many hours earlier."
    )
