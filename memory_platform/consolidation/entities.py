"""Knowledge entity merging, the second consolidation pass (specification, "Consolidation").

Two passes over the active entities of one exact (instance, visibility scope, audience key)
partition, never across instance, type or partition:

1. deterministic: same ``entity_type`` and a shared name, a name being the normalised label
   or a normalised alias (``graph.store.normalized_label``: lower, trimmed, whitespace
   collapsed, diacritics removed), so "Müller" with alias "Mueller" meets "mueller";
2. vector: same type, entity vectors of the active generation at least
   ``consolidation_entity_similarity_threshold`` alike (at most
   ``consolidation_max_entity_pairs`` pairs), judged by the maintenance model in strict-JSON
   batches; the offline model (no client) says "same" only for equal normalised labels, so
   offline this pass finds nothing the first one missed.

Code decides, the model only proposes: a pair whose non-null linked records differ is
refused whatever anyone says (:func:`refusal_reason`), and an alias the model returns must
occur in the two entities' labels, aliases or claim texts (else it is dropped).

A merge (one transaction, under the store's advisory lock of the partition): the survivor has
more evidence rows, then is older; it gains the loser's label and aliases (and its linked
record when it has none); the loser's claims (subject/object), edges (source/target) and
evidence rows are re-pointed to it. A re-pointed claim or edge that collides with an active
one (the unique indexes of migrations 0006/0018) is resolved by keeping the one with more
evidence, then higher confidence: the other is superseded, its evidence moves to the kept
one, whose source refs become the union (refs are never removed or rewritten). An evidence
row that would duplicate one its new owner already has (0018's unique index) stays where it
was, listed as ``left``. An edge that became a self-loop is superseded. The loser becomes
``quarantined`` with ``metadata.mergedIntoEntityId``.

Every mutation is preceded by an audit row (``consolidation.audit``): ``entity_merge`` on the
survivor with the whole mapping, then ``claim_stale``/``edge_stale``, ``claim_repoint``/
``edge_repoint``, ``evidence_repoint`` and ``entity_quarantine``, each with the row's
before-image, so an operator can reverse a merge by hand (before-images in reverse order).

A dry run makes the same queries, judgments and plans and returns them (``mapping`` of each
decision is the proposal) without writing; chained proposals are planned from the rows as
stored, so a later proposal does not see an earlier one's alias union.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.consolidation.audit import audit
from memory_platform.consolidation.types import (
    ConsolidationRetryable,
    MergeDecision,
    Partition,
    StepResult,
)
from memory_platform.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.embeddings.generations import active_generation
from memory_platform.graph.embed import entity_text, text_hash
from memory_platform.graph.model import GraphModel
from memory_platform.graph.retract import lock_partitions
from memory_platform.graph.store import (
    claim_identity,
    merge_aliases,
    normalized_label,
)
from memory_platform.llm.base import JsonRequest, ModelError
from memory_platform.settings import Settings

SCHEMA_VERSION = 1
SCHEMA_NAME = "entity_merge_decisions"
CLAIMS_PER_ENTITY = 5
# ModelError codes meaning "the answer is not the contract" (graph/model.py keeps the same).
_MALFORMED_CODES = frozenset({"malformed_output", "truncated", "length", "empty"})


# --- the entities of a partition -------------------------------------------------------------


@dataclass
class EntityRow:
    """What the candidate passes know of an active entity."""

    id: UUID
    instance_key: str
    visibility_scope: str
    audience_key: str
    entity_type: str
    label: str
    aliases: list[str]
    linked_record_type: str | None
    linked_record_id: str | None
    created_at: datetime
    evidence: int
    active: bool = True

    def names(self) -> set[str]:
        return {normalized_label(n) for n in (self.label, *self.aliases) if n.strip()}

    def link(self) -> tuple[str, str] | None:
        if self.linked_record_id is None:
            return None
        return (self.linked_record_type or "", self.linked_record_id)


_ENTITIES = """
    SELECT e.id, e.instance_key, e.visibility_scope, e.audience_key, e.entity_type, e.label,
           e.aliases, e.linked_record_type, e.linked_record_id, e.created_at,
           (SELECT count(*) FROM agent_knowledge_evidence v
             WHERE v.instance_key = e.instance_key AND v.entity_id = e.id)
      FROM agent_knowledge_entities e
     WHERE e.instance_key = %s AND e.visibility_scope = %s AND e.audience_key = %s
       AND e.status = 'active'
     ORDER BY e.created_at, e.id
"""


def load_entities(conn: psycopg.Connection, partition: Partition) -> dict[UUID, EntityRow]:
    """The partition's active entities, oldest first."""
    rows = conn.execute(_ENTITIES, (partition.instance_key, partition.audience_kind,
                                    partition.audience_key)).fetchall()
    return {row[0]: EntityRow(*row[:6], list(row[6]), *row[7:]) for row in rows}


def refusal_reason(left: EntityRow, right: EntityRow) -> str | None:
    """Why two entities may never be merged, or None. Candidates come from one partition and
    type already; this is the rule itself, checked again before every merge."""
    if left.id == right.id:
        return "the same entity"
    if left.instance_key != right.instance_key:
        return "cross-instance pair"
    if (left.visibility_scope, left.audience_key) != (right.visibility_scope,
                                                      right.audience_key):
        return "cross-visibility pair (another audience partition)"
    if left.entity_type != right.entity_type:
        return "cross-type pair"
    a, b = left.link(), right.link()
    if a is not None and b is not None and a != b:
        return f"conflicting linked records ({a[0]}:{a[1]} vs {b[0]}:{b[1]})"
    return None


def survivor_of(left: EntityRow, right: EntityRow) -> tuple[EntityRow, EntityRow]:
    """(survivor, loser): more evidence rows, then older, then the smaller id."""
    ranked = sorted((left, right), key=lambda e: (-e.evidence, e.created_at, str(e.id)))
    return ranked[0], ranked[1]


def _next_name_pair(entities: dict[UUID, EntityRow],
                    decided: set[frozenset[UUID]]) -> tuple[EntityRow, EntityRow] | None:
    """The first undecided pair of active same-type entities sharing a name (in the order
    the entities were created)."""
    seen: dict[tuple[str, str], list[EntityRow]] = {}
    for entity in entities.values():
        if not entity.active:
            continue
        for name in sorted(entity.names()):
            for earlier in seen.get((entity.entity_type, name), []):
                if frozenset((earlier.id, entity.id)) not in decided:
                    return earlier, entity
            seen.setdefault((entity.entity_type, name), []).append(entity)
    return None


# --- planning a merge ------------------------------------------------------------------------

# Claims and edges: table, the two entity columns, the audit operations.
_KINDS = {
    "claim": ("agent_knowledge_claims", ("subject_entity_id", "object_entity_id"),
              "claim_repoint", "claim_stale"),
    "edge": ("agent_knowledge_edges", ("source_entity_id", "target_entity_id"),
             "edge_repoint", "edge_stale"),
}
_ITEMS = """
    SELECT to_jsonb(k) - 'claim_tsv' AS row,
           (SELECT count(*) FROM agent_knowledge_evidence v
             WHERE v.instance_key = k.instance_key AND v.{evidence} = k.id) AS evidence
      FROM {table} k
     WHERE k.instance_key = %(instance)s AND k.status = 'active'
       AND (k.{a} = ANY(%(ids)s::uuid[]) OR k.{b} = ANY(%(ids)s::uuid[]))
     ORDER BY k.created_at, k.id
     FOR UPDATE
"""
_EVIDENCE = """
    SELECT id, entity_id, claim_id, edge_id, evidence_kind, assertion_id, dream_id,
           source_memory_id
      FROM agent_knowledge_evidence
     WHERE instance_key = %s AND (entity_id = ANY(%s::uuid[]) OR claim_id = ANY(%s::uuid[])
            OR edge_id = ANY(%s::uuid[]))
     ORDER BY created_at, id
     FOR UPDATE
"""
_ENTITY_FOR_UPDATE = """
    SELECT to_jsonb(e) FROM agent_knowledge_entities e
     WHERE e.instance_key = %s AND e.id = ANY(%s) FOR UPDATE
"""


@dataclass
class _Item:
    """A claim or edge as the plan will leave it."""

    kind: str
    row: dict[str, Any]                  # as stored
    evidence: int
    planned: dict[str, Any] = field(default_factory=dict)   # changed columns
    superseded: str | None = None        # "collision" or "self_loop"
    kept_id: str | None = None

    @property
    def id(self) -> str:
        return self.row["id"]

    def value(self, column: str) -> Any:
        return self.planned.get(column, self.row[column])

    def key(self) -> tuple | None:
        """Its identity under the active unique index (None: no index covers it)."""
        if self.kind == "claim":
            digest = self.value("content_hash")
            return ("claim", self.value("subject_entity_id"), digest) if digest else None
        return ("edge", self.value("source_entity_id"), self.value("target_entity_id"),
                self.row["relation_type"])


@dataclass
class MergePlan:
    survivor: dict[str, Any]
    loser: dict[str, Any]
    survivor_update: dict[str, Any]
    items: list[_Item]
    evidence_moves: list[tuple[str, str, str, str]]   # (evidence id, column, from, to)
    evidence_left: list[str]

    def mapping(self, method: str, reason: str) -> dict[str, Any]:
        survivor, loser = self.survivor["id"], self.loser["id"]
        out: dict[str, Any] = {"entities": {loser: survivor}, "survivorId": survivor,
                               "loserId": loser, "method": method, "reason": reason,
                               "survivorUpdate": self.survivor_update}
        for kind in ("claim", "edge"):
            items = [i for i in self.items if i.kind == kind]
            out[f"{kind}s"] = {
                "repointed": [i.id for i in items if i.superseded is None
                              and set(i.planned) - {"source_refs"}],
                "refsUnioned": [i.id for i in items if i.superseded is None
                                and "source_refs" in i.planned],
                "superseded": {i.id: i.kept_id for i in items if i.superseded == "collision"},
                "selfLoops": [i.id for i in items if i.superseded == "self_loop"],
            }
        out["evidence"] = {
            "moved": {ev: {"column": col, "from": old, "to": new}
                      for ev, col, old, new in self.evidence_moves},
            "left": self.evidence_left}
        return out


def _survivor_update(survivor: dict[str, Any], loser: dict[str, Any],
                     extra_aliases: Sequence[str]) -> dict[str, Any]:
    """The survivor's new columns: aliases union (+ the loser's label), the loser's linked
    record if it has none, subject refs (what the survivor says wins), the text hash."""
    aliases = merge_aliases(survivor["label"], survivor["aliases"],
                             [loser["label"], *loser["aliases"], *extra_aliases])
    update: dict[str, Any] = {"aliases": aliases}
    if survivor["linked_record_id"] is None and loser["linked_record_id"] is not None:
        update["linked_record_type"] = loser["linked_record_type"]
        update["linked_record_id"] = loser["linked_record_id"]
    refs = {**loser["subject_refs"], **survivor["subject_refs"]}
    if refs != survivor["subject_refs"]:
        update["subject_refs"] = refs
    update["content_hash"] = text_hash(entity_text(survivor["label"], survivor["entity_type"],
                                                   aliases))
    return update


def _repoint(item: _Item, survivor: str, loser: str) -> None:
    """Point the item's loser ends at the survivor (a claim's identity hash follows a new
    object, as the store computes it)."""
    a, b = _KINDS[item.kind][1]
    for column in (a, b):
        if item.row[column] == loser:
            item.planned[column] = survivor
    if item.kind == "claim" and "object_entity_id" in item.planned and item.row["content_hash"]:
        item.planned["content_hash"] = claim_identity(
            item.row["predicate"], UUID(survivor), item.row["object_value"],
            item.row["assertion_text"])


def _better(a: _Item, b: _Item) -> bool:
    """Whether ``a`` is kept over ``b``: more evidence, then higher confidence (a tie keeps
    ``a``, the row already standing)."""
    return (a.evidence, float(a.row["confidence"])) >= (b.evidence, float(b.row["confidence"]))


def _union_refs(current: Sequence[dict], other: Sequence[dict]) -> list[dict]:
    """``current`` exactly as it is, then each ref of ``other`` it lacks: refs are only ever
    added, never removed, reordered or rewritten."""
    out = list(current)
    out += [ref for ref in other if ref not in out]
    return out


def _plan_items(items: list[_Item], survivor: str, loser: str,
                owner: dict[str, tuple[str, str]]) -> None:
    """Re-point, resolve collisions and self-loops in place; ``owner`` (evidence id ->
    (column, item id)) follows an absorbed item's evidence to the kept one."""
    standing: dict[tuple, _Item] = {}
    for item in items:
        if loser not in (item.row[c] for c in _KINDS[item.kind][1]):
            key = item.key()
            if key is not None:
                standing[key] = item
    for item in items:
        a, b = _KINDS[item.kind][1]
        if loser not in (item.row[a], item.row[b]):
            continue
        _repoint(item, survivor, loser)
        if item.kind == "edge" and item.value(a) == item.value(b):
            item.planned, item.superseded = {}, "self_loop"
            continue
        key = item.key()
        other = standing.get(key) if key is not None else None
        if other is None:
            if key is not None:
                standing[key] = item
            continue
        keep, drop = (other, item) if _better(other, item) else (item, other)
        refs = _union_refs(keep.value("source_refs"), drop.value("source_refs"))
        if refs != keep.row["source_refs"]:
            keep.planned["source_refs"] = refs
        keep.evidence += drop.evidence
        drop.planned, drop.superseded, drop.kept_id = {}, "collision", keep.id
        column = f"{drop.kind}_id"
        for ev, (col, holder) in list(owner.items()):
            if col == column and holder == drop.id:
                owner[ev] = (col, keep.id)
        standing[key] = keep


_EVIDENCE_OWNER = ("entity_id", "claim_id", "edge_id")


def _evidence_owner(row: tuple) -> tuple[str, str]:
    """(column, item id) of an evidence row (exactly one of the three is set)."""
    slot = next(i for i in range(3) if row[1 + i] is not None)
    return _EVIDENCE_OWNER[slot], str(row[1 + slot])


def _evidence_key(row: tuple) -> tuple:
    """0018's unique identity of an evidence row apart from its owner."""
    return (row[4], row[5], row[6], row[7] if row[4] == "memory" else None)


def _plan_evidence(evidence: list[tuple], owner: dict[str, tuple[str, str]]
                   ) -> tuple[list, list]:
    """The evidence moves (``owner`` differs from where a row is), leaving in place a row its
    new owner already has an equal of (0018's unique index)."""
    current = {str(row[0]): _evidence_owner(row) for row in evidence}
    moving = {ev for ev, target in owner.items() if target != current[ev]}
    held = {(current[str(row[0])], _evidence_key(row)) for row in evidence
            if str(row[0]) not in moving}
    moves, left = [], []
    for row in evidence:
        ev = str(row[0])
        if ev not in moving:
            continue
        identity = (owner[ev], _evidence_key(row))
        if identity in held:
            left.append(ev)
            continue
        held.add(identity)
        moves.append((ev, owner[ev][0], current[ev][1], owner[ev][1]))
    return moves, left


def plan_merge(conn: psycopg.Connection, instance_key: str, survivor_id: UUID,
               loser_id: UUID, extra_aliases: Sequence[str] = ()) -> MergePlan | None:
    """Read (FOR UPDATE) everything a merge touches and plan it; None when either entity is
    no longer active. Runs inside the caller's transaction and writes nothing."""
    found = {row[0]["id"]: row[0] for row in conn.execute(
        _ENTITY_FOR_UPDATE, (instance_key, [survivor_id, loser_id])).fetchall()}
    survivor, loser = found.get(str(survivor_id)), found.get(str(loser_id))
    if survivor is None or loser is None or survivor["status"] != "active" \
            or loser["status"] != "active":
        return None
    ids = [survivor_id, loser_id]
    items: list[_Item] = []
    with conn.cursor(row_factory=dict_row) as cur:
        for kind, (table, (a, b), _, _) in _KINDS.items():
            statement = sql.SQL(_ITEMS).format(
                table=sql.Identifier(table), a=sql.Identifier(a), b=sql.Identifier(b),
                evidence=sql.Identifier(f"{kind}_id"))
            items += [_Item(kind, r["row"], r["evidence"])
                      for r in cur.execute(statement, {"instance": instance_key, "ids": ids})]
    item_ids = {kind: [i.id for i in items if i.kind == kind] for kind in _KINDS}
    evidence = conn.execute(_EVIDENCE, (instance_key, ids, item_ids["claim"],
                                        item_ids["edge"])).fetchall()
    owner = {str(row[0]): _evidence_owner(row) for row in evidence}
    for ev, (column, holder) in list(owner.items()):
        if column == "entity_id" and holder == loser["id"]:
            owner[ev] = (column, survivor["id"])
    _plan_items(items, survivor["id"], loser["id"], owner)
    moves, left = _plan_evidence(evidence, owner)
    return MergePlan(survivor, loser, _survivor_update(survivor, loser, extra_aliases),
                 [i for i in items if i.planned or i.superseded], moves, left)


# --- applying a merge ------------------------------------------------------------------------


def _update(conn: psycopg.Connection, table: str, row_id: str, values: dict[str, Any]) -> None:
    assignments = sql.SQL(", ").join(
        sql.SQL("{} = %s").format(sql.Identifier(column)) for column in values)
    params = [Jsonb(v) if isinstance(v, dict | list) and column != "aliases" else v
              for column, v in values.items()]
    conn.execute(sql.SQL("UPDATE {} SET {} WHERE id = %s").format(
        sql.Identifier(table), assignments), (*params, row_id))


def apply_plan(conn: psycopg.Connection, instance_key: str, plan: MergePlan,
               mapping: dict[str, Any], dream_id: UUID | None) -> int:
    """Write the plan, each mutation after its audit row; answers the audit rows written.
    Order: the merge record, superseded rows (they free the unique keys), re-pointed rows,
    evidence, the loser's quarantine, then the survivor (it may take the loser's link)."""
    entities = "agent_knowledge_entities"
    merge = {"entities": mapping["entities"]}
    rows = 1
    audit(conn, instance_key, "entity_merge", entities, plan.survivor["id"],
          dream_id=dream_id, before=plan.survivor, after=plan.survivor_update,
          mapping=mapping)
    for item in (i for i in plan.items if i.superseded):
        table, _, _, stale = _KINDS[item.kind]
        audit(conn, instance_key, stale, table, item.id, dream_id=dream_id,
              after={"status": "superseded"},
              mapping=merge | {"reason": f"merge_{item.superseded}", "keptId": item.kept_id})
        _update(conn, table, item.id, {"status": "superseded"})
        rows += 1
    for item in (i for i in plan.items if not i.superseded):
        table, _, repoint, _ = _KINDS[item.kind]
        audit(conn, instance_key, repoint, table, item.id, dream_id=dream_id,
              after=item.planned, mapping=merge)
        _update(conn, table, item.id, item.planned)
        rows += 1
    for ev, column, old, new in plan.evidence_moves:
        audit(conn, instance_key, "evidence_repoint", "agent_knowledge_evidence", ev,
              dream_id=dream_id, after={column: new},
              mapping=merge | {"column": column, "from": old, "to": new})
        _update(conn, "agent_knowledge_evidence", ev, {column: new})
        rows += 1
    audit(conn, instance_key, "entity_quarantine", entities, plan.loser["id"],
          dream_id=dream_id, after={"status": "quarantined"}, mapping=merge)
    conn.execute(
        "UPDATE agent_knowledge_entities SET status = 'quarantined', metadata = metadata"
        " || jsonb_build_object('mergedIntoEntityId', %s::text, 'quarantinedAt', now(),"
        " 'reason', 'merged') WHERE id = %s", (plan.survivor["id"], plan.loser["id"]))
    _update(conn, entities, plan.survivor["id"], plan.survivor_update)
    return rows + 1


def _merge(conn: psycopg.Connection, partition: Partition,
           pair: tuple[EntityRow, EntityRow], method: str, reason: str,
           extra_aliases: Sequence[str], result: StepResult, *, dry_run: bool,
           dream_id: UUID | None) -> MergeDecision:
    """One merge in one transaction (or its proposal in a dry run)."""
    survivor, loser = survivor_of(*pair)
    decision = {"survivor": survivor.id, "loser": loser.id, "survivor_label": survivor.label,
                "loser_label": loser.label, "method": method}
    refused = refusal_reason(survivor, loser)
    if refused:
        return MergeDecision(**decision, merged=False, reason=f"refused: {refused}")
    with committed_unit(conn):
        lock_partitions(conn, partition.instance_key,
                        [(partition.audience_kind, partition.audience_key)])
        plan = plan_merge(conn, partition.instance_key, survivor.id, loser.id, extra_aliases)
        if plan is None:
            return MergeDecision(**decision, merged=False,
                                 reason="skipped: an entity is no longer active")
        mapping = plan.mapping(method, reason)
        if not dry_run:
            result.audit_rows += apply_plan(conn, partition.instance_key, plan, mapping,
                                            dream_id)
    loser.active = False
    survivor.evidence += sum(1 for _, col, _, _ in plan.evidence_moves if col == "entity_id")
    survivor.aliases = list(plan.survivor_update["aliases"])
    if survivor.linked_record_id is None and loser.linked_record_id is not None:
        survivor.linked_record_type = loser.linked_record_type
        survivor.linked_record_id = loser.linked_record_id
    if not dry_run and survivor.id not in result.changed_entity_ids:
        result.changed_entity_ids.append(survivor.id)
    return MergeDecision(**decision, merged=True, reason=reason, mapping=mapping)


# --- the vector pass: candidates and the model's judgment -------------------------------------

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


# --- the step --------------------------------------------------------------------------------


def _diagnostic(result: StepResult, code: str, message: str, **detail: Any) -> None:
    result.diagnostics.append({"step": "entities", "code": code, "message": message,
                               **detail})


def _deterministic_pass(conn, partition, entities, decided, result, *, dry_run, dream_id):
    while (pair := _next_name_pair(entities, decided)) is not None:
        decided.add(frozenset((pair[0].id, pair[1].id)))
        result.pairs_considered += 1
        shared = sorted(pair[0].names() & pair[1].names())
        result.merges.append(_merge(
            conn, partition, pair, "deterministic",
            f"shared normalised name: {shared[0]}", (), result,
            dry_run=dry_run, dream_id=dream_id))


def _vector_pass(conn, settings, partition, model, entities, decided, result, *, dry_run,
                 dream_id):
    generation = active_generation(conn, partition.instance_key)
    if generation is None:
        commit_if_idle(conn)
        _diagnostic(result, "no_active_generation",
                    "the instance has no active embedding generation: no vector pass")
        return
    pairs = vector_candidates(conn, settings, partition, entities, generation.generation_key,
                              decided)
    commit_if_idle(conn)
    result.pairs_considered += len(pairs)
    for pair in [p for p in pairs if refusal_reason(p.left, p.right)]:
        decided.add(frozenset((pair.left.id, pair.right.id)))   # never shown to the model
        survivor, loser = survivor_of(pair.left, pair.right)
        result.merges.append(MergeDecision(
            survivor.id, loser.id, survivor.label, loser.label, "vector", False,
            f"refused: {refusal_reason(pair.left, pair.right)}"))
    pairs = [p for p in pairs if not refusal_reason(p.left, p.right)]
    size = settings.consolidation_max_pairs_per_batch
    for start in range(0, len(pairs), size):
        batch = pairs[start:start + size]
        try:
            judgments = judge(model, batch, settings, partition)
        except ConsolidationRetryable as exc:
            _diagnostic(result, exc.code, exc.message, problems=exc.problems,
                        model=model.name, pairs=[[str(p.left.id), str(p.right.id)]
                                                 for p in batch])
            continue
        for pair in batch:
            decided.add(frozenset((pair.left.id, pair.right.id)))
            verdict = judgments[pair.pair_id]
            if not verdict.same:
                survivor, loser = survivor_of(pair.left, pair.right)
                result.merges.append(MergeDecision(
                    survivor.id, loser.id, survivor.label, loser.label, "vector", False,
                    f"not the same ({model.name}): {verdict.reason}"))
                continue
            if not (pair.left.active and pair.right.active):
                continue       # merged into another entity earlier in this batch
            kept, dropped = grounded_aliases(verdict.aliases, pair.texts())
            if dropped:
                _diagnostic(result, "alias_dropped", "aliases that occur nowhere were dropped",
                            aliases=dropped, pair=[str(pair.left.id), str(pair.right.id)])
            result.merges.append(_merge(
                conn, partition, (pair.left, pair.right), "vector",
                f"{model.name} (similarity {pair.similarity:.3f}): {verdict.reason}", kept,
                result, dry_run=dry_run, dream_id=dream_id))


def merge_entities(conn: psycopg.Connection, settings: Settings, partition: Partition,
                   model: GraphModel | None, *, dry_run: bool = False,
                   dream_id: UUID | None = None) -> StepResult:
    """Both merge passes over ``partition`` (module docstring). Commits one unit per merge,
    so call it outside a transaction; the model is called with none open. ``model`` None
    skips the vector pass (a diagnostic says so). ``changed_entity_ids`` are the survivors
    the caller re-embeds (``graph.embed.embed_graph_items``)."""
    require_idle(conn, "merge_entities")
    result = StepResult()
    entities = load_entities(conn, partition)
    commit_if_idle(conn)
    decided: set[frozenset[UUID]] = set()
    _deterministic_pass(conn, partition, entities, decided, result, dry_run=dry_run,
                        dream_id=dream_id)
    if model is None:
        _diagnostic(result, "no_model", "no maintenance model: no vector pass")
    else:
        _vector_pass(conn, settings, partition, model, entities, decided, result,
                     dry_run=dry_run, dream_id=dream_id)
    return result
