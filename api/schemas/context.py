"""Unified context search and one context item (``/api/v1/context``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from api.schemas.common import (
    SUBJECT_REFS_HELP,
    UNTRUSTED,
    CallerContext,
    Strict,
    TimeRanges,
    search_criteria,
    subject_refs_of,
)
from memory_platform.features.retrieval.criteria import Criteria


class ContextSearch(Strict, TimeRanges):
    query: str = Field(min_length=1, max_length=2000)
    depth: Literal["normal", "deep"] = "normal"
    intent: Literal["answer", "wiki_synthesis"] | None = None
    limit: int | None = Field(None, ge=1, le=50)
    context: CallerContext | None = None
    filter: dict[str, Any] | None = Field(
        None, description="A filter over metadata and subject refs (docs/search-filters.md); "
        "with any filter field only memories are searched.")
    source_types: list[str] | None = Field(None, alias="sourceTypes", min_length=1,
                                           max_length=12, description="Only these source types.")
    subject_refs: dict[str, Any] | None = Field(None, alias="subjectRefs", max_length=7,
                                                description=SUBJECT_REFS_HELP)

    def criteria(self) -> Criteria | None:
        """The search criteria of the body (InvalidInput naming the field)."""
        return search_criteria(self, self.filter)

    def subjects(self) -> dict[str, str] | None:
        """The subject refs of the body (InvalidInput naming the field)."""
        return subject_refs_of(self.subject_refs)


class ContextItemOut(BaseModel):
    id: str
    kind: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    score: float | None = None
    found_by: list[str] = Field(default_factory=list, serialization_alias="foundBy")
    details: dict[str, Any] = Field(default_factory=dict)


class ContextSearchResponse(BaseModel):
    results: list[ContextItemOut]
