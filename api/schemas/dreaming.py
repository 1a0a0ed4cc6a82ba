"""Dreaming for operators (``/internal/memory/dreams``, admin scope).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from api.schemas.common import DreamOut, Strict
from memory_platform.features.dreaming.model import normalise_model_name


class DreamListParams(BaseModel):
    """Query-string parameters of GET /internal/memory/dreams (numbers parsed, unknown names
    rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    limit: int | None = Field(None, ge=1, le=1000,
                              description="Newest dream rows answered (default: the "
                              "dream_list_limit setting).")


class DreamLaunch(Strict):
    """Launch Dreaming through Dagster: exactly one of ``partition`` and ``allEligible``."""

    partition: str | None = Field(
        None, min_length=1, max_length=1000,
        description="One audience partition key instance/kind/key of the key's instance.")
    all_eligible: bool = Field(
        False, alias="allEligible",
        description="Every partition of the key's instance that meets dream_min_inputs.")
    model: str | None = Field(None, min_length=1, max_length=200,
                              description="Exact maintenance model (default: resolution).")
    dry_run: bool = Field(False, alias="dryRun",
                          description="Proposals and diagnostics only; no ledger change.")

    @field_validator("model")
    @classmethod
    def _normalised_model(cls, value: str | None) -> str | None:
        return normalise_model_name(value) or None

    @model_validator(mode="after")
    def _exactly_one_target(self) -> DreamLaunch:
        if (self.partition is not None) == self.all_eligible:
            raise ValueError("give exactly one of 'partition' and 'allEligible': true")
        return self


class DreamListResponse(BaseModel):
    dreams: list[DreamOut]


class DreamLaunchResponse(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    run_id: str | None = Field(alias="runId",
                               description="The Dagster run id; null when nothing is eligible.")
    partitions: list[str]
    model: str | None = None
    dry_run: bool = Field(alias="dryRun")
    mode: str | None = Field(None, description="'queued' (the Dagster daemon launches it) or "
                             "'in_process' (it runs in the API process); null: not launched.")


class DreamRollbackResponse(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    dream_id: str = Field(alias="dreamId")
    status: Literal["rolled_back", "already_rolled_back"]
    tombstoned: list[str] = Field(description="Assertions this Dream created, now tombstoned.")
    restored: list[str] = Field(description="Reused assertions put back to their earlier state.")
    evidence_removed: int = Field(alias="evidenceRemoved")
    proposals_rejected: list[str] = Field(alias="proposalsRejected")
    protected: list[dict[str, Any]] = Field(
        description="Left as they are: {kind, id, reason} (human review, approved wiki).")
    projection_jobs: int = Field(alias="projectionJobs")
    shown_in_dagster: bool = Field(
        False, alias="shownInDagster",
        description="Whether the rollback now shows on the Dream's partition in Dagster "
        "(false for a repeated rollback, or when the API has no rollback recorder).")


class DreamModel(BaseModel):
    """The model a Dream used exactly, and where the choice came from."""

    model_config = ConfigDict(populate_by_name=True)
    model: str | None = None
    source: str | None = Field(None, description="explicit | setting | default | ...")


class DreamRollbackState(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    rolled_back: bool = Field(alias="rolledBack")
    rolled_back_at: str | None = Field(None, alias="rolledBackAt")
    reverted: int = Field(description="Assertions tombstoned or put back.")
    kept_by_person: int = Field(alias="keptByPerson",
                                description="Assertions kept because a person decided them.")
    result: dict[str, Any] | None = Field(None, description="The rollback's full result.")


class DreamDetailResponse(DreamOut):
    """``GET /internal/memory/dreams/{dream_id}``: one Dream in full."""

    effective_model: DreamModel = Field(alias="effectiveModel")
    proposals: dict[str, Any] = Field(description="The validated proposals as stored.")
    dry_run_proposals: list[dict[str, Any]] = Field(
        alias="dryRunProposals", description="A dry run's proposals with their policy "
        "preview decision and reason code (empty for a real run).")
    policy_preview: list[dict[str, Any]] = Field(alias="policyPreview")
    accepted: list[dict[str, Any]] = Field(
        description="Assertions the Dream created or reused: state, decision, reason code.")
    rejected: list[dict[str, Any]] = Field(
        description="Rejected items: kind, item, reasonCode, stage (validation, safety, "
        "policy_preview).")
    rejected_by_reason: dict[str, Any] = Field(alias="rejectedByReason")
    wiki_proposals: list[dict[str, Any]] = Field(alias="wikiProposals")
    diagnostics_full: list[dict[str, Any]] = Field(alias="diagnosticsFull")
    rollback: DreamRollbackState
    private_text_withheld: bool = Field(
        False, alias="privateTextWithheld",
        description="A Dream of another user's private partition: ids, states, reason codes "
        "and numbers only, none of its text (issue 28, finding 11).")
