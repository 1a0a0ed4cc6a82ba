"""Semantic search over memories (``GET /api/v1/memory``); its filters are
``memory_platform/features/retrieval/criteria.py`` (docs/search-filters.md).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import (
    SUBJECT_REFS_HELP,
    CallerContext,
    MemoryOut,
    TimeRanges,
    search_criteria,
    subject_refs_of,
)
from memory_platform.features.retrieval.criteria import Criteria
from memory_platform.shared.access import AudienceKind


class SearchParams(CallerContext, TimeRanges):
    """Query-string parameters: text by nature, so numbers are parsed (lax), unknown names
    still rejected."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    query: str = Field(min_length=1, max_length=2000)
    limit: int | None = Field(None, ge=1, le=50,
                              description="Most results (default: MEMORY_RETRIEVAL_TOP_K).")
    scope: AudienceKind | None = Field(None, description="Only this visibility scope.")
    min_score: float | None = Field(
        None, alias="minScore", ge=0.0, le=1.0,
        description="Least score a result needs (default: MEMORY_RETRIEVAL_MIN_SCORE). Scores "
        "mean the same for every question (docs/retrieval-scores.md): a question the memories "
        "cannot answer scores below the default.")
    filter: str | None = Field(
        None, min_length=1, max_length=8192,
        description="A filter over metadata and subject refs, as JSON (docs/search-filters.md),"
        ' e.g. {"metadata.project": {"eq": "apollo"}}.')
    source_types: str | None = Field(
        None, alias="sourceTypes", max_length=200,
        description="Only these source types, comma-separated (e.g. fact,manual).")
    subject_refs: str | None = Field(
        None, alias="subjectRefs", min_length=2, max_length=2048,
        description=SUBJECT_REFS_HELP + ' As JSON, e.g. {"mandantId": "M-17"}.')

    def criteria(self) -> Criteria | None:
        """The search criteria of the parameters (InvalidInput naming the field)."""
        return search_criteria(self, self.filter)

    def subjects(self) -> dict[str, str] | None:
        """The subject refs of the parameters (InvalidInput naming the field)."""
        return subject_refs_of(self.subject_refs)


class SearchResponse(BaseModel):
    results: list[MemoryOut]
