"""The vector pass of entity merging: candidate pairs by entity vectors, and the maintenance
model's judgment of them (strict JSON, one batch at a time; the offline model says "same"
only for equal normalised labels). The model only proposes: an alias it returns is kept only
when it occurs in the pair's labels, aliases or claim texts (:func:`grounded_aliases`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg

from memory_platform.features.consolidation.entity_rows import EntityRow
from memory_platform.features.consolidation.types import ConsolidationRetryable, Partition
from memory_platform.features.graph.model import GraphModel
from memory_platform.features.graph.store import normalized_label
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import JsonRequest, ModelError

SCHEMA_VERSION = 1
SCHEMA_NAME = "entity_merge_decisions"
CLAIMS_PER_ENTITY = 5
# ModelError codes meaning "the answer is not the contract" (graph/model.py keeps the same).
_MALFORMED_CODES = frozenset({"malformed_output", "truncated", "length", "empty"})


_VECTOR_PAIRS = """
    SELECT a.id, b.id, 1 - (va.embedding <=> vb.embedding) AS similarity
      FROM agent_knowledge_entities a
      JOIN agent_knowledge_entity_embeddings va
        ON va.instance_key = a.instance_key AND va.entity_id = a.id
       AND va.embedding_key = %(generation)s
      JOIN agent_knowledge_entities b
        ON b.instance_key = a.instance_key AND b.visibility_scope = a.visibility_scope
       AND b.audience_key = a.audience_key AND b.entity_type = a.entity_type
       AND b.status = 'active' AND b.id > a.id AND b.id = ANY(%(ids)s::uuid[])
      JOIN agent_knowledge_entity_embeddings vb
        ON vb.instance_key = b.instance_key AND vb.entity_id = b.id
       AND vb.embedding_key = %(generation)s
     WHERE a.instance_key = %(instance)s AND a.visibility_scope = %(kind)s
       AND a.audience_key = %(key)s AND a.status = 'active' AND a.id = ANY(%(ids)s::uuid[])
       AND 1 - (va.embedding <=> vb.embedding) >= %(threshold)s
     ORDER BY similarity DESC, a.id, b.id
     LIMIT %(limit)s
"""
_CLAIM_TEXTS = """
    SELECT assertion_text FROM agent_knowledge_claims
     WHERE instance_key = %s AND status = 'active'
       AND (subject_entity_id = %s OR object_entity_id = %s)
     ORDER BY confidence DESC, updated_at DESC, id
     LIMIT %s
"""


@dataclass(frozen=True)
class VectorPair:
    pair_id: str
    left: EntityRow
    right: EntityRow
    similarity: float
    left_claims: tuple[str, ...]
    right_claims: tuple[str, ...]

    def texts(self) -> list[str]:
        """Where an alias the model names must occur."""
        return [self.left.label, *self.left.aliases, *self.left_claims, self.right.label,
                *self.right.aliases, *self.right_claims]


@dataclass(frozen=True)
class Judgment:
    same: bool
    aliases: tuple[str, ...]
    reason: str


def vector_candidates(conn: psycopg.Connection, settings: Settings, partition: Partition,
                      entities: dict[UUID, EntityRow], generation_key: str,
                      decided: set[frozenset[UUID]]) -> list[VectorPair]:
    """Same-type pairs of active entities whose active-generation vectors are at least the
    threshold alike, most alike first, at most ``consolidation_max_entity_pairs``, each with
    up to five claim texts per entity. Exact pairwise scan within the partition and type."""
    active = [e.id for e in entities.values() if e.active]
    limit = settings.consolidation_max_entity_pairs
    rows = conn.execute(_VECTOR_PAIRS, {
        "generation": generation_key, "ids": active, "instance": partition.instance_key,
        "kind": partition.audience_kind, "key": partition.audience_key,
        "threshold": settings.consolidation_entity_similarity_threshold,
        "limit": limit + len(decided)}).fetchall()
    pairs: list[VectorPair] = []
    for left_id, right_id, similarity in rows:
        if frozenset((left_id, right_id)) in decided or len(pairs) >= limit:
            continue
        claims = [tuple(r[0] for r in conn.execute(_CLAIM_TEXTS, (
            partition.instance_key, e, e, CLAIMS_PER_ENTITY))) for e in (left_id, right_id)]
        pairs.append(VectorPair(f"p{len(pairs) + 1}", entities[left_id], entities[right_id],
                                float(similarity), *claims))
    return pairs


def decision_schema() -> dict[str, Any]:
    """The strict JSON schema of one judgment answer."""
    decision = {"type": "object", "additionalProperties": False,
                "required": ["pairId", "same", "aliases", "reason"],
                "properties": {"pairId": {"type": "string", "maxLength": 16},
                               "same": {"type": "boolean"},
                               "aliases": {"type": "array", "maxItems": 8,
                                           "items": {"type": "string", "maxLength": 120}},
                               "reason": {"type": "string", "maxLength": 500}}}
    return {"type": "object", "additionalProperties": False,
            "required": ["schemaVersion", "decisions"],
            "properties": {"schemaVersion": {"type": "integer", "enum": [SCHEMA_VERSION]},
                           "decisions": {"type": "array", "items": decision}}}


_RULES = """You decide whether two knowledge-graph entities of one team's memory name the SAME
real-world thing. Be conservative: answer "same": true only when the labels, aliases and
claims leave no reasonable doubt (spelling variants, abbreviations, transliterations of one
name); two different people, records, documents or organisations that merely look alike are
NOT the same. "aliases" lists other names of the entity that occur in the given labels,
aliases or claims (never invent one); "reason" is one short sentence.

Answer exactly one JSON object, one decision per pair id, of this schema ({schema_name}):
{schema}"""


def _entity_json(entity: EntityRow, claims: Sequence[str]) -> dict[str, Any]:
    return {"label": entity.label, "type": entity.entity_type, "aliases": entity.aliases,
            "claims": list(claims)}


def judgment_request(pairs: Sequence[VectorPair], settings: Settings,
                     partition: Partition) -> JsonRequest:
    user = json.dumps({"pairs": [
        {"pairId": p.pair_id, "similarity": round(p.similarity, 4),
         "left": _entity_json(p.left, p.left_claims),
         "right": _entity_json(p.right, p.right_claims)} for p in pairs]},
        ensure_ascii=False, indent=1)
    system = _RULES.format(schema_name=SCHEMA_NAME,
                           schema=json.dumps(decision_schema(), sort_keys=True))
    return JsonRequest(system=system, user=user, schema=decision_schema(),
                       schema_name=SCHEMA_NAME,
                       max_completion_tokens=settings.dream_completion_tokens,
                       topic=partition.partition_key)


def read_judgments(data: Any, pairs: Sequence[VectorPair]) -> dict[str, Judgment]:
    """The model's answer, validated strictly: exactly one decision per pair id of the batch
    and nothing else; else :class:`ConsolidationRetryable` ``malformed_output``."""
    def bad(message: str, **detail: Any) -> ConsolidationRetryable:
        return ConsolidationRetryable("malformed_output", message, [detail] if detail else [])

    if not isinstance(data, dict) or set(data) != {"schemaVersion", "decisions"}:
        raise bad("the answer is not {schemaVersion, decisions}")
    if data["schemaVersion"] != SCHEMA_VERSION or not isinstance(data["decisions"], list):
        raise bad("wrong schemaVersion or decisions not a list")
    wanted = {p.pair_id for p in pairs}
    out: dict[str, Judgment] = {}
    for item in data["decisions"]:
        if not isinstance(item, dict) or set(item) != {"pairId", "same", "aliases", "reason"}:
            raise bad("a decision does not have exactly pairId, same, aliases, reason")
        pair_id, same, aliases, reason = (item[k] for k in ("pairId", "same", "aliases",
                                                            "reason"))
        if pair_id not in wanted or pair_id in out:
            raise bad("an unknown or repeated pair id", pairId=str(pair_id)[:32])
        if not isinstance(same, bool) or not isinstance(reason, str) \
                or not isinstance(aliases, list) \
                or not all(isinstance(a, str) for a in aliases):
            raise bad("a decision has a field of the wrong type", pairId=pair_id)
        out[pair_id] = Judgment(same, tuple(aliases), reason)
    if set(out) != wanted:
        raise bad("pairs left unanswered", pairIds=sorted(wanted - set(out)))
    return out


def offline_judgments(pairs: Sequence[VectorPair]) -> dict[str, Judgment]:
    """The offline model: the same entity only when the labels are equal normalised."""
    out = {}
    for p in pairs:
        same = normalized_label(p.left.label) == normalized_label(p.right.label)
        out[p.pair_id] = Judgment(same, (), "offline: normalised labels equal" if same
                                  else "offline: labels differ")
    return out


def judge(model: GraphModel, pairs: Sequence[VectorPair], settings: Settings,
          partition: Partition) -> dict[str, Judgment]:
    """One batch judged by exactly ``model``; :class:`ConsolidationRetryable` when the answer
    cannot be used (nothing of the batch is applied)."""
    if model.client is None:
        return offline_judgments(pairs)
    try:
        completion = model.client.complete_json(judgment_request(pairs, settings, partition))
    except ModelError as exc:
        code = "malformed_output" if exc.code in _MALFORMED_CODES else "model_unavailable"
        raise ConsolidationRetryable(code, f"model {model.name}: {exc.reason}",
                                     [{"modelError": exc.code}]) from None
    if completion.model != model.name:
        raise ConsolidationRetryable("model_unavailable", "the answer names another model",
                                     [{"requested": model.name,
                                       "answered": completion.model}])
    return read_judgments(completion.data, pairs)


def grounded_aliases(aliases: Iterable[str], texts: Sequence[str]) -> tuple[list, list]:
    """(kept, dropped): an alias is kept when its normalised form occurs, as whole words, in
    one of ``texts`` normalised."""
    haystack = [normalized_label(t) for t in texts]
    kept, dropped = [], []
    for alias in aliases:
        norm = normalized_label(alias)
        pattern = re.compile(rf"(?<!\w){re.escape(norm)}(?!\w)") if norm else None
        if pattern and any(pattern.search(t) for t in haystack):
            kept.append(alias.strip())
        else:
            dropped.append(alias)
    return kept, dropped

