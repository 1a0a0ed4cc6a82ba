"""Candidate assertion pairs of same-slot resolution (specification, "Consolidation").

A pair is two assertions an agent may currently be told (``ledger.recall.TOLD``) of ONE exact
partition (instance, audience kind, audience key) that fill the same canonical slot and whose
vectors of the instance's ACTIVE embedding generation are at least
``consolidation_similarity_threshold`` similar (cosine). Only such pairs are worth a model's
judgment: different slots or distant texts are not the same statement.

- The slot is the normalised subject and predicate (:func:`slot_of`, ``text.normalise``); an
  assertion missing either has no slot, and all of those share the ``unslotted`` slot (most
  assertions have none; their texts alone decide).
- Without an active generation there are no pairs: vectors of different generations are never
  compared (invariant 6) and there is no lexical fallback pairing (the specification says so:
  a lexical pass would pair words, not statements). :func:`candidate_pairs` answers [] and
  logs why; the caller records the diagnostic.
- One bounded statement: the partition's most recently updated told assertions with a vector
  (at most ``max_scan``), for each its ``NEIGHBOURS`` nearest same-slot neighbours (a lateral
  join, full-precision distances), each unordered pair once, most similar first, at most
  ``limit``. The SQL slot key (NFKC, lower case, ``ß`` folded, whitespace collapsed) may only
  be coarser than :func:`slot_of`, which re-checks every pair in Python: the one rule.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.consolidation.types import Partition
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import normalise
from memory_platform.shared.embeddings.generations import active_generation, exact_distance
from memory_platform.shared.ledger.recall import TOLD

log = logging.getLogger(__name__)

UNSLOTTED = "unslotted"
NEIGHBOURS = 8        # nearest same-slot neighbours looked at per assertion
MAX_SCAN = 1000       # most recently updated told assertions of a partition considered


@dataclass(frozen=True)
class PairMember:
    """One side of a pair: what the judge shows and what the outcome rules weigh."""

    id: UUID
    text: str
    review_state: str         # human_approved | policy_approved (told assertions only)
    origin: str
    confidence: float
    created_at: datetime
    subject: str | None
    predicate: str | None


@dataclass(frozen=True)
class Pair:
    """Two told assertions of one partition and slot; ``left`` is the older one."""

    left: PairMember
    right: PairMember
    similarity: float
    slot: str

    @property
    def ids(self) -> tuple[UUID, UUID]:
        return self.left.id, self.right.id

    def member(self, assertion_id: UUID) -> PairMember:
        return self.left if assertion_id == self.left.id else self.right

    def other(self, assertion_id: UUID) -> PairMember:
        return self.right if assertion_id == self.left.id else self.left


def slot_of(subject: str | None, predicate: str | None) -> str:
    """The canonical slot: normalised subject and predicate, or :data:`UNSLOTTED`."""
    s, p = normalise(subject or ""), normalise(predicate or "")
    return f"{s}\x1f{p}" if s and p else UNSLOTTED


def _sql_slot(alias: str) -> sql.Composable:
    """The SQL slot key: equal for every two slots :func:`slot_of` calls equal (it folds no
    less), re-checked in Python."""
    def part(column: str) -> sql.Composable:
        return sql.SQL(
            "btrim(regexp_replace(replace(lower(normalize(coalesce({c}, ''), NFKC)), 'ß', 'ss'),"
            " '\\s+', ' ', 'g'))").format(c=sql.Identifier(alias, column))
    return sql.SQL("CASE WHEN {s} = '' OR {p} = '' THEN {u} ELSE {s} || chr(31) || {p} END"
                   ).format(s=part("subject"), p=part("predicate"), u=sql.Literal(UNSLOTTED))


_COLUMNS = ("id", "assertion_text", "review_state", "origin", "confidence", "created_at",
            "subject", "predicate")


def _statement(key: str, dimensions: int) -> sql.Composed:
    """The pairing statement (module docstring). The generation key is a literal so the
    vector rows are those of exactly that key."""
    distance = exact_distance("l", dimensions, sql.SQL("r.embedding"))
    cols = sql.SQL(", ").join(sql.Identifier("a", c) for c in _COLUMNS)
    left = sql.SQL(", ").join(sql.Identifier("l", c) for c in _COLUMNS)
    right = sql.SQL(", ").join(sql.Identifier("n", c) for c in _COLUMNS)
    return sql.SQL("""
        WITH told AS MATERIALIZED (
            SELECT {cols}, {slot} AS slot_key, e.embedding
              FROM agent_memory_assertions a
              JOIN agent_memory_assertion_embeddings e
                ON e.instance_key = a.instance_key AND e.assertion_id = a.id
               AND e.generation_id = %(generation)s AND e.embedding_key = {key}
             WHERE a.instance_key = %(instance)s AND a.audience_kind = %(kind)s
               AND a.audience_key = %(audience)s AND {told}
             ORDER BY a.updated_at DESC, a.id
             LIMIT %(scan)s
        ), near AS (
            SELECT DISTINCT ON (least(l.id, n.id), greatest(l.id, n.id))
                   {left}, {right}, n.similarity
              FROM told l
             CROSS JOIN LATERAL (
                   SELECT r.*, 1 - {distance} AS similarity
                     FROM told r
                    WHERE r.slot_key = l.slot_key AND r.id <> l.id
                    ORDER BY similarity DESC, r.id
                    LIMIT %(neighbours)s) n
             WHERE n.similarity >= %(threshold)s
               -- A pair a person already settled (a resolved conflict) is never judged
               -- again: human decisions win over consolidation.
               AND NOT EXISTS (
                   SELECT 1 FROM agent_memory_assertion_conflicts c
                    WHERE c.instance_key = %(instance)s AND c.status = 'resolved'
                      AND ((c.assertion_id = l.id AND c.conflicting_assertion_id = n.id)
                        OR (c.assertion_id = n.id AND c.conflicting_assertion_id = l.id)))
             ORDER BY least(l.id, n.id), greatest(l.id, n.id)
        )
        SELECT * FROM near ORDER BY similarity DESC, 1, 9 LIMIT %(limit)s
    """).format(cols=cols, slot=_sql_slot("a"), key=sql.Literal(key), told=TOLD,
                left=left, right=right, distance=distance)


def _member(values: tuple) -> PairMember:
    id_, text, review_state, origin, confidence, created_at, subject, predicate = values
    return PairMember(id_, text, review_state, origin, float(confidence), created_at,
                      subject, predicate)


def candidate_pairs(conn: psycopg.Connection, settings: Settings, partition: Partition, *,
                    limit: int, max_scan: int = MAX_SCAN) -> list[Pair]:
    """The partition's same-slot pairs at or above the similarity threshold, most similar
    first, at most ``limit`` (module docstring); [] without an active generation."""
    if limit <= 0:
        return []
    generation = active_generation(conn, partition.instance_key)
    if generation is None:
        log.info("consolidation: no active embedding generation for %s; no pairs (no "
                 "lexical fallback)", partition.instance_key)
        return []
    rows = conn.execute(_statement(generation.generation_key, generation.dimensions), {
        "generation": generation.id, "instance": partition.instance_key,
        "kind": partition.audience_kind, "audience": partition.audience_key,
        "scan": max_scan, "neighbours": NEIGHBOURS,
        "threshold": settings.consolidation_similarity_threshold, "limit": limit,
    }).fetchall()
    width = len(_COLUMNS)
    pairs = []
    for row in rows:
        one, two = _member(row[:width]), _member(row[width:2 * width])
        slot = slot_of(one.subject, one.predicate)
        if slot != slot_of(two.subject, two.predicate):
            continue   # the SQL key folded more than text.normalise does
        left, right = sorted((one, two), key=lambda m: (m.created_at, str(m.id)))
        pairs.append(Pair(left, right, float(row[2 * width]), slot))
    return pairs
