"""The values the knowledge-graph modules pass each other (specification, "Knowledge graph").

The flow, one module per step:

    queue  -> sources (GraphSource rows of approved assertions, GraphBatch per audience)
           -> render (the prompt block; it must contain every grouped source)
           -> model (the exact graph model) / offline (the deterministic extractor)
           -> validate (strict JSON -> Extraction; repair only by removal; validated again)
           -> store (upsert entities, claims, edges, evidence; cumulative source refs)
           -> embed (changed entities and claims, content-hash skipping)
    retract: refs of assertions that are no longer told leave the graph; orphans quarantined.
    search / reads: hybrid retrieval and drill-down under the one visibility rule.

A source ref in ``source_refs`` (claims, edges) is one of

    {"memoryId": "<recall row>", "assertionId": "<canonical assertion>"}   (stable)
    {"dreamId": "<dream>"}                                                  (a Dream's)

Stable refs are cumulative: a later build adds, never replaces. A per-Dream rebuild removes
only that Dream's ``dreamId`` refs (and its ``dream`` evidence rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

ENTITY_TYPES = ("user", "mandant", "document", "task", "module", "route", "channel",
                "preference", "workflow", "concept", "person", "organization", "project",
                "tool", "place", "event", "other")


class GraphWorkRetryable(RuntimeError):
    """The batch cannot be applied now; its outbox jobs stay pending and are retried.

    ``code``: ``malformed_output`` (not the contract, or still invalid after repair),
    ``ambiguous_paraphrase`` (a claim cites several assertions and matches none of them
    exactly), ``model_unavailable`` (no credentials, unknown or unreachable exact model,
    model mismatch), ``instance_mismatch`` (a source or citation of another instance),
    ``incomplete_block`` (the rendered block lost a grouped source). ``problems`` are short
    JSON-able details for logs and the job's ``last_error``."""

    def __init__(self, code: str, message: str,
                 problems: list[dict[str, Any]] | None = None) -> None:
        self.code = code
        self.message = message
        self.problems = problems or []
        super().__init__(f"{code}: {message}")


@dataclass(frozen=True)
class GraphSource:
    """One approved, currently told assertion and the recall row that represents it.

    ``memory_id`` is the id the model cites (``MEMORY_ID``): the assertion's active
    projection row in ``agent_memories``, or the fact memory written with it."""

    instance_key: str
    assertion_id: UUID
    memory_id: UUID
    text: str
    assertion_type: str
    confidence: float
    audience_kind: str
    audience_key: str
    owner_user_id: str | None
    subject_refs: dict[str, str]
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    dream_ids: tuple[UUID, ...] = ()      # Dreams that support it in this build


@dataclass(frozen=True)
class GraphBatch:
    """Sources of ONE (instance, audience kind, audience key): one provider request."""

    instance_key: str
    audience_kind: str
    audience_key: str
    sources: tuple[GraphSource, ...]

    @property
    def by_memory(self) -> dict[UUID, GraphSource]:
        return {s.memory_id: s for s in self.sources}

    @property
    def partition_key(self) -> str:
        return f"{self.instance_key}/{self.audience_kind}/{self.audience_key}"


@dataclass(frozen=True)
class EntityItem:
    ref: str                                  # the answer's local id ("e1"), not stored
    label: str
    entity_type: str
    aliases: tuple[str, ...]
    linked_record_type: str | None
    linked_record_id: str | None
    subject_refs: dict[str, str]
    source_memory_ids: tuple[UUID, ...]


@dataclass(frozen=True)
class ClaimItem:
    subject: str                              # an EntityItem.ref
    predicate: str
    object: str | None                        # an EntityItem.ref, or None for a literal
    value: str | None                         # the literal, when object is None
    assertion_text: str                       # derived from the one backing assertion
    confidence: float
    source_memory_ids: tuple[UUID, ...]


@dataclass(frozen=True)
class EdgeItem:
    source: str                               # EntityItem.ref
    target: str                               # EntityItem.ref
    relation_type: str                        # ^[a-z][a-z0-9_]*$
    confidence: float
    source_memory_ids: tuple[UUID, ...]


@dataclass
class Extraction:
    """A validated (and, where needed, repaired and validated again) answer of one batch."""

    entities: list[EntityItem]
    claims: list[ClaimItem]
    edges: list[EdgeItem]
    repairs: dict[str, int] = field(default_factory=dict)  # linkedPairsCleared, labelsPruned,
    #                                                          claimsPruned, edgesPruned
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class GraphChanges:
    """What applying extractions (or retractions) changed; summed over batches."""

    entities_added: int = 0
    entities_updated: int = 0
    claims_added: int = 0
    claims_reinforced: int = 0
    edges_added: int = 0
    edges_reinforced: int = 0
    evidence_added: int = 0
    claims_retracted: int = 0            # lost their last current ref: superseded
    edges_retracted: int = 0
    entities_quarantined: int = 0
    refs_removed: int = 0
    changed_entity_ids: list[UUID] = field(default_factory=list)   # need (re-)embedding
    changed_claim_ids: list[UUID] = field(default_factory=list)
    new_claims: list[dict[str, Any]] = field(default_factory=list)
    # ^ {"claimId", "subject", "predicate", "object", "assertionText", "assertionIds"}

    def __add__(self, other: GraphChanges) -> GraphChanges:
        out = GraphChanges()
        for name in self.__dataclass_fields__:
            setattr(out, name, getattr(self, name) + getattr(other, name))
        return out

    def counts(self) -> dict[str, int]:
        return {name: value for name, value in vars(self).items() if isinstance(value, int)}
