"""Request and response shapes of the HTTP API (pydantic; they also make /openapi.json).

Requests are strict: unknown fields, wrong types and out-of-range values are errors, never
coerced or ignored. Responses wrap every memory so an agent cannot mistake stored text for
instructions: ``trust`` is always ``"untrusted-data"`` and the text sits in ``content``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import Strict as PydanticStrict

from memory_platform.access import AudienceKind
from memory_platform.dreaming.model import normalise_model_name
from memory_platform.errors import InvalidInput
from memory_platform.maintenance.profiles import USER_ID_MAX_CHARS
from memory_platform.memories.validation import parse_occurred_at
from memory_platform.retrieval.criteria import Criteria, parse_criteria
from memory_platform.review.decisions import BULK_LIMIT as REVIEW_BULK_MAX
from memory_platform.review.queues import MAX_LIMIT as REVIEW_PAGE_MAX

UNTRUSTED = "untrusted-data"
AssertionType = Literal["fact", "preference", "decision", "constraint", "procedure"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class CallerContext(Strict):
    """Conversation context a request claims. A user key acts as its own user and may name a
    channel or room only where that user is a member, a session only where the user takes
    part (403 otherwise); ``userId`` is for runtime keys only (400 from a user key)."""

    user_id: str | None = Field(
        None, alias="userId", min_length=1, max_length=200,
        description="Runtime keys only: the user the request acts for (omitted: no user, a "
        "system context).")
    session_key: str | None = Field(None, alias="sessionKey", min_length=1, max_length=200)
    group_room_id: str | None = Field(None, alias="groupRoomId", min_length=1, max_length=200)
    channel_thread_key: str | None = Field(None, alias="channelThreadKey", min_length=1,
                                           max_length=200)
    channel_type: str | None = Field(None, alias="channelType", min_length=1, max_length=64)


_OCCURRED_AFTER = ("Only memories whose event time (occurredAt) is at or after this ISO-8601 "
                   "date-time with an offset; memories without an event time never match.")
_OCCURRED_BEFORE = "Only memories whose event time (occurredAt) is before this date-time."
_CREATED_AFTER = "Only memories written at or after this ISO-8601 date-time with an offset."
_CREATED_BEFORE = "Only memories written before this ISO-8601 date-time with an offset."


class TimeRanges(BaseModel):
    """The event-time and write-time bounds of a filtered search (query string and body
    alike; parsed with the filter by ``search_criteria``)."""

    occurred_after: str | None = Field(None, alias="occurredAfter", max_length=64,
                                       description=_OCCURRED_AFTER)
    occurred_before: str | None = Field(None, alias="occurredBefore", max_length=64,
                                        description=_OCCURRED_BEFORE)
    created_after: str | None = Field(None, alias="createdAfter", max_length=64,
                                      description=_CREATED_AFTER)
    created_before: str | None = Field(None, alias="createdBefore", max_length=64,
                                       description=_CREATED_BEFORE)


class SearchParams(CallerContext, TimeRanges):
    """Query-string parameters: text by nature, so numbers are parsed (lax), unknown names
    still rejected."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    query: str = Field(min_length=1, max_length=2000)
    limit: int | None = Field(None, ge=1, le=50,
                              description="Most results (default: MEMORY_RETRIEVAL_TOP_K).")
    scope: AudienceKind | None = Field(None, description="Only this visibility scope.")
    filter: str | None = Field(
        None, min_length=1, max_length=8192,
        description="A filter over metadata and subject refs, as JSON (docs/search-filters.md),"
        ' e.g. {"metadata.project": {"eq": "apollo"}}.')
    source_types: str | None = Field(
        None, alias="sourceTypes", max_length=200,
        description="Only these source types, comma-separated (e.g. fact,manual).")

    def criteria(self) -> Criteria | None:
        """The search criteria of the parameters (InvalidInput naming the field)."""
        return search_criteria(self, self.filter)


# Metadata keys the API writes itself (who wrote a memory, how): a client cannot set them.
PLATFORM_METADATA_KEYS = frozenset({"writtenVia", "apiKeyId", "keyKind", "writer",
                                    "memoryClass"})


class MemoryCreate(Strict):
    content: str = Field(min_length=1, description="The memory text (size limit applies).")
    visibility: AudienceKind | None = Field(
        None, description="Omitted: private, or the team when the user shares with the team.")
    explicit_private: bool = Field(False, alias="explicitPrivate")
    subject_refs: dict[str, str | int | float] = Field(default_factory=dict, alias="subjectRefs")
    title: str | None = Field(None, max_length=300)
    assertion_type: AssertionType = Field("fact", alias="assertionType")
    occurred_at: datetime | None = Field(
        None, alias="occurredAt",
        description="When what the memory says happened (ISO-8601 with an offset, e.g. "
        "2024-05-01T09:30:00+02:00; at most a day ahead), as opposed to when it is written.")
    metadata: dict[str, Any] | None = Field(
        None, description="Your own JSON object (at most 16 KiB, no secrets), searchable "
        "with filters (metadata.<key>); the keys " + ", ".join(sorted(PLATFORM_METADATA_KEYS))
        + " are the platform's and refused here.")
    context: CallerContext | None = None

    @field_validator("metadata")
    @classmethod
    def _own_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        taken = sorted(PLATFORM_METADATA_KEYS & set(value or {}))
        if taken:
            raise ValueError(f"metadata key {taken[0]!r} is set by the platform")
        return value

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _event_time(cls, value: object) -> datetime | None:
        return parse_event_time(value, "occurredAt")


def parse_event_time(value: object, field: str) -> datetime | None:
    """An ``occurredAt`` of a request: None, or an ISO-8601 string with an offset parsed
    strictly (memories.validation.parse_occurred_at); anything else is a validation error
    naming the field. The future bound is the write path's (it knows the time)."""
    if value is None:
        return None
    try:
        return parse_occurred_at(value, field=field)
    except InvalidInput as exc:
        raise ValueError(exc.message) from None


# --- search filters (memory_platform/retrieval/criteria.py, docs/search-filters.md) --------


def search_criteria(fields: Any, where: Any) -> Criteria | None:
    """The criteria of a search request's filter fields, validated by the library (an
    InvalidInput naming the field, answered 400)."""
    return parse_criteria(where, occurred_after=fields.occurred_after,
                          occurred_before=fields.occurred_before,
                          created_after=fields.created_after,
                          created_before=fields.created_before,
                          source_types=fields.source_types)


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

    def criteria(self) -> Criteria | None:
        """The search criteria of the body (InvalidInput naming the field)."""
        return search_criteria(self, self.filter)


class InjectedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    assertion_ids: list[str] = Field(alias="assertionIds", min_length=1, max_length=100)
    context: CallerContext | None = None


class CitedFeedback(Strict):
    run_id: str = Field(alias="runId", min_length=1, max_length=200)
    response_text: str = Field(alias="responseText", min_length=1, max_length=100_000)
    context: CallerContext | None = None


class ActingUser(BaseModel):
    """Query-string parameter of an exact retrieval: the acting user of a runtime key."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    user_id: str | None = Field(
        None, alias="userId", min_length=1, max_length=200,
        description="Runtime keys only: the user the request acts for.")


def _channel_key() -> Any:
    return Field(alias="channelKey", min_length=1, max_length=200,
                 description="A channelThreadKey or a groupRoomId.")


def _user_id() -> Any:
    return Field(alias="userId", min_length=1, max_length=200)


def _session_key() -> Any:
    return Field(alias="sessionKey", min_length=1, max_length=200)


class ChannelMemberIn(Strict):
    channel_key: str = _channel_key()
    user_id: str = _user_id()


class ChannelMemberParams(BaseModel):
    """Query string naming one membership (both parameters required)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    channel_key: str = _channel_key()
    user_id: str = _user_id()


class ChannelMemberFilter(BaseModel):
    """Query string of a membership listing: optionally one channel and/or one user."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    channel_key: str | None = Field(None, alias="channelKey", min_length=1, max_length=200)
    user_id: str | None = Field(None, alias="userId", min_length=1, max_length=200)


class SessionParticipantIn(Strict):
    session_key: str = _session_key()
    user_id: str = _user_id()


class SessionParticipantParams(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    session_key: str = _session_key()


class ReembedRequest(Strict):
    limit: int | None = Field(
        None, ge=1, le=5000, description="Most rows converted (default: MEMORY_REEMBED_RUN_LIMIT).")


# --- responses ---------------------------------------------------------------------------
class Audience(BaseModel):
    kind: AudienceKind
    key: str


class MemoryOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    score: float | None = None
    visibility: AudienceKind
    memory_scope: str = Field(serialization_alias="memoryScope")
    source_type: str = Field(serialization_alias="sourceType")
    subject_refs: dict[str, Any] = Field(serialization_alias="subjectRefs")
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    created_at: str = Field(serialization_alias="createdAt")
    occurred_at: str | None = Field(
        None, serialization_alias="occurredAt",
        description="When what the memory says happened, if the writer said (null: unknown).")


class SearchResponse(BaseModel):
    results: list[MemoryOut]


class StoreResponse(BaseModel):
    id: str
    audience: Audience
    deduplicated: bool
    assertion_id: str | None = Field(None, serialization_alias="assertionId")
    assertion_status: str | None = Field(None, serialization_alias="assertionStatus")


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


class InjectedResponse(BaseModel):
    run_id: str = Field(serialization_alias="runId")
    counted: int = Field(description="Distinct assertions the caller may see, counted.")
    recorded: int = Field(description="Of those, first injections in this run.")
    ignored: int = Field(description="Distinct ids not counted (unknown or not visible).")


class CitedResponse(BaseModel):
    run_id: str = Field(serialization_alias="runId")
    cited: list[str] = Field(description="Assertions of the run the answer cites.")


class ReembedResponse(BaseModel):
    """One bounded re-embedding batch (``memory_platform.projection.reembed``)."""

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


class ChannelMemberOut(BaseModel):
    channel_key: str = Field(serialization_alias="channelKey")
    user_id: str = Field(serialization_alias="userId")
    added_by: str = Field(serialization_alias="addedBy")
    created_at: str = Field(serialization_alias="createdAt")


class ChannelMemberChange(BaseModel):
    channel_key: str = Field(serialization_alias="channelKey")
    user_id: str = Field(serialization_alias="userId")
    changed: bool = Field(description="Added: the membership is new (201; 200 when it "
                          "existed). Removed: always true (404 when there was none).")


class ChannelMembersResponse(BaseModel):
    members: list[ChannelMemberOut]


class SessionParticipantOut(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str = Field(serialization_alias="userId")
    role: Literal["owner", "participant"]
    created_at: str = Field(serialization_alias="createdAt")


class SessionParticipantAdded(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str = Field(serialization_alias="userId")
    added: bool = Field(description="The user was not taking part yet (201; 200 otherwise).")


class SessionParticipantsResponse(BaseModel):
    participants: list[SessionParticipantOut]


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


class ReembedBacklog(_Report):
    chunks: int
    assertions: int


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


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    error: ErrorBody


# --- Dreaming (operators, admin scope) ----------------------------------------------------
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


class DreamOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    id: str
    instance_key: str = Field(alias="instanceKey")
    partition_key: str = Field(alias="partitionKey")
    audience: Audience
    status: str
    trigger: str | None = None
    model: str | None = None
    dry_run: bool = Field(alias="dryRun")
    dagster_run_id: str | None = Field(None, alias="dagsterRunId")
    started_at: str | None = Field(None, alias="startedAt")
    finished_at: str | None = Field(None, alias="finishedAt")
    rolled_back_at: str | None = Field(None, alias="rolledBackAt")
    error: str | None = None
    diagnostics: list[str] = Field(default_factory=list,
                                   description="Distinct diagnostic codes of the row.")
    stats: dict[str, Any] = Field(
        default_factory=dict, description="inputs, inputsByPool, excludedAutomation, "
        "proposed, accepted, created, reused, activated, rejected, rejectedByReason, "
        "deferredEmbeddings, wikiProposals, durationSeconds (and rollback when rolled back).")


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


# --- review queues and a person's decisions (memory:review) ---------------------------------
ReviewAudience = Literal["private", "team", "workspace", "channel"]
ReasonCode = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)]
# Ids arrive as JSON strings: parsed as UUIDs (a malformed one is a 400 naming the field).
IdIn = Annotated[uuid.UUID, PydanticStrict(False)]


class ReviewQueueParams(BaseModel):
    """Query string of a review queue (lax: text by nature; unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    kind: Literal["assertion", "conflict", "wiki_draft"] = "assertion"
    type: str | None = Field(None, description="Assertion queue only: one assertion type.")
    audience: ReviewAudience | None = None
    origin: str | None = Field(None, description="Assertion queue only: one origin.")
    limit: int | None = Field(None, ge=1, le=REVIEW_PAGE_MAX)
    cursor: str | None = Field(None, max_length=200,
                               description="nextCursor of the previous page.")
    channel_thread_key: str | None = Field(None, alias="channelThreadKey", min_length=1,
                                           max_length=200)
    group_room_id: str | None = Field(None, alias="groupRoomId", min_length=1, max_length=200)


class ReviewQueueResponse(BaseModel):
    items: list[dict[str, Any]]
    next_cursor: str | None = Field(None, serialization_alias="nextCursor")


class AssertionDecisionIn(Strict):
    decision: Literal["approve", "reject", "supersede"]
    successor_id: IdIn | None = Field(None, alias="successorId",
                                      description="supersede: the assertion that replaces it.")
    reason_code: ReasonCode | None = Field(None, alias="reasonCode")
    note: str | None = Field(None, max_length=2000)


class BulkDecisionIn(Strict):
    """Approve or reject the pending assertions of a filtered queue (oldest first)."""

    decision: Literal["approve", "reject"]
    type: str | None = None
    audience: ReviewAudience | None = None
    origin: str | None = None
    ids: list[IdIn] | None = Field(None, max_length=REVIEW_BULK_MAX)
    limit: int = Field(REVIEW_BULK_MAX, ge=1, le=REVIEW_BULK_MAX)
    reason_code: ReasonCode | None = Field(None, alias="reasonCode")
    note: str | None = Field(None, max_length=2000)


class ConflictResolutionIn(Strict):
    action: Literal["keep_one", "keep_both", "merge", "reject_challenger"]
    keep_id: IdIn | None = Field(None, alias="keepId",
                                 description="keep_one and merge: the assertion that stays.")


class WikiDecisionIn(Strict):
    decision: Literal["approve", "reject"]
    reason: str | None = Field(None, max_length=2000)


class DecisionResponse(BaseModel):
    decided: list[str] = Field(description="Ids whose state the decision changed.")
    unchanged: list[str] = Field(description="Decisions recorded; the state was already so.")
    refused: list[dict[str, str]]
    projected: int = Field(description="Projection jobs run at once (recall sees them now).")


# --- users and their sharing preference (admin, a person's key) ------------------------------
class UserListParams(BaseModel):
    """Query string of the user listing (none today; unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class SharingIn(Strict):
    user_id: str = Field(alias="userId", min_length=1, max_length=200)
    share: bool


class UserOut(BaseModel):
    user_id: str = Field(serialization_alias="userId")
    created_at: str = Field(serialization_alias="createdAt")
    created_by: str = Field(serialization_alias="createdBy")
    shares_with_team: bool = Field(serialization_alias="sharesWithTeam")
    share_is_default: bool = Field(serialization_alias="shareIsDefault")
    share_changed_by: str | None = Field(serialization_alias="shareChangedBy")


class UsersResponse(BaseModel):
    users: list[UserOut]


# --- sessions: turn items in, the context graph back out -------------------------------------
ATTACHMENTS_MAX = 32
# JSON values one turn item can hold at most (the item, its six fields, its metadata and
# every attachment's four): the value budget of an append body follows the item limit.
APPEND_VALUES_PER_ITEM = 8 + 4 + ATTACHMENTS_MAX * 5


def append_value_limit(max_items: int) -> int:
    """Most JSON values an append body with ``max_items`` items can hold (and some slack)."""
    return max_items * APPEND_VALUES_PER_ITEM + 64


class ItemAttachment(Strict):
    name: str = Field(min_length=1, max_length=500)
    media_type: str | None = Field(None, alias="mediaType", min_length=1, max_length=200)
    size_bytes: int | None = Field(None, alias="sizeBytes", ge=0, le=10**15)
    uri: str | None = Field(None, min_length=1, max_length=2000)


class ItemMetadata(Strict):
    """What a runtime knows about an item besides its text."""

    tool: str | None = Field(None, min_length=1, max_length=200, description="Tool name.")
    tool_call_id: str | None = Field(None, alias="toolCallId", min_length=1, max_length=200)
    attachments: list[ItemAttachment] | None = Field(None, max_length=ATTACHMENTS_MAX)


class SessionItemIn(Strict):
    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(description="The item's text, verbatim (MEMORY_SESSION_ITEM_MAX_CHARS "
                         "at most; tab and line breaks allowed).")
    author_user_id: str | None = Field(
        None, alias="authorUserId", min_length=1, max_length=200,
        description="Who said it (default: the acting user). A user key may name only itself; "
        "the runtime may name any user, who then takes part in the session.")
    occurred_at: datetime | None = Field(
        None, alias="occurredAt",
        description="When it was said (ISO-8601 with an offset; at most a day ahead).")
    client_item_id: str | None = Field(
        None, alias="clientItemId", min_length=1, max_length=200,
        description="The client's id of the item: a repeated append of it adds nothing.")
    metadata: ItemMetadata | None = None

    @field_validator("occurred_at", mode="before")
    @classmethod
    def _event_time(cls, value: object) -> datetime | None:
        return parse_event_time(value, "occurredAt")


class SessionAppend(Strict):
    items: list[SessionItemIn] = Field(
        min_length=1, description="Turn items in the order they were said "
        "(MEMORY_SESSION_APPEND_MAX_ITEMS at most).")
    run_id: str | None = Field(
        None, alias="runId", min_length=1, max_length=200,
        description="The run (turn) the items belong to, open until completed; omitted: the "
        "items are a run of their own, completed at once.")
    context: CallerContext | None = Field(
        None, description="Conversation context; its sessionKey, if given, must be the "
        "path's.")


class AppendedItemOut(BaseModel):
    id: str
    client_item_id: str | None = Field(serialization_alias="clientItemId")
    seq: int
    duplicate: bool


class SessionAppendResponse(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    run_id: str | None = Field(serialization_alias="runId")
    run_index: int | None = Field(serialization_alias="runIndex")
    run_status: Literal["open", "completed"] | None = Field(serialization_alias="runStatus")
    appended: int
    duplicates: int
    items: list[AppendedItemOut]


class RunComplete(Strict):
    prompt_tokens: int | None = Field(
        None, alias="promptTokens", ge=0, le=2_000_000_000,
        description="Tokens of the run's prompt (with contextBudgetTokens: budget pressure "
        "lets flush and compaction run sooner).")
    context_budget_tokens: int | None = Field(
        None, alias="contextBudgetTokens", ge=1, le=2_000_000_000,
        description="The model context the runtime budgets against.")
    context: CallerContext | None = None


class RunCompletionResponse(BaseModel):
    session_key: str = Field(serialization_alias="sessionKey")
    run_id: str = Field(serialization_alias="runId")
    run_index: int = Field(serialization_alias="runIndex")
    status: Literal["completed"]
    completed_at: str = Field(serialization_alias="completedAt")
    already_completed: bool = Field(serialization_alias="alreadyCompleted")


class GrepParams(CallerContext):
    """Query string of memory_grep (numbers and booleans parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    pattern: str = Field(min_length=1, max_length=500,
                         description="Exact text, case-insensitive (at least 3 characters).")
    all_sessions: bool = Field(
        False, alias="allSessions",
        description="Every session the caller takes part in (else: sessionKey's).")
    roles: str | None = Field(None, min_length=1, max_length=100,
                              description="Comma-separated roles: only messages of these "
                              "(summaries have no role).")
    limit: int = Field(20, ge=1, le=100)
    before: str | None = Field(None, min_length=1, max_length=300,
                               description="nextBefore of the previous page.")


class NodeParams(CallerContext):
    """Query string of memory_describe: the conversation context (runtime keys: userId)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class ExpandParams(NodeParams):
    limit: int = Field(100, ge=1, le=200)
    after_seq: int | None = Field(None, alias="afterSeq", ge=-1, le=2_147_483_647,
                                  description="nextAfterSeq of the previous page.")


class GrepHitOut(BaseModel):
    id: str
    kind: Literal["message", "summary"]
    trust: Literal["untrusted-data"] = UNTRUSTED
    session_key: str = Field(serialization_alias="sessionKey")
    seq: int | None = Field(None, description="A message's position in its session.")
    first_seq: int | None = Field(None, serialization_alias="firstSeq")
    last_seq: int | None = Field(None, serialization_alias="lastSeq")
    role: str | None = None
    user_id: str | None = Field(None, serialization_alias="userId")
    snippet: str = Field(description="About 160 characters around the first match.")
    occurred_at: str | None = Field(None, serialization_alias="occurredAt")
    created_at: str = Field(serialization_alias="createdAt")


class GrepResponse(BaseModel):
    results: list[GrepHitOut]
    next_before: str | None = Field(serialization_alias="nextBefore",
                                    description="Cursor of the next (older) page; null: last.")


class SummaryRefOut(BaseModel):
    id: str
    kind: Literal["leaf", "condensed"]
    depth: int
    first_seq: int | None = Field(serialization_alias="firstSeq")
    last_seq: int | None = Field(serialization_alias="lastSeq")


class SessionNodeOut(BaseModel):
    """One node of the context graph: a message or a summary (fields of the other kind are
    null)."""

    id: str
    kind: Literal["message", "summary"]
    trust: Literal["untrusted-data"] = UNTRUSTED
    content: str
    session_key: str = Field(serialization_alias="sessionKey")
    user_id: str | None = Field(serialization_alias="userId")
    created_at: str = Field(serialization_alias="createdAt")
    seq: int | None = None
    role: str | None = None
    run_id: str | None = Field(None, serialization_alias="runId")
    occurred_at: str | None = Field(None, serialization_alias="occurredAt")
    client_item_id: str | None = Field(None, serialization_alias="clientItemId")
    metadata: dict[str, Any] | None = None
    summaries: list[SummaryRefOut] | None = Field(
        None, description="A message: the summaries covering it, leaf first.")
    summary_kind: Literal["leaf", "condensed"] | None = Field(
        None, serialization_alias="summaryKind")
    depth: int | None = None
    first_seq: int | None = Field(None, serialization_alias="firstSeq")
    last_seq: int | None = Field(None, serialization_alias="lastSeq")
    token_count: int | None = Field(None, serialization_alias="tokenCount")
    produced_by: str | None = Field(None, serialization_alias="producedBy")
    model: str | None = None
    memory_id: str | None = Field(None, serialization_alias="memoryId")
    child_count: int | None = Field(None, serialization_alias="childCount")
    children: list[str] | None = Field(None, description="A summary: child summaries, then "
                                       "raw items directly under it (at most 100).")
    parents: list[str] | None = None


class ExpandedMessageOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    seq: int
    role: str
    user_id: str | None = Field(serialization_alias="userId")
    content: str
    run_id: str | None = Field(serialization_alias="runId")
    occurred_at: str | None = Field(serialization_alias="occurredAt")
    created_at: str = Field(serialization_alias="createdAt")


class ExpandResponse(BaseModel):
    summary_id: str = Field(serialization_alias="summaryId")
    messages: list[ExpandedMessageOut]
    child_summaries: list[SummaryRefOut] = Field(serialization_alias="childSummaries")
    next_after_seq: int | None = Field(serialization_alias="nextAfterSeq",
                                       description="afterSeq of the next page; null: last.")


# --- knowledge graph: hybrid search and drill-down (memory:read) ----------------------------
class KnowledgeSearch(Strict):
    query: str = Field(min_length=1, max_length=2000)
    limit: int | None = Field(None, ge=1, le=50, description="Most entities, claims and edges "
                              "each (default: MEMORY_GRAPH_SEARCH_LIMIT).")
    context: CallerContext | None = None


class KnowledgeReadParams(CallerContext):
    """Query string of a graph drill-down: the conversation context (runtime keys: userId)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)


class NeighborParams(KnowledgeReadParams):
    depth: int = Field(1, ge=1, le=2, description="Edges away from the entity (1 or 2).")
    limit: int = Field(25, ge=1, le=100, description="Most neighbouring entities.")


def _camel(name: str) -> Any:
    return Field(serialization_alias=name)


def _optional(name: str) -> Any:
    return Field(None, serialization_alias=name)


class KnowledgeEntityOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    label: str
    entity_type: str = _camel("entityType")
    aliases: list[str]
    visibility: AudienceKind
    subject_refs: dict[str, Any] = _camel("subjectRefs")
    score: float
    lexical_rank: int | None = _optional("lexicalRank")
    vector_rank: int | None = _optional("vectorRank")
    similarity: float | None = None


class KnowledgeClaimOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    subject_id: str = _camel("subjectId")
    subject: str
    predicate: str
    object_id: str | None = _optional("objectId")
    object: str | None = None
    value: str | None = None
    text: str
    confidence: float
    visibility: AudienceKind
    valid_from: str | None = _optional("validFrom")
    valid_to: str | None = _optional("validTo")
    score: float
    lexical_rank: int | None = _optional("lexicalRank")
    vector_rank: int | None = _optional("vectorRank")
    similarity: float | None = None
    decay_factor: float | None = Field(
        None, serialization_alias="decayFactor", exclude_if=lambda v: v is None,
        description="Recency decay applied to the score (omitted when decay is disabled).")


class KnowledgeEdgeOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    source_id: str = _camel("sourceId")
    source: str
    relation_type: str = _camel("relationType")
    target_id: str = _camel("targetId")
    target: str
    confidence: float
    visibility: AudienceKind
    via_entity_id: str = Field(serialization_alias="viaEntityId",
                               description="The matched entity the edge was expanded from.")
    score: float
    decay_factor: float | None = Field(None, serialization_alias="decayFactor",
                                       exclude_if=lambda v: v is None)


class KnowledgeSearchResponse(BaseModel):
    trust: Literal["untrusted-data"] = UNTRUSTED
    entities: list[KnowledgeEntityOut]
    claims: list[KnowledgeClaimOut]
    edges: list[KnowledgeEdgeOut]
    lexical_only: bool = Field(serialization_alias="lexicalOnly", description=(
        "No vector arm ran (no active embedding generation, provider down, ...)."))
    block: str = Field(description="The 'Structured knowledge graph' prompt block of the "
                       "result ('' when it holds no claim or edge).")


class KnowledgeEntityResponse(BaseModel):
    """One entity, its current claims and edges (camelCase keys, as graph/reads.py answers
    them); every string in it is stored data."""

    trust: Literal["untrusted-data"] = UNTRUSTED
    entity: dict[str, Any]
    claims: dict[str, list[dict[str, Any]]] = Field(description="asSubject, asObject")
    edges: dict[str, list[dict[str, Any]]] = Field(description="outgoing, incoming")
    evidence_count: int = Field(serialization_alias="evidenceCount")
    truncated: bool


class KnowledgeNeighborsResponse(BaseModel):
    trust: Literal["untrusted-data"] = UNTRUSTED
    entity: dict[str, Any]
    depth: int
    neighbors: list[dict[str, Any]] = Field(description="{id, label, distance, viaEdgeId}")
    edges: list[dict[str, Any]]
    truncated: bool


class KnowledgeExplainResponse(BaseModel):
    trust: Literal["untrusted-data"] = UNTRUSTED
    claim: dict[str, Any]
    source_refs: list[dict[str, Any]] = Field(
        serialization_alias="sourceRefs",
        description="Each ref ({memoryId, assertionId} or {dreamId}) and whether it supports "
        "the claim now (its assertion may be told).")
    supported: bool
    evidence: list[dict[str, Any]]
    dream_ids: list[str] = Field(serialization_alias="dreamIds")
    truncated: bool


# --- the ledger as it was: assertions believed true at a past time (memory:read) -------------
class AssertionAsOfParams(CallerContext):
    """Query string of the asOf read (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    at: datetime = Field(description="The moment asked about: ISO-8601 with an offset, e.g. "
                         "2024-05-01T09:30:00+02:00 or 2024-05-01T07:30:00Z.")
    query: str | None = Field(None, min_length=1, max_length=2000,
                              description="Only assertions matching these words (full text).")
    limit: int = Field(20, ge=1, le=50)

    @field_validator("at", mode="before")
    @classmethod
    def _moment(cls, value: object) -> datetime | None:
        if value is None:
            raise ValueError("at is required")
        return parse_event_time(value, "at")


class AssertionAsOfOut(BaseModel):
    id: str
    trust: Literal["untrusted-data"] = UNTRUSTED
    text: str = Field(description="The assertion's text as recorded at that time.")
    assertion_type: str = Field(serialization_alias="assertionType")
    visibility: AudienceKind
    then: dict[str, Any] = Field(description="The state believed at that time: status, "
                                 "reviewState, validFrom, validTo, recordedAt, backfilled.")
    now: dict[str, Any] = Field(description="Its state now: status, reviewState, text, "
                                "validFrom, validTo.")
    earlier: list[dict[str, Any]] = Field(description="Earlier revisions, nearest first.")
    later: list[dict[str, Any]] = Field(description="Later revisions (what replaced it), "
                                        "nearest first.")


class AssertionAsOfResponse(BaseModel):
    trust: Literal["untrusted-data"] = UNTRUSTED
    at: str = Field(description="The moment asked about (UTC).")
    results: list[AssertionAsOfOut]


# --- maintenance (internal) ----------------------------------------------------------------


class ProfileParams(BaseModel):
    """Query string of GET /internal/memory/profile (unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    user_id: str = Field(..., alias="userId", min_length=1, max_length=USER_ID_MAX_CHARS,
                         description="The user whose profile is answered.")
    refresh: bool = Field(False, description="Rebuild the profile now (1/true).")


class ProfileItemModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    kind: str = Field(description="claim (knowledge graph) or memory.")
    id: str
    text: str
    source: str = Field(description="The claim's predicate or the memory's sourceType.")
    at: datetime | None = None


class ProfileResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    user_id: str = Field(serialization_alias="userId")
    static_facts: list[ProfileItemModel] = Field(serialization_alias="staticFacts")
    recent_context: list[ProfileItemModel] = Field(serialization_alias="recentContext")
    built_at: datetime = Field(serialization_alias="builtAt")
    persisted: bool = Field(description="Stored in agent_user_profiles.")
    cached: bool = Field(description="Answered from the cache, not rebuilt.")
    text: str = Field(description="The [User profile] prompt block (untrusted data).")
    trust: str = "untrusted-data"


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


# --- events and webhooks ------------------------------------------------------------------

class EventListParams(CallerContext):
    """Query string of GET /api/v1/events (numbers parsed, unknown names rejected)."""

    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    after: str | None = Field(None, min_length=1, max_length=200,
                              description="nextCursor of the previous page (omitted: from "
                              "the first event).")
    limit: int | None = Field(None, ge=1, le=500, description="Most events (default 100).")
    kinds: str | None = Field(None, min_length=1, max_length=1000,
                              description="Comma-separated event kinds (omitted: all).")


class EventOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    kind: str
    audience: dict[str, str]
    data: dict[str, Any]
    created_at: str = Field(alias="createdAt")


class EventListResponse(BaseModel):
    events: list[EventOut]
    next_cursor: str = Field(serialization_alias="nextCursor",
                             description="Continue from here (also when the page is empty).")


class WebhookIn(Strict):
    """Register a webhook of the admin key's instance. The secret signs every delivery;
    omitted: one is generated and answered once."""

    url: str = Field(min_length=1, max_length=2000)
    secret: str | None = Field(None, min_length=16, max_length=512)
    kinds: list[str] = Field(default_factory=list, max_length=50,
                             description="Event kinds delivered (empty: all).")


class WebhookOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str
    url: str
    kinds: list[str]
    active: bool


class WebhookListResponse(BaseModel):
    webhooks: list[WebhookOut]


class WebhookDeliveryParams(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False, populate_by_name=True)
    limit: int | None = Field(None, ge=1, le=1000, description="Newest deliveries (100).")


class WebhookDeliveriesResponse(BaseModel):
    deliveries: list[dict[str, Any]]
