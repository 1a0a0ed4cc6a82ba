"""The retention sweep (specification, "Retention"): keeps the memory stores from growing
without bound.

:func:`retention_sweep` makes up to three passes, each in bounded batches (at most
:data:`BATCH_ROWS` rows per committed transaction, at most :data:`MAX_BATCHES` transactions
per pass and sweep):

1. **Memories**: ``agent_memories`` rows in state ``superseded`` or ``archived`` whose
   ``archived_at`` (else ``updated_at``) is older than ``retention_days`` are deleted;
   their chunks, relations, retrieval feedback and graph evidence of inactive items cascade.
   Use restarts the clock (the specification: retention "can use" the recall stamps to favor
   useful memories, seed:89): a row recalled (``last_retrieved_at``) or whose assertion was
   called helpful (an explicit ``helpful`` event) within ``retention_days`` waits.
   A row is kept while anything live still references it: its own assertion, or an
   assertion citing its source envelope through evidence, in a live state
   (:data:`LIVE_ASSERTION_STATES`), or a graph evidence row of an active claim or edge or an
   active/quarantined entity. Rows a Dream wrote (``source_type = 'dream'`` or ``dream_id``
   set) and ``agent_memory_dreams`` rows stay for audit; source envelopes stay (their link
   is set NULL by the schema).
2. **Graph evidence cap**: per entity, claim or edge at most ``retention_evidence_cap`` rows of
   ``agent_knowledge_evidence`` are kept, the newest (``created_at``, then id).
3. **Context messages** (only with ``prune_context=True``, off by default: it trades away the
   lossless guarantee): ``agent_context_messages`` older than the window that a summary
   covers (``agent_context_summary_messages``), that are no longer an item of the live
   assembly and are not their session's newest message. Context history is session-, not
   audience-scoped, so this pass does not run when an ``audience`` is given.

Every deletion is preceded, in its transaction, by an ``agent_memory_v2_cleanup_audit`` row
(operation ``retention_delete``, ``consolidation.audit.audit``) whose before-image holds ids,
kinds, states, times and sizes but never the deleted text. Candidates are locked
``FOR UPDATE SKIP LOCKED`` and the DELETE repeats the conditions; if the repeat deletes fewer
rows than were audited (a reference appeared in between), the batch's transaction is rolled
back, audits included, and the pass stops, to be retried by the next sweep.

A dry run counts what the passes would delete (up to the same bounds) and writes nothing.
Self-committing (db/units.py): call it on a connection outside a transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from memory_platform.features.consolidation.audit import audit
from memory_platform.foundation.db.units import committed_unit, require_idle
from memory_platform.foundation.settings import Settings

BATCH_ROWS = 500
"""Rows deleted per committed transaction."""
MAX_BATCHES = 100
"""Transactions per pass and sweep; what is left is reported as ``more`` and waits."""
LIVE_ASSERTION_STATES = ("candidate", "active", "conflicted")
"""Assertion states that keep the memories they cite (not yet settled, or told)."""

OPERATION = "retention_delete"


def _scoped(template: str, scope: str) -> sql.Composed:
    """``template`` with its ``{scope}`` conditions (constant SQL; values stay parameters)."""
    return sql.SQL(template).format(scope=sql.SQL(scope))


class _Race(Exception):
    """A candidate stopped qualifying between its audit row and its DELETE."""


@dataclass
class RetentionResult:
    dry_run: bool
    instance_key: str | None = None
    audience: tuple[str, str] | None = None
    prune_context: bool = False
    retention_days: int = 0
    evidence_cap: int = 0
    memories: int = 0
    chunks: int = 0
    knowledge_evidence: int = 0
    context_messages: int = 0
    audit_rows: int = 0
    batches: int = 0
    races: int = 0
    more: bool = False

    def summary(self) -> dict[str, int]:
        """Numeric counts per table (Dagster metadata, the endpoint's answer)."""
        return {"agent_memories": self.memories, "agent_memory_chunks": self.chunks,
                "agent_knowledge_evidence": self.knowledge_evidence,
                "agent_context_messages": self.context_messages,
                "auditRows": self.audit_rows, "batches": self.batches,
                "races": self.races, "more": int(self.more)}

    def as_json(self) -> dict[str, Any]:
        return {"dryRun": self.dry_run, "instanceKey": self.instance_key,
                "audience": ({"kind": self.audience[0], "key": self.audience[1]}
                             if self.audience else None),
                "pruneContext": self.prune_context, "retentionDays": self.retention_days,
                "evidenceCap": self.evidence_cap, "deleted": self.summary()}


# --- memories ------------------------------------------------------------------------------

_MEMORY_SCOPE = """
       (%(instance)s::text IS NULL OR m.instance_key = %(instance)s)
   AND (%(kind)s::text IS NULL OR (m.visibility_scope = %(kind)s AND m.audience_key = %(key)s))
   AND m.memory_state IN ('superseded', 'archived')
   AND greatest(coalesce(m.archived_at, m.updated_at), m.last_retrieved_at)
       < now() - make_interval(days => %(days)s)
   AND m.source_type <> 'dream' AND m.dream_id IS NULL
   AND NOT EXISTS (
       SELECT 1 FROM agent_memory_retrieval_feedback f
        WHERE f.assertion_id = m.assertion_id AND f.instance_key = m.instance_key
          AND f.event_type = 'helpful'
          AND f.created_at >= now() - make_interval(days => %(days)s))
   AND NOT EXISTS (
       SELECT 1 FROM agent_memory_assertions a
        WHERE a.instance_key = m.instance_key AND a.id = m.assertion_id
          AND a.status = ANY(%(live)s))
   AND NOT EXISTS (
       SELECT 1 FROM agent_memory_sources s
         JOIN agent_memory_assertion_evidence e
           ON e.instance_key = s.instance_key AND e.source_id = s.id
         JOIN agent_memory_assertions a
           ON a.instance_key = e.instance_key AND a.id = e.assertion_id
        WHERE s.instance_key = m.instance_key
          AND (s.memory_id = m.id OR s.id = m.source_id)
          AND a.status = ANY(%(live)s))
   AND NOT EXISTS (
       SELECT 1 FROM agent_knowledge_evidence ke
         LEFT JOIN agent_knowledge_entities ent
           ON ent.instance_key = ke.instance_key AND ent.id = ke.entity_id
         LEFT JOIN agent_knowledge_claims cl
           ON cl.instance_key = ke.instance_key AND cl.id = ke.claim_id
         LEFT JOIN agent_knowledge_edges ed
           ON ed.instance_key = ke.instance_key AND ed.id = ke.edge_id
        WHERE ke.instance_key = m.instance_key AND ke.source_memory_id = m.id
          AND (ent.status IN ('active', 'quarantined') OR cl.status = 'active'
               OR ed.status = 'active'))
"""
_MEMORY_CANDIDATES = """
    SELECT m.id, m.instance_key, jsonb_build_object(
               'id', m.id, 'instanceKey', m.instance_key, 'memoryScope', m.memory_scope,
               'visibilityScope', m.visibility_scope, 'audienceKey', m.audience_key,
               'userId', m.user_id, 'sessionKey', m.session_key,
               'sourceType', m.source_type, 'memoryState', m.memory_state,
               'assertionId', m.assertion_id, 'sourceId', m.source_id,
               'supersededByMemoryId', m.superseded_by_memory_id,
               'contentLength', length(m.content),
               'titleLength', coalesce(length(m.title), 0),
               'retrievalCount', m.retrieval_count, 'archivedAt', m.archived_at,
               'createdAt', m.created_at, 'updatedAt', m.updated_at,
               'chunks', (SELECT count(*) FROM agent_memory_chunks c
                           WHERE c.instance_key = m.instance_key AND c.memory_id = m.id))
      FROM agent_memories m
     WHERE {scope}
     ORDER BY coalesce(m.archived_at, m.updated_at), m.id
     LIMIT %(limit)s
     FOR UPDATE OF m SKIP LOCKED
"""
_MEMORY_DELETE = ("DELETE FROM agent_memories m WHERE m.id = ANY(%(ids)s) AND {scope}"
                  " RETURNING m.id")
_MEMORY_COUNT = ("SELECT count(*), coalesce(sum((SELECT count(*) FROM agent_memory_chunks c"
                 " WHERE c.instance_key = m.instance_key AND c.memory_id = m.id)), 0)"
                 " FROM (SELECT m.* FROM agent_memories m WHERE {scope} LIMIT %(limit)s) m")
_MEMORY_CANDIDATES, _MEMORY_DELETE, _MEMORY_COUNT = (
    _scoped(t, _MEMORY_SCOPE) for t in (_MEMORY_CANDIDATES, _MEMORY_DELETE, _MEMORY_COUNT))

# --- graph evidence ------------------------------------------------------------------------

_EVIDENCE_EXCESS = """
    WITH scoped AS (
        SELECT ke.id, ke.instance_key, ke.entity_id, ke.claim_id, ke.edge_id, ke.created_at
          FROM agent_knowledge_evidence ke
          LEFT JOIN agent_knowledge_entities ent
            ON ent.instance_key = ke.instance_key AND ent.id = ke.entity_id
          LEFT JOIN agent_knowledge_claims cl
            ON cl.instance_key = ke.instance_key AND cl.id = ke.claim_id
          LEFT JOIN agent_knowledge_edges ed
            ON ed.instance_key = ke.instance_key AND ed.id = ke.edge_id
         WHERE (%(instance)s::text IS NULL OR ke.instance_key = %(instance)s)
           AND (%(kind)s::text IS NULL
                OR (coalesce(ent.visibility_scope, cl.visibility_scope, ed.visibility_scope)
                        = %(kind)s
                    AND coalesce(ent.audience_key, cl.audience_key, ed.audience_key)
                        = %(key)s))
    ), ranked AS (
        SELECT id, instance_key, row_number() OVER (
                   PARTITION BY instance_key, entity_id, claim_id, edge_id
                   ORDER BY created_at DESC, id DESC) AS rank
          FROM scoped
    )
    SELECT id FROM ranked WHERE rank > %(cap)s ORDER BY id LIMIT %(limit)s
"""
_EVIDENCE_LOCK = """
    SELECT ke.id, ke.instance_key, jsonb_build_object(
               'id', ke.id, 'instanceKey', ke.instance_key, 'entityId', ke.entity_id,
               'claimId', ke.claim_id, 'edgeId', ke.edge_id,
               'evidenceKind', ke.evidence_kind, 'dreamId', ke.dream_id,
               'sourceMemoryId', ke.source_memory_id, 'assertionId', ke.assertion_id,
               'excerptLength', coalesce(length(ke.excerpt), 0),
               'createdAt', ke.created_at)
      FROM agent_knowledge_evidence ke
     WHERE ke.id = ANY(%(ids)s)
     ORDER BY ke.id
     FOR UPDATE SKIP LOCKED
"""
_EVIDENCE_DELETE = "DELETE FROM agent_knowledge_evidence WHERE id = ANY(%(ids)s) RETURNING id"

# --- context messages ----------------------------------------------------------------------

_CONTEXT_SCOPE = """
       (%(instance)s::text IS NULL OR msg.instance_key = %(instance)s)
   AND msg.created_at < now() - make_interval(days => %(days)s)
   AND EXISTS (SELECT 1 FROM agent_context_summary_messages sm
                WHERE sm.instance_key = msg.instance_key AND sm.session_key = msg.session_key
                  AND sm.message_id = msg.id)
   AND NOT EXISTS (SELECT 1 FROM agent_context_items i
                    WHERE i.instance_key = msg.instance_key
                      AND i.session_key = msg.session_key AND i.message_id = msg.id)
   AND msg.seq < (SELECT max(n.seq) FROM agent_context_messages n
                   WHERE n.instance_key = msg.instance_key AND n.session_key = msg.session_key)
"""
_CONTEXT_CANDIDATES = """
    SELECT msg.id, msg.instance_key, jsonb_build_object(
               'id', msg.id, 'instanceKey', msg.instance_key, 'sessionKey', msg.session_key,
               'userId', msg.user_id, 'seq', msg.seq, 'role', msg.role,
               'tokenCount', msg.token_count, 'contentLength', length(msg.content),
               'runId', msg.run_id, 'createdAt', msg.created_at,
               'summaryIds', (SELECT jsonb_agg(sm.summary_id)
                                FROM agent_context_summary_messages sm
                               WHERE sm.instance_key = msg.instance_key
                                 AND sm.session_key = msg.session_key
                                 AND sm.message_id = msg.id))
      FROM agent_context_messages msg
     WHERE {scope}
     ORDER BY msg.created_at, msg.id
     LIMIT %(limit)s
     FOR UPDATE OF msg SKIP LOCKED
"""
_CONTEXT_DELETE = ("DELETE FROM agent_context_messages msg WHERE msg.id = ANY(%(ids)s)"
                   " AND {scope} RETURNING msg.id")
_CONTEXT_COUNT = ("SELECT count(*) FROM (SELECT 1 FROM agent_context_messages msg"
                  " WHERE {scope} LIMIT %(limit)s) x")
_CONTEXT_CANDIDATES, _CONTEXT_DELETE, _CONTEXT_COUNT = (
    _scoped(t, _CONTEXT_SCOPE) for t in (_CONTEXT_CANDIDATES, _CONTEXT_DELETE, _CONTEXT_COUNT))


def _params(instance_key: str | None, audience: tuple[str, str] | None,
            settings: Settings) -> dict[str, Any]:
    kind, key = audience if audience else (None, None)
    return {"instance": instance_key, "kind": kind, "key": key,
            "days": settings.retention_days, "live": list(LIVE_ASSERTION_STATES),
            "cap": settings.retention_evidence_cap, "limit": BATCH_ROWS}


def _delete_batch(conn: psycopg.Connection, result: RetentionResult, table: str,
                  candidates: list[tuple[Any, str, dict[str, Any]]], delete: sql.Composable | str,
                  params: dict[str, Any]) -> int:
    """Audit every candidate, then delete them with the conditions repeated; a shortfall
    rolls the whole batch back (:class:`_Race`). Runs inside the batch's transaction."""
    for row_id, instance, before in candidates:
        audit(conn, instance, OPERATION, table, row_id, before=before,
              mapping={"reason": "retention", "retentionDays": params["days"],
                       "evidenceCap": params["cap"]})
    ids = [row_id for row_id, _, _ in candidates]
    deleted = conn.execute(delete, {**params, "ids": ids}).fetchall()
    if len(deleted) != len(ids):
        raise _Race(table)
    return len(ids)


def _memories(conn: psycopg.Connection, result: RetentionResult,
              params: dict[str, Any]) -> None:
    if result.dry_run:
        rows, chunks = conn.execute(
            _MEMORY_COUNT, {**params, "limit": BATCH_ROWS * MAX_BATCHES}).fetchone()
        result.memories, result.chunks = int(rows), int(chunks)
        result.more = result.more or rows >= BATCH_ROWS * MAX_BATCHES
        return
    for _ in range(MAX_BATCHES):
        try:
            with committed_unit(conn):
                candidates = conn.execute(_MEMORY_CANDIDATES, params).fetchall()
                if not candidates:
                    return
                count = _delete_batch(conn, result, "agent_memories", candidates,
                                      _MEMORY_DELETE, params)
        except _Race:
            result.races += 1
            return
        result.batches += 1
        result.memories += count
        result.audit_rows += count
        result.chunks += sum(int(before.get("chunks") or 0) for _, _, before in candidates)
        if count < BATCH_ROWS:
            return
    result.more = True


def _evidence(conn: psycopg.Connection, result: RetentionResult,
              params: dict[str, Any]) -> None:
    if result.dry_run:
        rows = conn.execute(_EVIDENCE_EXCESS,
                            {**params, "limit": BATCH_ROWS * MAX_BATCHES}).fetchall()
        result.knowledge_evidence = len(rows)
        result.more = result.more or len(rows) >= BATCH_ROWS * MAX_BATCHES
        return
    for _ in range(MAX_BATCHES):
        try:
            with committed_unit(conn):
                excess = [r[0] for r in conn.execute(_EVIDENCE_EXCESS, params).fetchall()]
                if not excess:
                    return
                candidates = conn.execute(_EVIDENCE_LOCK, {"ids": excess}).fetchall()
                if not candidates:
                    return  # all locked by someone else: the next sweep takes them
                count = _delete_batch(conn, result, "agent_knowledge_evidence", candidates,
                                      _EVIDENCE_DELETE, params)
        except _Race:
            result.races += 1
            return
        result.batches += 1
        result.knowledge_evidence += count
        result.audit_rows += count
        if len(excess) < BATCH_ROWS:
            return
    result.more = True


def _context(conn: psycopg.Connection, result: RetentionResult,
             params: dict[str, Any]) -> None:
    if result.dry_run:
        rows = conn.execute(_CONTEXT_COUNT,
                            {**params, "limit": BATCH_ROWS * MAX_BATCHES}).fetchone()[0]
        result.context_messages = int(rows)
        result.more = result.more or rows >= BATCH_ROWS * MAX_BATCHES
        return
    for _ in range(MAX_BATCHES):
        try:
            with committed_unit(conn):
                candidates = conn.execute(_CONTEXT_CANDIDATES, params).fetchall()
                if not candidates:
                    return
                count = _delete_batch(conn, result, "agent_context_messages", candidates,
                                      _CONTEXT_DELETE, params)
        except _Race:
            result.races += 1
            return
        result.batches += 1
        result.context_messages += count
        result.audit_rows += count
        if count < BATCH_ROWS:
            return
    result.more = True


def retention_sweep(conn: psycopg.Connection, settings: Settings, *,
                    instance_key: str | None = None,
                    audience: tuple[str, str] | None = None, dry_run: bool = False,
                    prune_context: bool = False) -> RetentionResult:
    """Delete what retention allows (module docstring) in one instance (all when
    ``instance_key`` is None) or one audience partition ``(kind, key)`` of it; answer the
    rows deleted (or, in a dry run, that would be) per table. The window and the evidence cap
    are ``retention_days`` and ``retention_evidence_cap``."""
    require_idle(conn, "retention_sweep")
    if audience is not None:
        if instance_key is None:
            raise ValueError("an audience names a partition of one instance: give instance_key")
        kind, key = audience
        if kind not in ("private", "team", "workspace", "channel") or not key:
            raise ValueError(f"unknown audience {audience!r}")
        audience = (kind, key)
    result = RetentionResult(dry_run=dry_run, instance_key=instance_key, audience=audience,
                             prune_context=prune_context,
                             retention_days=settings.retention_days,
                             evidence_cap=settings.retention_evidence_cap)
    params = _params(instance_key, audience, settings)
    if dry_run:
        with committed_unit(conn):
            _memories(conn, result, params)
            _evidence(conn, result, params)
            if prune_context and audience is None:
                _context(conn, result, params)
        return result
    _memories(conn, result, params)
    _evidence(conn, result, params)
    if prune_context and audience is None:
        _context(conn, result, params)
    return result



# A memory retention deleted that the evidence of a live assertion still names (sources are
# keyed ``memory:<id>`` by the write path and Dream promotion).
_DELETED_SUPPORT = """
    SELECT au.target_id FROM agent_memory_v2_cleanup_audit au
     WHERE au.instance_key = %(i)s AND au.operation = 'retention_delete'
       AND au.target_table = 'agent_memories'
       AND EXISTS (SELECT 1 FROM agent_memory_sources s
                     JOIN agent_memory_assertion_evidence e
                       ON e.instance_key = s.instance_key AND e.source_id = s.id
                     JOIN agent_memory_assertions a
                       ON a.instance_key = e.instance_key AND a.id = e.assertion_id
                    WHERE s.instance_key = au.instance_key
                      AND s.source_key = 'memory:' || au.target_id
                      AND a.audience_kind = %(k)s AND a.audience_key = %(a)s
                      AND a.status IN ('candidate', 'active', 'conflicted'))
     LIMIT 21
"""


def deleted_live_support(conn: psycopg.Connection, instance_key: str, audience_kind: str,
                         audience_key: str) -> list[str]:
    """Retention's invariant, from the outside: no memory it deleted is named by the
    evidence of a live assertion of the partition (at most 21 offenders)."""
    return [r[0] for r in conn.execute(_DELETED_SUPPORT, {
        "i": instance_key, "k": audience_kind, "a": audience_key}).fetchall()]
