"""One entity merge, planned and applied (the merge step of :mod:`.entities`).

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

Every mutation is preceded by an audit row (``consolidation.audit``), so an operator can
reverse a merge by hand (before-images in reverse order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.features.consolidation.audit import audit
from memory_platform.features.consolidation.entity_rows import (
    EntityRow,
    refusal_reason,
    survivor_of,
)
from memory_platform.features.consolidation.types import MergeDecision, Partition, StepResult
from memory_platform.features.graph.embed import entity_text, text_hash
from memory_platform.features.graph.retract import lock_partitions
from memory_platform.features.graph.store import claim_identity, merge_aliases
from memory_platform.foundation.db.units import committed_unit

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


def merge_pair(conn: psycopg.Connection, partition: Partition,
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

