"""The knowledge graph: hybrid search and drill-down (``/api/v1/knowledge``, memory:read).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import UNTRUSTED, CallerContext, Strict
from memory_platform.features.graph.reads import NEIGHBORS_DEFAULT, NEIGHBORS_MAX
from memory_platform.shared.access import AudienceKind


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
    limit: int = Field(NEIGHBORS_DEFAULT, ge=1, le=NEIGHBORS_MAX,
                       description="Most neighbouring entities.")


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
