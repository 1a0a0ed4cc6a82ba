"""Injected, cited and explicit feedback of a run (``/api/v1/feedback``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from api.schemas.common import CallerContext, Strict
from memory_platform.features.retrieval.feedback.events import ExplicitKind


class InjectedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    assertion_ids: list[str] = Field(alias="assertionIds", min_length=1, max_length=100)
    context: CallerContext | None = None


class CitedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    response_text: str = Field(alias="responseText", min_length=1, max_length=100_000)
    context: CallerContext | None = None


class ExplicitFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200,
                        description="The run the assertions were recalled in (idempotent).")
    assertion_ids: list[str] = Field(alias="assertionIds", min_length=1, max_length=100)
    kind: ExplicitKind
    note: str | None = Field(None, min_length=1, max_length=1000,
                             description="Why, in a few words (kept with the event).")
    context: CallerContext | None = None


class ExplicitResponse(BaseModel):
    run_id: str = Field(serialization_alias="runId")
    kind: str
    counted: int = Field(description="Distinct assertions the caller may see, counted.")
    recorded: int = Field(description="Of those, new for this run and kind.")
    ignored: int = Field(description="Distinct ids not counted (unknown or not visible).")


class InjectedResponse(BaseModel):
    run_id: str = Field(serialization_alias="runId")
    counted: int = Field(description="Distinct assertions the caller may see, counted.")
    recorded: int = Field(description="Of those, first injections in this run.")
    ignored: int = Field(description="Distinct ids not counted (unknown or not visible).")


class CitedResponse(BaseModel):
    run_id: str = Field(serialization_alias="runId")
    cited: list[str] = Field(description="Assertions of the run the answer cites.")
