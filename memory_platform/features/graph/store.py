"""Writing a validated extraction into the graph: entities, claims, edges and evidence.

Steps 4-6 of the extraction (specification, "Knowledge graph"). The graph is cumulative:

* an entity is found again by its linked record, else by its stable subject refs, else by
  (type, normalised label) in the batch's audience, and only gains aliases;
* a claim is found again by its identity (subject, predicate, object entity or literal,
  assertion text) and a repeated edge by (source, target, relation); both only gain source
  refs (a union, never a replacement), the higher confidence and the wider validity;
* evidence rows are written once (the unique index of migration 0018).

So applying the same extraction twice changes nothing, and a second batch citing another
assertion reinforces what the first wrote. :func:`remove_dream_refs` is the per-Dream
rebuild cleanup: it removes only that Dream's refs, never the stable memory refs an earlier
Dream shares.

Everything here runs inside the caller's transaction and commits nothing. One advisory lock
per audience partition serialises writers of the same partition; the unique indexes stop any
writer that does not take it.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import datetime
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.features.graph.embed import entity_text, text_hash
from memory_platform.features.graph.retract import (
    lock_partitions,
    quarantine_orphans,
    remove_refs,
)
from memory_platform.features.graph.types import (
    ClaimItem,
    EdgeItem,
    EntityItem,
    Extraction,
    GraphBatch,
    GraphChanges,
    GraphSource,
    GraphWorkRetryable,
)
from memory_platform.foundation.text import canonical_json, normalise
from memory_platform.shared.access import SUBJECT_REF_KEYS

log = logging.getLogger(__name__)

# Most aliases an entity keeps: aliases only grow (one extraction may add up to 8), so the
# union is capped; the oldest are kept. A candidate for settings (graph_max_aliases).
MAX_ALIASES = 32
# Longest excerpt of an assertion evidence row.
EXCERPT_CHARS = 300


# --- identities -----------------------------------------------------------------------------


def normalized_label(label: str) -> str:
    """An entity's label for matching: ``text.normalise`` without diacritics, so "Müller",
    "MÜLLER" and "Muller" name one entity (the rule entity merging uses too)."""
    decomposed = unicodedata.normalize("NFKD", label)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return normalise(stripped)


def stable_subject_refs(refs: dict[str, str]) -> dict[str, str]:
    """The subject refs that identify what an entity is about (``access.SUBJECT_REF_KEYS``).
    ``userId`` is not one: every private row carries its owner's."""
    return {k: str(v) for k, v in sorted(refs.items()) if k in SUBJECT_REF_KEYS and v}


def claim_identity(predicate: str, object_id: UUID | None, value: str | None,
                   assertion_text: str) -> str:
    """A claim's ``content_hash``: with its subject entity, what makes two claims one."""
    identity = {"p": predicate, "o": str(object_id) if object_id else None,
                "v": normalise(value) if value is not None else None,
                "t": normalise(assertion_text)}
    return hashlib.sha256(canonical_json(identity).encode()).hexdigest()


def sorted_refs(refs: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    """A set of source refs as a sorted JSON array without duplicates: equal sets are equal
    arrays, so "did the refs change" is a plain comparison."""
    return [dict(pairs) for pairs in sorted({tuple(sorted(r.items())) for r in refs})]


def lock_key(batch: GraphBatch) -> str:
    return f"knowledge-graph:{batch.partition_key}"


# --- the batch's sources --------------------------------------------------------------------


class _Sources:
    """The batch's sources as an item cites them: refs, evidence, validity, subject refs."""

    def __init__(self, batch: GraphBatch) -> None:
        self.batch = batch
        self.by_memory = batch.by_memory

    def cited(self, memory_ids: Sequence[UUID]) -> list[GraphSource]:
        missing = [str(m) for m in memory_ids if m not in self.by_memory]
        if missing or not memory_ids:
            raise GraphWorkRetryable("malformed_output", "an item cites no source of the batch",
                                     [{"memoryIds": missing}])
        return [self.by_memory[m] for m in dict.fromkeys(memory_ids)]

    @staticmethod
    def refs(sources: Sequence[GraphSource]) -> list[dict[str, str]]:
        refs = [{"memoryId": str(s.memory_id), "assertionId": str(s.assertion_id)}
                for s in sources]
        refs += [{"dreamId": str(d)} for s in sources for d in s.dream_ids]
        return sorted_refs(refs)

    def subject_refs(self, refs: dict[str, str]) -> dict[str, str]:
        """``refs`` plus, on a private row, ``userId`` = the owner (retrieval's rule)."""
        out = {k: str(v) for k, v in refs.items()}
        if self.batch.audience_kind == "private":
            out["userId"] = self.batch.audience_key
        return out

    def shared_refs(self, sources: Sequence[GraphSource]) -> dict[str, str]:
        """The subject refs every cited source agrees on (a claim about two mandants is
        about neither in particular)."""
        common = dict(sources[0].subject_refs)
        for source in sources[1:]:
            common = {k: v for k, v in common.items() if source.subject_refs.get(k) == v}
        return self.subject_refs(common)

    @staticmethod
    def validity(sources: Sequence[GraphSource]
                 ) -> tuple[datetime | None, datetime | None]:
        """The backing assertions' validity: from the earliest start to the latest end, open
        (NULL) on a side where any of them is open."""
        starts = [s.valid_from for s in sources]
        ends = [s.valid_to for s in sources]
        return (None if None in starts else min(starts),  # type: ignore[type-var]
                None if None in ends else max(ends))  # type: ignore[type-var]


# --- evidence -------------------------------------------------------------------------------

_EVIDENCE = """
    INSERT INTO agent_knowledge_evidence
           (instance_key, entity_id, claim_id, edge_id, evidence_kind, dream_id,
            source_memory_id, assertion_id, excerpt)
    SELECT %s, t.entity_id, t.claim_id, t.edge_id, t.kind, t.dream_id, t.memory_id,
           t.assertion_id, t.excerpt
      FROM unnest(%s::uuid[], %s::uuid[], %s::uuid[], %s::text[], %s::uuid[], %s::uuid[],
                  %s::uuid[], %s::text[])
           AS t(entity_id, claim_id, edge_id, kind, dream_id, memory_id, assertion_id, excerpt)
    ON CONFLICT DO NOTHING
    RETURNING id
"""


class _Evidence:
    """Evidence rows collected while items are written, inserted once at the end."""

    def __init__(self) -> None:
        self.rows: dict[tuple, tuple] = {}

    def add(self, column: str, item_id: UUID, sources: Sequence[GraphSource]) -> None:
        slot = ("entity_id", "claim_id", "edge_id").index(column)
        for s in sources:
            ids: list[UUID | None] = [None, None, None]
            ids[slot] = item_id
            self.rows[(*ids, "assertion", None, s.assertion_id)] = (
                *ids, "assertion", None, s.memory_id, s.assertion_id, s.text[:EXCERPT_CHARS])
            for dream_id in s.dream_ids:
                self.rows[(*ids, "dream", dream_id, None)] = (
                    *ids, "dream", dream_id, None, None, None)

    def write(self, conn: psycopg.Connection, instance_key: str) -> int:
        if not self.rows:
            return 0
        columns = list(zip(*self.rows.values(), strict=True))
        return len(conn.execute(_EVIDENCE, (instance_key, *map(list, columns))).fetchall())


# --- entities -------------------------------------------------------------------------------

_ENTITY_COLUMNS = sql.SQL("id, label, normalized_label, aliases, linked_record_type,"
                          " linked_record_id, subject_refs, content_hash")
_BY_LINK = sql.SQL("""
    SELECT {columns} FROM agent_knowledge_entities
     WHERE instance_key = %s AND visibility_scope = %s AND audience_key = %s
       AND entity_type = %s AND status = 'active'
       AND linked_record_type = %s AND linked_record_id = %s
     FOR UPDATE
""").format(columns=_ENTITY_COLUMNS)
# Entities whose stable subject refs are exactly the item's, not linked to another record.
_BY_SUBJECT = sql.SQL("""
    SELECT {columns} FROM agent_knowledge_entities e
     WHERE instance_key = %(instance)s AND visibility_scope = %(kind)s
       AND audience_key = %(key)s AND entity_type = %(type)s AND status = 'active'
       AND subject_refs @> %(stable)s
       AND (SELECT jsonb_object_agg(r.key, r.value) FROM jsonb_each(e.subject_refs) r
             WHERE r.key = ANY(%(keys)s)) = %(stable)s
       AND (linked_record_id IS NULL OR %(link_id)s::text IS NULL
            OR (linked_record_type = %(link_type)s AND linked_record_id = %(link_id)s))
     ORDER BY created_at, id
     LIMIT 1
     FOR UPDATE
""").format(columns=_ENTITY_COLUMNS)
# Same type and normalised label; an unlinked entity first. A linked item never takes over
# an entity linked to another record.
_BY_LABEL = sql.SQL("""
    SELECT {columns} FROM agent_knowledge_entities
     WHERE instance_key = %(instance)s AND visibility_scope = %(kind)s
       AND audience_key = %(key)s AND entity_type = %(type)s AND status = 'active'
       AND normalized_label = %(label)s
       AND (linked_record_id IS NULL OR %(link_id)s::text IS NULL)
     ORDER BY linked_record_id IS NOT NULL, created_at, id
     LIMIT 1
     FOR UPDATE
""").format(columns=_ENTITY_COLUMNS)
_INSERT_ENTITY = """
    INSERT INTO agent_knowledge_entities
           (instance_key, entity_type, label, normalized_label, aliases, visibility_scope,
            audience_key, linked_record_type, linked_record_id, subject_refs, content_hash)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING
    RETURNING id
"""
_UPDATE_ENTITY = """
    UPDATE agent_knowledge_entities
       SET aliases = %s, linked_record_type = %s, linked_record_id = %s, subject_refs = %s,
           content_hash = %s
     WHERE id = %s
"""


def merge_aliases(label: str, current: Sequence[str], new: Iterable[str]) -> list[str]:
    """``current`` plus every new name that is neither the label nor an alias yet (compared
    normalised), capped at MAX_ALIASES."""
    seen = {normalized_label(label)}
    out: list[str] = []
    for alias in (*current, *new):
        norm = normalized_label(alias)
        if alias.strip() and norm not in seen:
            seen.add(norm)
            out.append(alias)
    return out[:MAX_ALIASES]


def _find_entity(conn: psycopg.Connection, batch: GraphBatch, item: EntityItem):
    partition = (batch.instance_key, batch.audience_kind, batch.audience_key, item.entity_type)
    if item.linked_record_id is not None:
        row = conn.execute(_BY_LINK, (*partition, item.linked_record_type,
                                      item.linked_record_id)).fetchone()
        if row:
            return row
    params = {"instance": batch.instance_key, "kind": batch.audience_kind,
              "key": batch.audience_key, "type": item.entity_type,
              "link_type": item.linked_record_type, "link_id": item.linked_record_id,
              "label": normalized_label(item.label)}
    stable = stable_subject_refs(item.subject_refs)
    if stable:
        row = conn.execute(_BY_SUBJECT, params | {"stable": Jsonb(stable),
                                                  "keys": list(SUBJECT_REF_KEYS)}).fetchone()
        if row:
            return row
    return conn.execute(_BY_LABEL, params).fetchone()


def _upsert_entity(conn: psycopg.Connection, batch: GraphBatch, sources: _Sources,
                   item: EntityItem, changes: GraphChanges) -> UUID:
    row = _find_entity(conn, batch, item)
    refs = sources.subject_refs(item.subject_refs)
    if row is None:
        aliases = merge_aliases(item.label, [], item.aliases)
        inserted = conn.execute(_INSERT_ENTITY, (
            batch.instance_key, item.entity_type, item.label, normalized_label(item.label),
            aliases, batch.audience_kind, batch.audience_key, item.linked_record_type,
            item.linked_record_id, Jsonb(refs),
            text_hash(entity_text(item.label, item.entity_type, aliases)))).fetchone()
        if inserted is not None:
            changes.entities_added += 1
            changes.changed_entity_ids.append(inserted[0])
            return inserted[0]
        row = _find_entity(conn, batch, item)     # a writer without the lock won
        if row is None:
            raise RuntimeError("an entity changed while it was being written; retry")

    entity_id, label, _, current_aliases, link_type, link_id, current_refs, digest = row
    aliases = merge_aliases(label, current_aliases, (item.label, *item.aliases))
    if link_id is None and item.linked_record_id is not None:
        link_type, link_id = item.linked_record_type, item.linked_record_id
    merged_refs = refs | current_refs           # what the entity already says wins
    new_digest = text_hash(entity_text(label, item.entity_type, aliases))
    if (aliases, link_id, merged_refs, new_digest) != (
            list(current_aliases), row[5], current_refs, digest):
        conn.execute(_UPDATE_ENTITY, (aliases, link_type, link_id, Jsonb(merged_refs),
                                      new_digest, entity_id))
        changes.entities_updated += 1
        if new_digest != digest:
            changes.changed_entity_ids.append(entity_id)
    return entity_id


# --- claims ---------------------------------------------------------------------------------

_FIND_CLAIM = """
    SELECT id, source_refs, confidence, valid_from, valid_to
      FROM agent_knowledge_claims
     WHERE instance_key = %s AND subject_entity_id = %s AND content_hash = %s
       AND status = 'active'
     FOR UPDATE
"""
_INSERT_CLAIM = """
    INSERT INTO agent_knowledge_claims
           (instance_key, subject_entity_id, predicate, object_entity_id, object_value,
            assertion_text, confidence, visibility_scope, audience_key, subject_refs,
            source_refs, content_hash, valid_from, valid_to)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING
    RETURNING id
"""
_REINFORCE_CLAIM = """
    UPDATE agent_knowledge_claims
       SET source_refs = %s, confidence = %s, valid_from = %s, valid_to = %s
     WHERE id = %s
"""


def _wider(current: tuple, new: tuple) -> tuple:
    """The union of two validity windows (None: open on that side)."""
    start = None if None in (current[0], new[0]) else min(current[0], new[0])
    end = None if None in (current[1], new[1]) else max(current[1], new[1])
    return start, end


def _reinforce(conn: psycopg.Connection, statement: str, row: tuple, refs: list,
               confidence: float, validity: tuple | None = None) -> bool:
    """Union the refs, keep the higher confidence (and widen the validity); True if the row
    changed."""
    item_id, current_refs, current_confidence = row[0], row[1], row[2]
    union = sorted_refs([*current_refs, *refs])
    best = max(float(current_confidence), confidence)
    values: tuple = (Jsonb(union), best)
    unchanged = union == current_refs and best == float(current_confidence)
    if validity is not None:
        window = _wider((row[3], row[4]), validity)
        values += window
        unchanged = unchanged and window == (row[3], row[4])
    if unchanged:
        return False
    conn.execute(statement, (*values, item_id))
    return True


def _claim_label(item: ClaimItem, labels: dict[str, str]) -> str | None:
    return labels.get(item.object) if item.object is not None else item.value


def _upsert_claim(conn: psycopg.Connection, batch: GraphBatch, sources: _Sources,
                  item: ClaimItem, entities: dict[str, UUID], labels: dict[str, str],
                  evidence: _Evidence, changes: GraphChanges) -> None:
    subject_id = entities.get(item.subject)
    object_id = entities.get(item.object) if item.object is not None else None
    if subject_id is None or (item.object is not None and object_id is None):
        log.warning("graph claim skipped: it names an entity the extraction does not have")
        return
    cited = sources.cited(item.source_memory_ids)
    refs = sources.refs(cited)
    confidence = min(max(float(item.confidence), 0.0), 1.0)
    validity = sources.validity(cited)
    value = None if object_id is not None else item.value
    digest = claim_identity(item.predicate, object_id, value, item.assertion_text)
    find = (batch.instance_key, subject_id, digest)
    row = conn.execute(_FIND_CLAIM, find).fetchone()
    if row is None:
        inserted = conn.execute(_INSERT_CLAIM, (
            batch.instance_key, subject_id, item.predicate, object_id, value,
            item.assertion_text, confidence, batch.audience_kind, batch.audience_key,
            Jsonb(sources.shared_refs(cited)), Jsonb(refs), digest, *validity)).fetchone()
        if inserted is not None:
            claim_id = inserted[0]
            changes.claims_added += 1
            changes.changed_claim_ids.append(claim_id)
            changes.new_claims.append({
                "claimId": str(claim_id), "subject": labels[item.subject],
                "predicate": item.predicate, "object": _claim_label(item, labels),
                "assertionText": item.assertion_text,
                "assertionIds": [str(s.assertion_id) for s in cited]})
            evidence.add("claim_id", claim_id, cited)
            return
        row = conn.execute(_FIND_CLAIM, find).fetchone()   # a writer without the lock won
    if _reinforce(conn, _REINFORCE_CLAIM, row, refs, confidence, validity):
        changes.claims_reinforced += 1
    evidence.add("claim_id", row[0], cited)


# --- edges ----------------------------------------------------------------------------------

_FIND_EDGE = """
    SELECT id, source_refs, confidence
      FROM agent_knowledge_edges
     WHERE instance_key = %s AND source_entity_id = %s AND target_entity_id = %s
       AND relation_type = %s AND status = 'active'
     FOR UPDATE
"""
_INSERT_EDGE = """
    INSERT INTO agent_knowledge_edges
           (instance_key, source_entity_id, target_entity_id, relation_type, confidence,
            visibility_scope, audience_key, subject_refs, source_refs)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
    ON CONFLICT DO NOTHING
    RETURNING id
"""
_REINFORCE_EDGE = """
    UPDATE agent_knowledge_edges SET source_refs = %s, confidence = %s WHERE id = %s
"""


def _upsert_edge(conn: psycopg.Connection, batch: GraphBatch, sources: _Sources,
                 item: EdgeItem, entities: dict[str, UUID], evidence: _Evidence,
                 changes: GraphChanges) -> None:
    source_id, target_id = entities.get(item.source), entities.get(item.target)
    if source_id is None or target_id is None:
        log.warning("graph edge skipped: it names an entity the extraction does not have")
        return
    if source_id == target_id:
        return                                   # a self-loop says nothing
    cited = sources.cited(item.source_memory_ids)
    refs = sources.refs(cited)
    confidence = min(max(float(item.confidence), 0.0), 1.0)
    find = (batch.instance_key, source_id, target_id, item.relation_type)
    row = conn.execute(_FIND_EDGE, find).fetchone()
    if row is None:
        inserted = conn.execute(_INSERT_EDGE, (
            batch.instance_key, source_id, target_id, item.relation_type, confidence,
            batch.audience_kind, batch.audience_key, Jsonb(sources.shared_refs(cited)),
            Jsonb(refs))).fetchone()
        if inserted is not None:
            changes.edges_added += 1
            evidence.add("edge_id", inserted[0], cited)
            return
        row = conn.execute(_FIND_EDGE, find).fetchone()
    if _reinforce(conn, _REINFORCE_EDGE, row, refs, confidence):
        changes.edges_reinforced += 1
    evidence.add("edge_id", row[0], cited)


# --- the entry points -----------------------------------------------------------------------


def _check_batch(batch: GraphBatch) -> None:
    """Every source belongs to the batch's instance and audience (a batch never mixes)."""
    strays = [str(s.memory_id) for s in batch.sources
              if (s.instance_key, s.audience_kind, s.audience_key)
              != (batch.instance_key, batch.audience_kind, batch.audience_key)]
    if strays:
        raise GraphWorkRetryable("instance_mismatch",
                                 "a source lies outside the batch's instance or audience",
                                 [{"memoryIds": strays[:10]}])


def apply_extraction(conn: psycopg.Connection, batch: GraphBatch,
                     extraction: Extraction) -> GraphChanges:
    """Upsert the extraction's entities, claims and edges (and their evidence) into the
    batch's audience partition. Runs inside the caller's transaction."""
    _check_batch(batch)
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key(batch),))
    sources = _Sources(batch)
    changes = GraphChanges()
    evidence = _Evidence()
    entities: dict[str, UUID] = {}
    labels: dict[str, str] = {}
    for item in extraction.entities:
        cited = sources.cited(item.source_memory_ids)
        entity_id = _upsert_entity(conn, batch, sources, item, changes)
        entities[item.ref], labels[item.ref] = entity_id, item.label
        evidence.add("entity_id", entity_id, cited)
    for claim in extraction.claims:
        _upsert_claim(conn, batch, sources, claim, entities, labels, evidence, changes)
    for edge in extraction.edges:
        _upsert_edge(conn, batch, sources, edge, entities, evidence, changes)
    changes.evidence_added = evidence.write(conn, batch.instance_key)
    changes.changed_entity_ids = list(dict.fromkeys(changes.changed_entity_ids))
    return changes


def remove_dream_refs(conn: psycopg.Connection, instance_key: str,
                      dream_id: UUID) -> GraphChanges:
    """The per-Dream rebuild cleanup: remove ``{"dreamId": dream_id}`` from every claim and
    edge and the Dream's ``dream`` evidence rows. Stable memory refs stay (an earlier Dream
    may share them); a claim or edge left without any stable ref is superseded and the
    entities it leaves orphaned are quarantined. Runs inside the caller's transaction."""
    partition = conn.execute(
        "SELECT audience_kind, audience_key FROM agent_memory_dreams"
        " WHERE instance_key = %s AND id = %s", (instance_key, dream_id)).fetchone()
    if partition is not None:
        lock_partitions(conn, instance_key, [tuple(partition)])
    changes = GraphChanges()
    touched = remove_refs(conn, instance_key, [{"dreamId": str(dream_id)}],
                          supported="stable", changes=changes)
    deleted = conn.execute(
        "DELETE FROM agent_knowledge_evidence WHERE instance_key = %s AND dream_id = %s"
        " AND evidence_kind = 'dream' RETURNING entity_id", (instance_key, dream_id)).fetchall()
    touched |= {row[0] for row in deleted if row[0] is not None}
    changes.entities_quarantined = quarantine_orphans(conn, instance_key, touched,
                                                      "orphaned_by_dream_cleanup")
    return changes

