"""The API's request and response models, generated from /openapi.json by scripts/client_models.py:
do not edit; regenerate after changing api/schemas (tests/client fails until you do)."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    StringConstraints,
)
from uuid import UUID


class ErrorBody(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    code: Annotated[str, Field(title="Code")]
    message: Annotated[str, Field(title="Message")]
    details: Annotated[Any | None, Field(title="Details")] = None


class ErrorResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    error: ErrorBody


class MemoryOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    content: Annotated[str, Field(title="Content")]
    score: Annotated[float | None, Field(title="Score")] = None
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Visibility")
    ]
    memory_scope: Annotated[str, Field(alias="memoryScope", title="Memory scope")]
    source_type: Annotated[str, Field(alias="sourceType", title="Source type")]
    subject_refs: Annotated[
        dict[str, Any], Field(alias="subjectRefs", title="Subject refs")
    ]
    assertion_id: Annotated[
        str | None, Field(alias="assertionId", title="Assertion ID")
    ] = None
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]
    occurred_at: Annotated[
        str | None,
        Field(
            alias="occurredAt",
            description="When what the memory says happened, if the writer said (null: unknown).",
            title="Occurred at",
        ),
    ] = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="The writer's own metadata (without the platform's keys), on exact reads and listings; null in search hits.",
            title="Metadata",
        ),
    ] = None


class SearchResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    results: Annotated[list[MemoryOut], Field(title="Results")]


class EventOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    kind: Annotated[str, Field(title="Kind")]
    audience: Annotated[dict[str, str], Field(title="Audience")]
    data: Annotated[dict[str, Any], Field(title="Data")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class EventListResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    events: Annotated[list[EventOut], Field(title="Events")]
    next_cursor: Annotated[
        str,
        Field(
            alias="nextCursor",
            description="Continue from here (also when the page is empty).",
            title="Next cursor",
        ),
    ]


class UserOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]
    created_by: Annotated[str, Field(alias="createdBy", title="Created by")]
    shares_with_team: Annotated[
        bool, Field(alias="sharesWithTeam", title="Shares with team")
    ]
    share_is_default: Annotated[
        bool, Field(alias="shareIsDefault", title="Share is default")
    ]
    share_changed_by: Annotated[
        str | None, Field(alias="shareChangedBy", title="Share changed by")
    ]


class UsersResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    users: Annotated[list[UserOut], Field(title="Users")]


class SharingIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    user_id: Annotated[
        str, Field(alias="userId", max_length=200, min_length=1, title="User ID")
    ]
    share: Annotated[bool, Field(title="Share")]


class ReviewQueueResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    items: Annotated[list[dict[str, Any]], Field(title="Items")]
    next_cursor: Annotated[
        str | None, Field(alias="nextCursor", title="Next cursor")
    ] = None


class AssertionDecisionIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    decision: Annotated[
        Literal["approve", "reject", "supersede"], Field(title="Decision")
    ]
    successor_id: Annotated[
        UUID | None,
        Field(
            alias="successorId",
            description="supersede: the assertion that replaces it.",
            title="Successor ID",
        ),
    ] = None
    reason_code: Annotated[
        Annotated[str, StringConstraints(max_length=64, pattern=r"^[a-z][a-z0-9_]*$")]
        | None,
        Field(alias="reasonCode", title="Reason code"),
    ] = None
    note: Annotated[
        Annotated[str, StringConstraints(max_length=2000)] | None, Field(title="Note")
    ] = None


class DecisionResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    decided: Annotated[
        list[str],
        Field(description="Ids whose state the decision changed.", title="Decided"),
    ]
    unchanged: Annotated[
        list[str],
        Field(
            description="Decisions recorded; the state was already so.",
            title="Unchanged",
        ),
    ]
    refused: Annotated[list[dict[str, str]], Field(title="Refused")]
    projected: Annotated[
        int,
        Field(
            description="Projection jobs run at once (recall sees them now).",
            title="Projected",
        ),
    ]


class Ids(RootModel[list[UUID]]):
    root: Annotated[list[UUID], Field(max_length=500, title="IDs")] = None


class BulkDecisionIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    decision: Annotated[Literal["approve", "reject"], Field(title="Decision")]
    type: Annotated[str | None, Field(title="Type")] = None
    audience: Annotated[
        Literal["private", "team", "workspace", "channel"] | None,
        Field(title="Audience"),
    ] = None
    origin: Annotated[str | None, Field(title="Origin")] = None
    ids: Annotated[Ids | None, Field(title="IDs")] = None
    limit: Annotated[int | None, Field(ge=1, le=500, title="Limit")] = 500
    reason_code: Annotated[
        Annotated[str, StringConstraints(max_length=64, pattern=r"^[a-z][a-z0-9_]*$")]
        | None,
        Field(alias="reasonCode", title="Reason code"),
    ] = None
    note: Annotated[
        Annotated[str, StringConstraints(max_length=2000)] | None, Field(title="Note")
    ] = None


class ConflictResolutionIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    action: Annotated[
        Literal["keep_one", "keep_both", "merge", "reject_challenger"],
        Field(title="Action"),
    ]
    keep_id: Annotated[
        UUID | None,
        Field(
            alias="keepId",
            description="keep_one and merge: the assertion that stays.",
            title="Keep ID",
        ),
    ] = None


class WikiDecisionIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    decision: Annotated[Literal["approve", "reject"], Field(title="Decision")]
    reason: Annotated[
        Annotated[str, StringConstraints(max_length=2000)] | None, Field(title="Reason")
    ] = None


class CallerContext(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    user_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            alias="userId",
            description="Runtime keys only: the user the request acts for (omitted: no user, a system context).",
            title="User ID",
        ),
    ] = None
    session_key: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(alias="sessionKey", title="Session key"),
    ] = None
    group_room_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(alias="groupRoomId", title="Group room ID"),
    ] = None
    channel_thread_key: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(alias="channelThreadKey", title="Channel thread key"),
    ] = None
    channel_type: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=64)] | None,
        Field(alias="channelType", title="Channel type"),
    ] = None


class MemoryCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    content: Annotated[
        str,
        Field(
            description="The memory text (size limit applies).",
            min_length=1,
            title="Content",
        ),
    ]
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"] | None,
        Field(
            description="Omitted: private, or the team when the user shares with the team.",
            title="Visibility",
        ),
    ] = None
    explicit_private: Annotated[
        bool | None,
        Field(
            alias="explicitPrivate",
            description="True: the memory is private to the acting user, whatever visibility and the user's team-sharing preference say (needs a user).",
            title="Explicit private",
        ),
    ] = False
    subject_refs: Annotated[
        dict[str, str | int | float] | None,
        Field(alias="subjectRefs", title="Subject refs"),
    ] = None
    title: Annotated[
        Annotated[str, StringConstraints(max_length=300)] | None, Field(title="Title")
    ] = None
    assertion_type: Annotated[
        Literal["fact", "preference", "decision", "constraint", "procedure"] | None,
        Field(alias="assertionType", title="Assertion type"),
    ] = "fact"
    subject: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            description="What the fact is about (e.g. 'VAT filing of Mandant Nord'): with predicate, the slot it fills. Consolidation only weighs facts of one slot against each other. Omitted: the subjectRefs as key=value text; neither: no slot.",
            title="Subject",
        ),
    ] = None
    predicate: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            description="Which property of the subject the fact states (e.g. 'due date'). Omitted: the assertionType. Needs a subject or subjectRefs.",
            title="Predicate",
        ),
    ] = None
    occurred_at: Annotated[
        AwareDatetime | None,
        Field(
            alias="occurredAt",
            description="When what the memory says happened (ISO-8601 with an offset, e.g. 2024-05-01T09:30:00+02:00; at most a day ahead), as opposed to when it is written.",
            title="Occurred at",
        ),
    ] = None
    valid_until: Annotated[
        AwareDatetime | None,
        Field(
            alias="validUntil",
            description="When what the memory says stops being true (ISO-8601 with an offset): from then on it is no longer recalled, and the expiry sweep marks its assertion expired (its history stays). A past time stores a fact that has already ended.",
            title="Valid until",
        ),
    ] = None
    valid_from: Annotated[
        AwareDatetime | None,
        Field(
            alias="validFrom",
            description="When what the memory says starts being true (ISO-8601 with an offset): before then it is not recalled (e.g. a rule that applies from next month).",
            title="Valid from",
        ),
    ] = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="Your own JSON object (at most 16 KiB, no secrets), searchable with filters (metadata.<key>); the keys apiKeyId, correctionOf, keyKind, memoryClass, writer, writtenVia are the platform's and refused here.",
            title="Metadata",
        ),
    ] = None
    context: CallerContext | None = None


class Audience(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    kind: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Kind")
    ]
    key: Annotated[str, Field(title="Key")]


class StoreResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    audience: Audience
    deduplicated: Annotated[bool, Field(title="Deduplicated")]
    assertion_id: Annotated[
        str | None, Field(alias="assertionId", title="Assertion ID")
    ] = None
    assertion_status: Annotated[
        str | None, Field(alias="assertionStatus", title="Assertion status")
    ] = None


class MemoryListResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    memories: Annotated[
        list[MemoryOut],
        Field(description="Newest first, with their metadata.", title="Memories"),
    ]
    next_cursor: Annotated[
        str | None,
        Field(
            alias="nextCursor",
            description="Pass as cursor for the next page; null: this was the last.",
            title="Next cursor",
        ),
    ]


class MemoryCorrection(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    content: Annotated[
        str,
        Field(
            description="What is true instead: the corrected statement, which replaces the memory (size limit applies).",
            min_length=1,
            title="Content",
        ),
    ]
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="The corrected memory's own metadata (the rules of a write's); omitted: the corrected memory keeps the old one's.",
            title="Metadata",
        ),
    ] = None
    context: CallerContext | None = None


class CorrectionResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(description="The new memory.", title="ID")]
    assertion_id: Annotated[
        str | None, Field(alias="assertionId", title="Assertion ID")
    ] = None
    status: Annotated[
        Literal["corrected", "proposed"],
        Field(
            description="corrected: the old memory is superseded and the new one recalled; proposed: an agent's correction, waiting for a person's review (the old stays recalled)",
            title="Status",
        ),
    ]
    corrected_id: Annotated[str, Field(alias="correctedId", title="Corrected ID")]
    conflict_id: Annotated[
        str | None, Field(alias="conflictId", title="Conflict ID")
    ] = None


class ForgetResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    memory_id: Annotated[str, Field(alias="memoryId", title="Memory ID")]
    erasure_id: Annotated[str, Field(alias="erasureId", title="Erasure ID")]
    removed: Annotated[dict[str, int], Field(title="Removed")]
    total_removed: Annotated[int, Field(alias="totalRemoved", title="Total removed")]


class Limit(RootModel[int]):
    root: Annotated[int, Field(ge=1, le=50, title="Limit")] = None


class SourceTypes(RootModel[list[str]]):
    root: Annotated[
        list[str],
        Field(
            description="Only these source types.",
            max_length=12,
            min_length=1,
            title="Source types",
        ),
    ] = None


class ContextSearch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    occurred_after: Annotated[
        Annotated[str, StringConstraints(max_length=64)] | None,
        Field(
            alias="occurredAfter",
            description="Only memories whose event time (occurredAt) is at or after this ISO-8601 date-time with an offset; memories without an event time never match.",
            title="Occurred after",
        ),
    ] = None
    occurred_before: Annotated[
        Annotated[str, StringConstraints(max_length=64)] | None,
        Field(
            alias="occurredBefore",
            description="Only memories whose event time (occurredAt) is before this date-time.",
            title="Occurred before",
        ),
    ] = None
    created_after: Annotated[
        Annotated[str, StringConstraints(max_length=64)] | None,
        Field(
            alias="createdAfter",
            description="Only memories written at or after this ISO-8601 date-time with an offset.",
            title="Created after",
        ),
    ] = None
    created_before: Annotated[
        Annotated[str, StringConstraints(max_length=64)] | None,
        Field(
            alias="createdBefore",
            description="Only memories written before this ISO-8601 date-time with an offset.",
            title="Created before",
        ),
    ] = None
    query: Annotated[str, Field(max_length=2000, min_length=1, title="Query")]
    depth: Annotated[Literal["normal", "deep"] | None, Field(title="Depth")] = "normal"
    intent: Annotated[
        Literal["answer", "wiki_synthesis"] | None, Field(title="Intent")
    ] = None
    limit: Annotated[Limit | None, Field(title="Limit")] = None
    context: CallerContext | None = None
    filter: Annotated[
        dict[str, Any] | None,
        Field(
            description="A filter over metadata and subject refs (docs/search-filters.md); with any filter field only memories are searched.",
            title="Filter",
        ),
    ] = None
    source_types: Annotated[
        SourceTypes | None,
        Field(
            alias="sourceTypes",
            description="Only these source types.",
            title="Source types",
        ),
    ] = None
    subject_refs: Annotated[
        dict[str, Any] | None,
        Field(
            alias="subjectRefs",
            description="What the conversation is about, to prefer the memories about it: any of mandantId, documentId, taskId, moduleSlug, routePath, groupRoomId, channelThreadKey, each a string (memories naming the same subject rank higher; it filters nothing).",
            title="Subject refs",
        ),
    ] = None


class ContextItemOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    kind: Annotated[str, Field(title="Kind")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    content: Annotated[str, Field(title="Content")]
    score: Annotated[float | None, Field(title="Score")] = None
    found_by: Annotated[list[str] | None, Field(alias="foundBy", title="Found by")] = (
        None
    )
    details: Annotated[dict[str, Any] | None, Field(title="Details")] = None


class ContextSearchResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    results: Annotated[list[ContextItemOut], Field(title="Results")]


class Limit1(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Most entities, claims and edges each (default: MEMORY_GRAPH_SEARCH_LIMIT).",
            ge=1,
            le=50,
            title="Limit",
        ),
    ] = None


class KnowledgeSearch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    query: Annotated[str, Field(max_length=2000, min_length=1, title="Query")]
    limit: Annotated[
        Limit1 | None,
        Field(
            description="Most entities, claims and edges each (default: MEMORY_GRAPH_SEARCH_LIMIT).",
            title="Limit",
        ),
    ] = None
    context: CallerContext | None = None


class KnowledgeClaimOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    subject_id: Annotated[str, Field(alias="subjectId", title="Subject ID")]
    subject: Annotated[str, Field(title="Subject")]
    predicate: Annotated[str, Field(title="Predicate")]
    object_id: Annotated[str | None, Field(alias="objectId", title="Object ID")] = None
    object: Annotated[str | None, Field(title="Object")] = None
    value: Annotated[str | None, Field(title="Value")] = None
    text: Annotated[str, Field(title="Text")]
    confidence: Annotated[float, Field(title="Confidence")]
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Visibility")
    ]
    valid_from: Annotated[str | None, Field(alias="validFrom", title="Valid from")] = (
        None
    )
    valid_to: Annotated[str | None, Field(alias="validTo", title="Valid to")] = None
    score: Annotated[float, Field(title="Score")]
    lexical_rank: Annotated[
        int | None, Field(alias="lexicalRank", title="Lexical rank")
    ] = None
    vector_rank: Annotated[
        int | None, Field(alias="vectorRank", title="Vector rank")
    ] = None
    similarity: Annotated[float | None, Field(title="Similarity")] = None
    decay_factor: Annotated[
        float | None,
        Field(
            alias="decayFactor",
            description="Recency decay applied to the score (omitted when decay is disabled).",
            title="Decay factor",
        ),
    ] = None


class KnowledgeEdgeOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    source_id: Annotated[str, Field(alias="sourceId", title="Source ID")]
    source: Annotated[str, Field(title="Source")]
    relation_type: Annotated[str, Field(alias="relationType", title="Relation type")]
    target_id: Annotated[str, Field(alias="targetId", title="Target ID")]
    target: Annotated[str, Field(title="Target")]
    confidence: Annotated[float, Field(title="Confidence")]
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Visibility")
    ]
    via_entity_id: Annotated[
        str,
        Field(
            alias="viaEntityId",
            description="The matched entity the edge was expanded from.",
            title="Via entity ID",
        ),
    ]
    score: Annotated[float, Field(title="Score")]
    decay_factor: Annotated[
        float | None, Field(alias="decayFactor", title="Decay factor")
    ] = None


class KnowledgeEntityOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    label: Annotated[str, Field(title="Label")]
    entity_type: Annotated[str, Field(alias="entityType", title="Entity type")]
    aliases: Annotated[list[str], Field(title="Aliases")]
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Visibility")
    ]
    subject_refs: Annotated[
        dict[str, Any], Field(alias="subjectRefs", title="Subject refs")
    ]
    score: Annotated[float, Field(title="Score")]
    lexical_rank: Annotated[
        int | None, Field(alias="lexicalRank", title="Lexical rank")
    ] = None
    vector_rank: Annotated[
        int | None, Field(alias="vectorRank", title="Vector rank")
    ] = None
    similarity: Annotated[float | None, Field(title="Similarity")] = None


class KnowledgeSearchResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    entities: Annotated[list[KnowledgeEntityOut], Field(title="Entities")]
    claims: Annotated[list[KnowledgeClaimOut], Field(title="Claims")]
    edges: Annotated[list[KnowledgeEdgeOut], Field(title="Edges")]
    lexical_only: Annotated[
        bool,
        Field(
            alias="lexicalOnly",
            description="No vector arm ran (no active embedding generation, provider down, ...).",
            title="Lexical only",
        ),
    ]
    block: Annotated[
        str,
        Field(
            description="The 'Structured knowledge graph' prompt block of the result ('' when it holds no claim or edge).",
            title="Block",
        ),
    ]


class KnowledgeEntityResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    entity: Annotated[dict[str, Any], Field(title="Entity")]
    claims: Annotated[
        dict[str, list[dict[str, Any]]],
        Field(description="asSubject, asObject", title="Claims"),
    ]
    edges: Annotated[
        dict[str, list[dict[str, Any]]],
        Field(description="outgoing, incoming", title="Edges"),
    ]
    evidence_count: Annotated[int, Field(alias="evidenceCount", title="Evidence count")]
    truncated: Annotated[bool, Field(title="Truncated")]


class KnowledgeNeighborsResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    entity: Annotated[dict[str, Any], Field(title="Entity")]
    depth: Annotated[int, Field(title="Depth")]
    neighbors: Annotated[
        list[dict[str, Any]],
        Field(description="{id, label, distance, viaEdgeId}", title="Neighbors"),
    ]
    edges: Annotated[list[dict[str, Any]], Field(title="Edges")]
    truncated: Annotated[bool, Field(title="Truncated")]


class KnowledgeExplainResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    claim: Annotated[dict[str, Any], Field(title="Claim")]
    source_refs: Annotated[
        list[dict[str, Any]],
        Field(
            alias="sourceRefs",
            description="Each ref ({memoryId, assertionId} or {dreamId}) and whether it supports the claim now (its assertion may be told).",
            title="Source refs",
        ),
    ]
    supported: Annotated[bool, Field(title="Supported")]
    evidence: Annotated[list[dict[str, Any]], Field(title="Evidence")]
    dream_ids: Annotated[list[str], Field(alias="dreamIds", title="Dream IDs")]
    truncated: Annotated[bool, Field(title="Truncated")]


class AssertionAsOfOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    text: Annotated[
        str,
        Field(
            description="The assertion's text as recorded at that time.", title="Text"
        ),
    ]
    assertion_type: Annotated[str, Field(alias="assertionType", title="Assertion type")]
    visibility: Annotated[
        Literal["private", "team", "workspace", "channel"], Field(title="Visibility")
    ]
    then: Annotated[
        dict[str, Any],
        Field(
            description="The state believed at that time: status, reviewState, validFrom, validTo, recordedAt, backfilled.",
            title="Then",
        ),
    ]
    now: Annotated[
        dict[str, Any],
        Field(
            description="Its state now: status, reviewState, text, validFrom, validTo.",
            title="Now",
        ),
    ]
    earlier: Annotated[
        list[dict[str, Any]],
        Field(description="Earlier revisions, nearest first.", title="Earlier"),
    ]
    later: Annotated[
        list[dict[str, Any]],
        Field(
            description="Later revisions (what replaced it), nearest first.",
            title="Later",
        ),
    ]


class AssertionAsOfResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    at: Annotated[str, Field(description="The moment asked about (UTC).", title="At")]
    results: Annotated[list[AssertionAsOfOut], Field(title="Results")]


class InjectedFeedback(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    run_id: Annotated[
        str, Field(alias="runId", max_length=200, min_length=1, title="Run ID")
    ]
    assertion_ids: Annotated[
        list[str],
        Field(
            alias="assertionIds", max_length=100, min_length=1, title="Assertion IDs"
        ),
    ]
    context: CallerContext | None = None


class InjectedResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    run_id: Annotated[str, Field(alias="runId", title="Run ID")]
    counted: Annotated[
        int,
        Field(
            description="Distinct assertions the caller may see, counted.",
            title="Counted",
        ),
    ]
    recorded: Annotated[
        int,
        Field(description="Of those, first injections in this run.", title="Recorded"),
    ]
    ignored: Annotated[
        int,
        Field(
            description="Distinct ids not counted (unknown or not visible).",
            title="Ignored",
        ),
    ]


class ExplicitFeedback(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    run_id: Annotated[
        str,
        Field(
            alias="runId",
            description="The run the assertions were recalled in (idempotent).",
            max_length=200,
            min_length=1,
            title="Run ID",
        ),
    ]
    assertion_ids: Annotated[
        list[str],
        Field(
            alias="assertionIds", max_length=100, min_length=1, title="Assertion IDs"
        ),
    ]
    kind: Annotated[Literal["helpful", "unhelpful"], Field(title="Kind")]
    note: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=1000)] | None,
        Field(description="Why, in a few words (kept with the event).", title="Note"),
    ] = None
    context: CallerContext | None = None


class ExplicitResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    run_id: Annotated[str, Field(alias="runId", title="Run ID")]
    kind: Annotated[str, Field(title="Kind")]
    counted: Annotated[
        int,
        Field(
            description="Distinct assertions the caller may see, counted.",
            title="Counted",
        ),
    ]
    recorded: Annotated[
        int, Field(description="Of those, new for this run and kind.", title="Recorded")
    ]
    ignored: Annotated[
        int,
        Field(
            description="Distinct ids not counted (unknown or not visible).",
            title="Ignored",
        ),
    ]


class CitedFeedback(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    run_id: Annotated[
        str, Field(alias="runId", max_length=200, min_length=1, title="Run ID")
    ]
    response_text: Annotated[
        str,
        Field(
            alias="responseText", max_length=100000, min_length=1, title="Response text"
        ),
    ]
    context: CallerContext | None = None


class CitedResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    run_id: Annotated[str, Field(alias="runId", title="Run ID")]
    cited: Annotated[
        list[str],
        Field(description="Assertions of the run the answer cites.", title="Cited"),
    ]


class ChannelMemberOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    channel_key: Annotated[str, Field(alias="channelKey", title="Channel key")]
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    added_by: Annotated[str, Field(alias="addedBy", title="Added by")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class ChannelMembersResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    members: Annotated[list[ChannelMemberOut], Field(title="Members")]


class ChannelMemberIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    channel_key: Annotated[
        str,
        Field(
            alias="channelKey",
            description="A channelThreadKey or a groupRoomId.",
            max_length=200,
            min_length=1,
            title="Channel key",
        ),
    ]
    user_id: Annotated[
        str, Field(alias="userId", max_length=200, min_length=1, title="User ID")
    ]


class ChannelMemberChange(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    channel_key: Annotated[str, Field(alias="channelKey", title="Channel key")]
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    changed: Annotated[
        bool,
        Field(
            description="Added: the membership is new (201; 200 when it existed). Removed: always true (404 when there was none).",
            title="Changed",
        ),
    ]


class SessionParticipantOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    role: Annotated[Literal["owner", "participant"], Field(title="Role")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class SessionParticipantsResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    participants: Annotated[list[SessionParticipantOut], Field(title="Participants")]


class SessionParticipantIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    session_key: Annotated[
        str,
        Field(alias="sessionKey", max_length=200, min_length=1, title="Session key"),
    ]
    user_id: Annotated[
        str, Field(alias="userId", max_length=200, min_length=1, title="User ID")
    ]


class SessionParticipantAdded(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    added: Annotated[
        bool,
        Field(
            description="The user was not taking part yet (201; 200 otherwise).",
            title="Added",
        ),
    ]


class GrepHitOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    kind: Annotated[Literal["message", "summary"], Field(title="Kind")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    seq: Annotated[
        int | None,
        Field(description="A message's position in its session.", title="Seq"),
    ] = None
    first_seq: Annotated[int | None, Field(alias="firstSeq", title="First seq")] = None
    last_seq: Annotated[int | None, Field(alias="lastSeq", title="Last seq")] = None
    role: Annotated[str | None, Field(title="Role")] = None
    user_id: Annotated[str | None, Field(alias="userId", title="User ID")] = None
    snippet: Annotated[
        str,
        Field(
            description="About 160 characters around the first match.", title="Snippet"
        ),
    ]
    occurred_at: Annotated[
        str | None, Field(alias="occurredAt", title="Occurred at")
    ] = None
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class GrepResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    results: Annotated[list[GrepHitOut], Field(title="Results")]
    next_before: Annotated[
        str | None,
        Field(
            alias="nextBefore",
            description="Cursor of the next (older) page; null: last.",
            title="Next before",
        ),
    ]


class ExpandedMessageOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    seq: Annotated[int, Field(title="Seq")]
    role: Annotated[str, Field(title="Role")]
    user_id: Annotated[str | None, Field(alias="userId", title="User ID")]
    content: Annotated[str, Field(title="Content")]
    run_id: Annotated[str | None, Field(alias="runId", title="Run ID")]
    occurred_at: Annotated[str | None, Field(alias="occurredAt", title="Occurred at")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class SummaryRefOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    kind: Annotated[Literal["leaf", "condensed"], Field(title="Kind")]
    depth: Annotated[int, Field(title="Depth")]
    first_seq: Annotated[int | None, Field(alias="firstSeq", title="First seq")]
    last_seq: Annotated[int | None, Field(alias="lastSeq", title="Last seq")]


class ExpandResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    summary_id: Annotated[str, Field(alias="summaryId", title="Summary ID")]
    messages: Annotated[list[ExpandedMessageOut], Field(title="Messages")]
    child_summaries: Annotated[
        list[SummaryRefOut], Field(alias="childSummaries", title="Child summaries")
    ]
    next_after_seq: Annotated[
        int | None,
        Field(
            alias="nextAfterSeq",
            description="afterSeq of the next page; null: last.",
            title="Next after seq",
        ),
    ]


class SessionNodeOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    kind: Annotated[Literal["message", "summary"], Field(title="Kind")]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    content: Annotated[str, Field(title="Content")]
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    user_id: Annotated[str | None, Field(alias="userId", title="User ID")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]
    seq: Annotated[int | None, Field(title="Seq")] = None
    role: Annotated[str | None, Field(title="Role")] = None
    run_id: Annotated[str | None, Field(alias="runId", title="Run ID")] = None
    occurred_at: Annotated[
        str | None, Field(alias="occurredAt", title="Occurred at")
    ] = None
    client_item_id: Annotated[
        str | None, Field(alias="clientItemId", title="Client item ID")
    ] = None
    metadata: Annotated[dict[str, Any] | None, Field(title="Metadata")] = None
    summaries: Annotated[
        list[SummaryRefOut] | None,
        Field(
            description="A message: the summaries covering it, leaf first.",
            title="Summaries",
        ),
    ] = None
    summary_kind: Annotated[
        Literal["leaf", "condensed"] | None,
        Field(alias="summaryKind", title="Summary kind"),
    ] = None
    depth: Annotated[int | None, Field(title="Depth")] = None
    first_seq: Annotated[int | None, Field(alias="firstSeq", title="First seq")] = None
    last_seq: Annotated[int | None, Field(alias="lastSeq", title="Last seq")] = None
    token_count: Annotated[
        int | None, Field(alias="tokenCount", title="Token count")
    ] = None
    produced_by: Annotated[
        str | None, Field(alias="producedBy", title="Produced by")
    ] = None
    model: Annotated[str | None, Field(title="Model")] = None
    memory_id: Annotated[str | None, Field(alias="memoryId", title="Memory ID")] = None
    child_count: Annotated[
        int | None, Field(alias="childCount", title="Child count")
    ] = None
    children: Annotated[
        list[str] | None,
        Field(
            description="A summary: child summaries, then raw items directly under it (at most 100).",
            title="Children",
        ),
    ] = None
    parents: Annotated[list[str] | None, Field(title="Parents")] = None


class ReplayItemOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[
        str,
        Field(
            description="message:<uuid> or summary:<uuid> (memory_describe takes it).",
            title="ID",
        ),
    ]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    kind: Annotated[Literal["summary", "message"], Field(title="Kind")]
    content: Annotated[str, Field(title="Content")]
    tokens: Annotated[int, Field(title="Tokens")]
    role: Annotated[str | None, Field(title="Role")] = None
    user_id: Annotated[str | None, Field(alias="userId", title="User ID")] = None
    seq: Annotated[int | None, Field(title="Seq")] = None
    depth: Annotated[int | None, Field(title="Depth")] = None
    first_seq: Annotated[int | None, Field(alias="firstSeq", title="First seq")] = None
    last_seq: Annotated[int | None, Field(alias="lastSeq", title="Last seq")] = None
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]


class ReplayResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    budget_tokens: Annotated[int, Field(alias="budgetTokens", title="Budget tokens")]
    tokens: Annotated[int, Field(title="Tokens")]
    summaries: Annotated[list[ReplayItemOut], Field(title="Summaries")]
    turns: Annotated[list[ReplayItemOut], Field(title="Turns")]
    omitted_turns: Annotated[
        int,
        Field(
            alias="omittedTurns",
            description="Older turns left out for the budget (their summaries or memory_expand reach them).",
            title="Omitted turns",
        ),
    ]
    omitted_summaries: Annotated[
        int, Field(alias="omittedSummaries", title="Omitted summaries")
    ]


class PromptTokens(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Tokens of the run's prompt (with contextBudgetTokens: budget pressure lets flush and compaction run sooner).",
            ge=0,
            le=2000000000,
            title="Prompt tokens",
        ),
    ] = None


class ContextBudgetTokens(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="The model context the runtime budgets against.",
            ge=1,
            le=2000000000,
            title="Context budget tokens",
        ),
    ] = None


class RunComplete(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    prompt_tokens: Annotated[
        PromptTokens | None,
        Field(
            alias="promptTokens",
            description="Tokens of the run's prompt (with contextBudgetTokens: budget pressure lets flush and compaction run sooner).",
            title="Prompt tokens",
        ),
    ] = None
    context_budget_tokens: Annotated[
        ContextBudgetTokens | None,
        Field(
            alias="contextBudgetTokens",
            description="The model context the runtime budgets against.",
            title="Context budget tokens",
        ),
    ] = None
    context: CallerContext | None = None


class RunCompletionResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    run_id: Annotated[str, Field(alias="runId", title="Run ID")]
    run_index: Annotated[int, Field(alias="runIndex", title="Run index")]
    status: Annotated[Literal["completed"], Field(title="Status")]
    completed_at: Annotated[str, Field(alias="completedAt", title="Completed at")]
    already_completed: Annotated[
        bool, Field(alias="alreadyCompleted", title="Already completed")
    ]


class SizeBytes(RootModel[int]):
    root: Annotated[int, Field(ge=0, le=1000000000000000, title="Size bytes")] = None


class ItemAttachment(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    name: Annotated[str, Field(max_length=500, min_length=1, title="Name")]
    media_type: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(alias="mediaType", title="Media type"),
    ] = None
    size_bytes: Annotated[
        SizeBytes | None, Field(alias="sizeBytes", title="Size bytes")
    ] = None
    uri: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=2000)] | None,
        Field(title="URI"),
    ] = None


class Attachments(RootModel[list[ItemAttachment]]):
    root: Annotated[list[ItemAttachment], Field(max_length=32, title="Attachments")] = (
        None
    )


class ItemMetadata(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    tool: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(description="Tool name.", title="Tool"),
    ] = None
    tool_call_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(alias="toolCallId", title="Tool call ID"),
    ] = None
    attachments: Annotated[Attachments | None, Field(title="Attachments")] = None


class SessionItemIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    role: Annotated[Literal["user", "assistant", "system", "tool"], Field(title="Role")]
    content: Annotated[
        str,
        Field(
            description="The item's text, verbatim (MEMORY_SESSION_ITEM_MAX_CHARS at most; tab and line breaks allowed).",
            title="Content",
        ),
    ]
    author_user_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            alias="authorUserId",
            description="Who said it (default: the acting user). A user key may name only itself; the runtime may name any user, who then takes part in the session.",
            title="Author user ID",
        ),
    ] = None
    occurred_at: Annotated[
        AwareDatetime | None,
        Field(
            alias="occurredAt",
            description="When it was said (ISO-8601 with an offset; at most a day ahead).",
            title="Occurred at",
        ),
    ] = None
    client_item_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            alias="clientItemId",
            description="The client's id of the item: a repeated append of it adds nothing.",
            title="Client item ID",
        ),
    ] = None
    metadata: ItemMetadata | None = None
    raw: Annotated[
        dict[str, Any] | None,
        Field(
            description="The item in the client's own form (a JSON object, e.g. an agent framework's message, function call or reasoning item), kept exactly and answered by GET .../items; content stays the text the platform searches, summarises and remembers (MEMORY_SESSION_ITEM_RAW_MAX_BYTES at most, no credentials).",
            title="Raw",
        ),
    ] = None


class SessionAppend(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    items: Annotated[
        list[SessionItemIn],
        Field(
            description="Turn items in the order they were said (MEMORY_SESSION_APPEND_MAX_ITEMS at most).",
            min_length=1,
            title="Items",
        ),
    ]
    run_id: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            alias="runId",
            description="The run (turn) the items belong to, open until completed; omitted: the items are a run of their own, completed at once.",
            title="Run ID",
        ),
    ] = None
    context: Annotated[
        CallerContext | None,
        Field(
            description="Conversation context; its sessionKey, if given, must be the path's."
        ),
    ] = None


class AppendedItemOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    client_item_id: Annotated[
        str | None, Field(alias="clientItemId", title="Client item ID")
    ]
    seq: Annotated[int, Field(title="Seq")]
    duplicate: Annotated[bool, Field(title="Duplicate")]


class SessionAppendResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    run_id: Annotated[str | None, Field(alias="runId", title="Run ID")]
    run_index: Annotated[int | None, Field(alias="runIndex", title="Run index")]
    run_status: Annotated[
        Literal["open", "completed"] | None,
        Field(alias="runStatus", title="Run status"),
    ]
    appended: Annotated[int, Field(title="Appended")]
    duplicates: Annotated[int, Field(title="Duplicates")]
    items: Annotated[list[AppendedItemOut], Field(title="Items")]


class SessionItemOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[
        str, Field(description="message:<uuid> (memory_describe takes it).", title="ID")
    ]
    trust: Annotated[Literal["untrusted-data"], Field(title="Trust")] = "untrusted-data"
    seq: Annotated[int, Field(description="Its position in the session.", title="Seq")]
    role: Annotated[str, Field(title="Role")]
    content: Annotated[str, Field(title="Content")]
    user_id: Annotated[str | None, Field(alias="userId", title="User ID")]
    run_id: Annotated[str | None, Field(alias="runId", title="Run ID")]
    client_item_id: Annotated[
        str | None, Field(alias="clientItemId", title="Client item ID")
    ]
    occurred_at: Annotated[str | None, Field(alias="occurredAt", title="Occurred at")]
    created_at: Annotated[str, Field(alias="createdAt", title="Created at")]
    metadata: Annotated[dict[str, Any], Field(title="Metadata")]
    raw: Annotated[
        dict[str, Any] | None,
        Field(
            description="The item's raw form exactly as written (null: it was written without one).",
            title="Raw",
        ),
    ]
    compacted: Annotated[
        bool,
        Field(
            description="A summary covers it (it can no longer be popped).",
            title="Compacted",
        ),
    ]


class SessionItemsResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    items: Annotated[list[SessionItemOut], Field(title="Items")]
    next_before_seq: Annotated[
        int | None,
        Field(
            alias="nextBeforeSeq",
            description="Older items remain: beforeSeq of the next page; null: none.",
            title="Next before seq",
        ),
    ]
    next_after_seq: Annotated[
        int | None,
        Field(
            alias="nextAfterSeq",
            description="Newer items remain: afterSeq of the next page; null: none (paging forward).",
            title="Next after seq",
        ),
    ]


class SessionItemPopped(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    item: SessionItemOut
    session_removed: Annotated[
        bool,
        Field(
            alias="sessionRemoved",
            description="No item of anyone was left: the session went too (state, runs, participation).",
            title="Session removed",
        ),
    ]
    erasure_id: Annotated[str, Field(alias="erasureId", title="Erasure ID")]
    removed: Annotated[
        dict[str, int],
        Field(
            description="Rows removed per table (derived summaries, memories, ... included).",
            title="Removed",
        ),
    ]
    total_removed: Annotated[int, Field(alias="totalRemoved", title="Total removed")]


class SessionItemsCleared(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    session_key: Annotated[str, Field(alias="sessionKey", title="Session key")]
    items_removed: Annotated[int, Field(alias="itemsRemoved", title="Items removed")]
    session_removed: Annotated[
        bool,
        Field(
            alias="sessionRemoved",
            description="No item of anyone was left: the session went too (state, runs, participation).",
            title="Session removed",
        ),
    ]
    erasure_id: Annotated[
        str | None,
        Field(
            alias="erasureId",
            description="The erasure report; null: nothing of yours was there.",
            title="Erasure ID",
        ),
    ]
    removed: Annotated[dict[str, int], Field(title="Removed")]
    total_removed: Annotated[int, Field(alias="totalRemoved", title="Total removed")]


class ProfileItemModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    kind: Annotated[
        str, Field(description="claim (knowledge graph) or memory.", title="Kind")
    ]
    id: Annotated[str, Field(title="ID")]
    text: Annotated[str, Field(title="Text")]
    source: Annotated[
        str,
        Field(
            description="The claim's predicate or the memory's sourceType.",
            title="Source",
        ),
    ]
    at: Annotated[AwareDatetime | None, Field(title="At")] = None


class ProfileResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    user_id: Annotated[str, Field(alias="userId", title="User ID")]
    static_facts: Annotated[
        list[ProfileItemModel], Field(alias="staticFacts", title="Static facts")
    ]
    recent_context: Annotated[
        list[ProfileItemModel], Field(alias="recentContext", title="Recent context")
    ]
    built_at: Annotated[AwareDatetime, Field(alias="builtAt", title="Built at")]
    persisted: Annotated[
        bool, Field(description="Stored in agent_user_profiles.", title="Persisted")
    ]
    cached: Annotated[
        bool, Field(description="Answered from the cache, not rebuilt.", title="Cached")
    ]
    text: Annotated[
        str,
        Field(
            description="The [User profile] prompt block (untrusted data).",
            title="Text",
        ),
    ]
    trust: Annotated[str | None, Field(title="Trust")] = "untrusted-data"


class ActiveGeneration(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    id: Annotated[int, Field(title="ID")]
    key: Annotated[str, Field(title="Key")]
    provider: Annotated[str, Field(title="Provider")]
    model: Annotated[str, Field(title="Model")]
    dimensions: Annotated[int, Field(title="Dimensions")]


class AssertionCounts(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    by_status: Annotated[dict[str, int], Field(alias="byStatus", title="By status")]
    by_review_state: Annotated[
        dict[str, int], Field(alias="byReviewState", title="By review state")
    ]


class BrokenIndex(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    index: Annotated[str, Field(title="Index")]
    table: Annotated[str, Field(title="Table")]
    kind: Annotated[str, Field(title="Kind")]
    state: Annotated[str, Field(title="State")]
    generation_key: Annotated[
        str | None, Field(alias="generationKey", title="Generation key")
    ]


class DreamOut(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    instance_key: Annotated[str, Field(alias="instanceKey", title="Instance key")]
    partition_key: Annotated[str, Field(alias="partitionKey", title="Partition key")]
    audience: Audience
    status: Annotated[str, Field(title="Status")]
    trigger: Annotated[str | None, Field(title="Trigger")] = None
    model: Annotated[str | None, Field(title="Model")] = None
    dry_run: Annotated[bool, Field(alias="dryRun", title="Dry run")]
    dagster_run_id: Annotated[
        str | None, Field(alias="dagsterRunId", title="Dagster run ID")
    ] = None
    started_at: Annotated[str | None, Field(alias="startedAt", title="Started at")] = (
        None
    )
    finished_at: Annotated[
        str | None, Field(alias="finishedAt", title="Finished at")
    ] = None
    rolled_back_at: Annotated[
        str | None, Field(alias="rolledBackAt", title="Rolled back at")
    ] = None
    error: Annotated[str | None, Field(title="Error")] = None
    diagnostics: Annotated[
        list[str] | None,
        Field(description="Distinct diagnostic codes of the row.", title="Diagnostics"),
    ] = None
    stats: Annotated[
        dict[str, Any] | None,
        Field(
            description="inputs, inputsByPool, excludedAutomation, proposed, accepted, created, reused, activated, rejected, rejectedByReason, deferredEmbeddings, wikiProposals, durationSeconds (and rollback when rolled back).",
            title="Stats",
        ),
    ] = None


class GenerationCount(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    id: Annotated[int, Field(title="ID")]
    key: Annotated[str, Field(title="Key")]
    status: Annotated[str, Field(title="Status")]
    chunks: Annotated[int, Field(title="Chunks")]


class GraphBacklog(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    entities: Annotated[int, Field(title="Entities")]
    claims: Annotated[int, Field(title="Claims")]


class GraphCounts(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    entities: Annotated[dict[str, int], Field(title="Entities")]
    claims: Annotated[dict[str, int], Field(title="Claims")]
    edges: Annotated[dict[str, int], Field(title="Edges")]


class IndexStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    healthy: Annotated[bool, Field(title="Healthy")]
    broken: Annotated[list[BrokenIndex], Field(title="Broken")]
    repair: Annotated[str | None, Field(title="Repair")]


class MemoryCounts(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    by_scope: Annotated[dict[str, int], Field(alias="byScope", title="By scope")]
    by_visibility: Annotated[
        dict[str, int], Field(alias="byVisibility", title="By visibility")
    ]
    by_source_type: Annotated[
        dict[str, int], Field(alias="bySourceType", title="By source type")
    ]
    by_state: Annotated[dict[str, int], Field(alias="byState", title="By state")]


class ModelUsageWindow(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    dreams: Annotated[
        int, Field(description="Dreams that called their model.", title="Dreams")
    ]
    calls: Annotated[int, Field(title="Calls")]
    prompt_tokens: Annotated[int, Field(alias="promptTokens", title="Prompt tokens")]
    completion_tokens: Annotated[
        int, Field(alias="completionTokens", title="Completion tokens")
    ]
    total_tokens: Annotated[int, Field(alias="totalTokens", title="Total tokens")]
    estimated_cost_usd: Annotated[
        float,
        Field(
            alias="estimatedCostUsd",
            description="Estimated from MEMORY_MODEL_PRICES; calls of unpriced models count 0 (see unpricedCalls).",
            title="Estimated cost USD",
        ),
    ]
    unpriced_calls: Annotated[int, Field(alias="unpricedCalls", title="Unpriced calls")]


class OutboxStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    pending: Annotated[int, Field(title="Pending")]
    failed: Annotated[int, Field(title="Failed")]
    oldest_age_seconds: Annotated[
        float | None, Field(alias="oldestAgeSeconds", title="Oldest age seconds")
    ]


class PromptFile(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    path: Annotated[str, Field(title="Path")]
    sha256: Annotated[str | None, Field(title="Sha 256")]


class ReembedBacklog(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    chunks: Annotated[int, Field(title="Chunks")]
    assertions: Annotated[int, Field(title="Assertions")]
    graph: Annotated[
        GraphBacklog,
        Field(
            description="Active graph entities and claims without a vector of the active generation."
        ),
    ]


class SessionStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    due: Annotated[int, Field(title="Due")]
    waiting_for_retry: Annotated[
        int, Field(alias="waitingForRetry", title="Waiting for retry")
    ]
    oldest_due_age_seconds: Annotated[
        float | None, Field(alias="oldestDueAgeSeconds", title="Oldest due age seconds")
    ]
    sessions: Annotated[int, Field(title="Sessions")]
    runs: Annotated[int, Field(title="Runs")]
    messages: Annotated[int, Field(title="Messages")]
    summaries: Annotated[int, Field(title="Summaries")]
    last_flush_at: Annotated[
        str | None, Field(alias="lastFlushAt", title="Last flush at")
    ]
    last_compaction_at: Annotated[
        str | None, Field(alias="lastCompactionAt", title="Last compaction at")
    ]


class WorkspaceStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    files: Annotated[int, Field(title="Files")]
    last_changed_at: Annotated[
        str | None,
        Field(
            alias="lastChangedAt",
            description="When a sync last changed a file's row.",
            title="Last changed at",
        ),
    ]
    prompt_files: Annotated[
        list[PromptFile],
        Field(
            alias="promptFiles",
            description="Path and content hash of each (the first 50 by path).",
            title="Prompt files",
        ),
    ]
    last_sync: Annotated[
        dict[str, Any] | None,
        Field(
            alias="lastSync",
            description="The last sync's result: files, added, updated, unchanged, deleted, refused (path and reason), truncated, seconds, syncedAt; null before the first sync.",
            title="Last sync",
        ),
    ]


class Limit2(RootModel[int]):
    root: Annotated[
        int,
        Field(
            description="Most rows converted (default: MEMORY_REEMBED_RUN_LIMIT).",
            ge=1,
            le=5000,
            title="Limit",
        ),
    ] = None


class ReembedRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    limit: Annotated[
        Limit2 | None,
        Field(
            description="Most rows converted (default: MEMORY_REEMBED_RUN_LIMIT).",
            title="Limit",
        ),
    ] = None


class ReembedResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    instance_key: Annotated[str, Field(title="Instance key")]
    generation_key: Annotated[str, Field(title="Generation key")]
    chunks_converted: Annotated[int, Field(title="Chunks converted")]
    assertions_embedded: Annotated[int, Field(title="Assertions embedded")]
    remaining_chunks: Annotated[int, Field(title="Remaining chunks")]
    remaining_assertions: Annotated[int, Field(title="Remaining assertions")]
    batches: Annotated[int, Field(title="Batches")]
    error: Annotated[str | None, Field(title="Error")] = None
    graph_embedded: Annotated[
        int | None,
        Field(
            description="Knowledge-graph entities and claims embedded in this run.",
            title="Graph embedded",
        ),
    ] = 0
    graph_deferred: Annotated[
        int | None,
        Field(
            description="Graph items left without a vector (provider failure).",
            title="Graph deferred",
        ),
    ] = 0


class RetentionRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    dry_run: Annotated[
        bool | None,
        Field(
            alias="dryRun",
            description="Count what would go; delete nothing.",
            title="Dry run",
        ),
    ] = False
    audience_kind: Annotated[
        Literal["private", "team", "workspace", "channel"] | None,
        Field(alias="audienceKind", title="Audience kind"),
    ] = None
    audience_key: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=512)] | None,
        Field(alias="audienceKey", title="Audience key"),
    ] = None
    prune_context: Annotated[
        bool | None,
        Field(
            alias="pruneContext",
            description="Also delete context messages already covered by a summary.",
            title="Prune context",
        ),
    ] = False


class RetentionResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    dry_run: Annotated[bool, Field(alias="dryRun", title="Dry run")]
    instance_key: Annotated[
        str | None, Field(alias="instanceKey", title="Instance key")
    ]
    audience: Annotated[dict[str, str] | None, Field(title="Audience")]
    prune_context: Annotated[bool, Field(alias="pruneContext", title="Prune context")]
    retention_days: Annotated[int, Field(alias="retentionDays", title="Retention days")]
    evidence_cap: Annotated[int, Field(alias="evidenceCap", title="Evidence cap")]
    deleted: Annotated[dict[str, int], Field(title="Deleted")]


class WorkspaceSyncResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
    )


class ErasureRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    user_id: Annotated[
        str, Field(alias="userId", max_length=256, min_length=1, title="User ID")
    ]


class ErasureResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
    )


class DreamListResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    dreams: Annotated[list[DreamOut], Field(title="Dreams")]


class DreamLaunch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    partition: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=1000)] | None,
        Field(
            description="One audience partition key instance/kind/key of the key's instance.",
            title="Partition",
        ),
    ] = None
    all_eligible: Annotated[
        bool | None,
        Field(
            alias="allEligible",
            description="Every partition of the key's instance that meets dream_min_inputs.",
            title="All eligible",
        ),
    ] = False
    model: Annotated[
        Annotated[str, StringConstraints(min_length=1, max_length=200)] | None,
        Field(
            description="Exact maintenance model (default: resolution).", title="Model"
        ),
    ] = None
    dry_run: Annotated[
        bool | None,
        Field(
            alias="dryRun",
            description="Proposals and diagnostics only; no ledger change.",
            title="Dry run",
        ),
    ] = False


class DreamLaunchResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    run_id: Annotated[
        str | None,
        Field(
            alias="runId",
            description="The Dagster run id; null when nothing is eligible.",
            title="Run ID",
        ),
    ]
    partitions: Annotated[list[str], Field(title="Partitions")]
    model: Annotated[str | None, Field(title="Model")] = None
    dry_run: Annotated[bool, Field(alias="dryRun", title="Dry run")]
    mode: Annotated[
        str | None,
        Field(
            description="'queued' (the Dagster daemon launches it) or 'in_process' (it runs in the API process); null: not launched.",
            title="Mode",
        ),
    ] = None


class DreamModel(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    model: Annotated[str | None, Field(title="Model")] = None
    source: Annotated[
        str | None,
        Field(description="explicit | setting | default | ...", title="Source"),
    ] = None


class DreamRollbackState(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    rolled_back: Annotated[bool, Field(alias="rolledBack", title="Rolled back")]
    rolled_back_at: Annotated[
        str | None, Field(alias="rolledBackAt", title="Rolled back at")
    ] = None
    reverted: Annotated[
        int, Field(description="Assertions tombstoned or put back.", title="Reverted")
    ]
    kept_by_person: Annotated[
        int,
        Field(
            alias="keptByPerson",
            description="Assertions kept because a person decided them.",
            title="Kept by person",
        ),
    ]
    result: Annotated[
        dict[str, Any] | None,
        Field(description="The rollback's full result.", title="Result"),
    ] = None


class DreamDetailResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    instance_key: Annotated[str, Field(alias="instanceKey", title="Instance key")]
    partition_key: Annotated[str, Field(alias="partitionKey", title="Partition key")]
    audience: Audience
    status: Annotated[str, Field(title="Status")]
    trigger: Annotated[str | None, Field(title="Trigger")] = None
    model: Annotated[str | None, Field(title="Model")] = None
    dry_run: Annotated[bool, Field(alias="dryRun", title="Dry run")]
    dagster_run_id: Annotated[
        str | None, Field(alias="dagsterRunId", title="Dagster run ID")
    ] = None
    started_at: Annotated[str | None, Field(alias="startedAt", title="Started at")] = (
        None
    )
    finished_at: Annotated[
        str | None, Field(alias="finishedAt", title="Finished at")
    ] = None
    rolled_back_at: Annotated[
        str | None, Field(alias="rolledBackAt", title="Rolled back at")
    ] = None
    error: Annotated[str | None, Field(title="Error")] = None
    diagnostics: Annotated[
        list[str] | None,
        Field(description="Distinct diagnostic codes of the row.", title="Diagnostics"),
    ] = None
    stats: Annotated[
        dict[str, Any] | None,
        Field(
            description="inputs, inputsByPool, excludedAutomation, proposed, accepted, created, reused, activated, rejected, rejectedByReason, deferredEmbeddings, wikiProposals, durationSeconds (and rollback when rolled back).",
            title="Stats",
        ),
    ] = None
    effective_model: Annotated[DreamModel, Field(alias="effectiveModel")]
    proposals: Annotated[
        dict[str, Any],
        Field(description="The validated proposals as stored.", title="Proposals"),
    ]
    dry_run_proposals: Annotated[
        list[dict[str, Any]],
        Field(
            alias="dryRunProposals",
            description="A dry run's proposals with their policy preview decision and reason code (empty for a real run).",
            title="Dry run proposals",
        ),
    ]
    policy_preview: Annotated[
        list[dict[str, Any]], Field(alias="policyPreview", title="Policy preview")
    ]
    accepted: Annotated[
        list[dict[str, Any]],
        Field(
            description="Assertions the Dream created or reused: state, decision, reason code.",
            title="Accepted",
        ),
    ]
    rejected: Annotated[
        list[dict[str, Any]],
        Field(
            description="Rejected items: kind, item, reasonCode, stage (validation, safety, policy_preview).",
            title="Rejected",
        ),
    ]
    rejected_by_reason: Annotated[
        dict[str, Any], Field(alias="rejectedByReason", title="Rejected by reason")
    ]
    wiki_proposals: Annotated[
        list[dict[str, Any]], Field(alias="wikiProposals", title="Wiki proposals")
    ]
    diagnostics_full: Annotated[
        list[dict[str, Any]], Field(alias="diagnosticsFull", title="Diagnostics full")
    ]
    rollback: DreamRollbackState
    private_text_withheld: Annotated[
        bool | None,
        Field(
            alias="privateTextWithheld",
            description="A Dream of another user's private partition: ids, states, reason codes and numbers only, none of its text (issue 28, finding 11).",
            title="Private text withheld",
        ),
    ] = False


class DreamRollbackResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    dream_id: Annotated[str, Field(alias="dreamId", title="Dream ID")]
    status: Annotated[
        Literal["rolled_back", "already_rolled_back"], Field(title="Status")
    ]
    tombstoned: Annotated[
        list[str],
        Field(
            description="Assertions this Dream created, now tombstoned.",
            title="Tombstoned",
        ),
    ]
    restored: Annotated[
        list[str],
        Field(
            description="Reused assertions put back to their earlier state.",
            title="Restored",
        ),
    ]
    evidence_removed: Annotated[
        int, Field(alias="evidenceRemoved", title="Evidence removed")
    ]
    proposals_rejected: Annotated[
        list[str], Field(alias="proposalsRejected", title="Proposals rejected")
    ]
    protected: Annotated[
        list[dict[str, Any]],
        Field(
            description="Left as they are: {kind, id, reason} (human review, approved wiki).",
            title="Protected",
        ),
    ]
    projection_jobs: Annotated[
        int, Field(alias="projectionJobs", title="Projection jobs")
    ]
    shown_in_dagster: Annotated[
        bool | None,
        Field(
            alias="shownInDagster",
            description="Whether the rollback now shows on the Dream's partition in Dagster (false for a repeated rollback, or when the API has no rollback recorder).",
            title="Shown in Dagster",
        ),
    ] = False


class WebhookOut(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
    )
    id: Annotated[str, Field(title="ID")]
    url: Annotated[str, Field(title="URL")]
    kinds: Annotated[list[str], Field(title="Kinds")]
    active: Annotated[bool, Field(title="Active")]


class WebhookListResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    webhooks: Annotated[list[WebhookOut], Field(title="Webhooks")]


class WebhookIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    url: Annotated[str, Field(max_length=2000, min_length=1, title="URL")]
    secret: Annotated[
        Annotated[str, StringConstraints(min_length=16, max_length=512)] | None,
        Field(title="Secret"),
    ] = None
    kinds: Annotated[
        list[str] | None,
        Field(
            description="Event kinds delivered (empty: all).",
            max_length=50,
            title="Kinds",
        ),
    ] = None


class WebhookDeliveriesResponse(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
    )
    deliveries: Annotated[list[dict[str, Any]], Field(title="Deliveries")]


class EmbeddingStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    active: ActiveGeneration | None
    generations: Annotated[list[GenerationCount], Field(title="Generations")]
    reembed_backlog: Annotated[ReembedBacklog, Field(alias="reembedBacklog")]


class ModelUsageStatus(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    last24h: ModelUsageWindow
    all_time: Annotated[ModelUsageWindow, Field(alias="allTime")]


class StatusResponse(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
    )
    instance: Annotated[str, Field(title="Instance")]
    memories: MemoryCounts
    assertions: AssertionCounts
    evidence: Annotated[int, Field(title="Evidence")]
    conflicts: Annotated[dict[str, int], Field(title="Conflicts")]
    embeddings: EmbeddingStatus
    outbox: OutboxStatus
    feedback: Annotated[dict[str, int], Field(title="Feedback")]
    indexes: IndexStatus
    model_usage: Annotated[ModelUsageStatus, Field(alias="modelUsage")]
    sessions: SessionStatus
    legacy_import: Annotated[
        dict[str, Any] | None,
        Field(
            alias="legacyImport",
            description="The last legacy transcript import's result (`memory-platform import-transcripts`), or null.",
            title="Legacy import",
        ),
    ]
    workspace: WorkspaceStatus
    graph: GraphCounts
    recent_dreams: Annotated[
        list[DreamOut],
        Field(
            alias="recentDreams",
            description="The five most recent Dreams with their inputs, outputs, rejections by reason and rollback state (as the Dream list shows them).",
            title="Recent dreams",
        ),
    ]
