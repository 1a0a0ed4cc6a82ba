"""Dream input selection (specification, "Dream input selection").

The model only ever sees, per exact audience partition:

* ``activity``: assertion-less episodic ``summary``/``flush`` rows;
* ``direct_facts``: fact rows backed by an active, approved, currently valid assertion whose
  own source envelope is a human (``human_direct``/``human_channel``);
* ``other_facts``: other such fact rows (assistant inferences, assertion projections);
* ``dreams``: projections of prior Dream assertions that are human-grounded (at least one
  supporting evidence source is human).

Excluded in SQL, before any recency limit: the agent's own automation sessions (one shared
prefix list, ``automation_session_prefixes``) and rows whose source envelope is automation or
system; legacy assertion-less facts/dreams; facts/dreams whose assertion is not currently
approved. Rows whose envelope does not name an owner matching their audience are quarantined
(counted, never moved to another audience). One session contributes at most
``dream_per_session_activity_cap`` activity rows. Each pool keeps its most recent
``dream_candidate_limit`` rows, then :func:`balance` picks ``dream_max_inputs``: the
``dream_fact_quota_ratio`` share from direct human facts, then activity round-robin over
sessions, then remaining facts/activity, then prior dreams.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.settings import Settings
from memory_platform.shared.ledger.recall import TOLD

__all__ = ["POOLS", "DreamInput", "DreamInputs", "Partition", "PartitionSummary", "balance",
           "eligible_partitions", "is_automation_session", "select_inputs"]

POOLS = ("direct_facts", "activity", "other_facts", "dreams")
HUMAN_TRUST = ("human_direct", "human_channel")
NON_HUMAN_TRUST = ("automation", "system")


@dataclass(frozen=True)
class DreamInput:
    memory_id: UUID
    pool: str
    source_type: str
    content: str
    session_key: str | None
    user_id: str | None
    source_id: UUID | None
    trust_class: str | None
    assertion_id: UUID | None
    created_at: datetime
    updated_at: datetime
    # When what the row says happened (the writer's event time), as opposed to created_at,
    # when it was written; None: not given.
    occurred_at: datetime | None = None

    def for_model(self, max_chars: int | None = None) -> dict[str, Any]:
        """The shape the maintenance model receives (``JsonRequest.inputs``); ``occurredAt``
        only when the row has an event time."""
        content = self.content if max_chars is None else self.content[:max_chars]
        shape = {"memoryId": str(self.memory_id), "content": content,
                 "sourceType": self.source_type, "createdAt": self.created_at.isoformat()}
        if self.occurred_at is not None:
            shape["occurredAt"] = self.occurred_at.isoformat()
        return shape


@dataclass
class DreamInputs:
    partition: Partition
    rows: list[DreamInput]
    selected: dict[str, int]            # per pool, what goes to the model
    candidates: dict[str, int]          # per pool, inside the recency window
    quarantined: int = 0
    excluded_automation: int = 0
    excluded_legacy: int = 0
    over_session_cap: int = 0
    diagnostics: list[dict[str, Any]] = field(default_factory=list)

    @property
    def by_id(self) -> dict[str, DreamInput]:
        return {str(r.memory_id): r for r in self.rows}

    def stats(self) -> dict[str, Any]:
        return {"inputs": dict(self.selected), "inputsTotal": len(self.rows),
                "candidates": dict(self.candidates), "quarantined": self.quarantined,
                "excludedAutomation": self.excluded_automation,
                "excludedLegacy": self.excluded_legacy, "overSessionCap": self.over_session_cap}


@dataclass(frozen=True)
class PartitionSummary:
    partition: Partition
    counts: dict[str, int]
    total: int
    newest_input_at: datetime | None
    quarantined: int
    excluded_automation: int

    @property
    def partition_key(self) -> str:
        return self.partition.partition_key


def is_automation_session(settings: Settings, session_key: str | None) -> bool:
    """Whether ``session_key`` is one of the agent's own automation runs: the same prefix
    list (``automation_session_prefixes``, case-insensitive) that keeps them out of Dreaming
    also tells the pre-compaction flush to skip them."""
    key = (session_key or "").lower()
    return bool(key) and any(key.startswith(p.lower())
                             for p in settings.automation_session_prefixes if p)


# --- SQL -----------------------------------------------------------------------------------

# Every candidate row with its pool and the reasons it may be excluded. The automation test
# and the ownership test are plain SQL over the row, evaluated before any LIMIT.
_CLASSIFIED = """
    SELECT m.id, m.instance_key, m.visibility_scope, m.audience_key, m.source_type,
           m.content, m.session_key, m.user_id, m.source_id, s.trust_class, m.assertion_id,
           m.created_at, m.updated_at, m.occurred_at,
           CASE
             WHEN m.source_type IN ('summary', 'flush') AND m.assertion_id IS NULL
               THEN 'activity'
             WHEN m.assertion_id IS NULL THEN 'legacy'
             WHEN NOT {told} THEN 'not_approved'
             WHEN m.source_type = 'fact' AND s.trust_class = ANY({human}) THEN 'direct_facts'
             WHEN m.source_type = 'fact' THEN 'other_facts'
             WHEN EXISTS (
                 SELECT 1
                   FROM agent_memory_assertion_evidence e
                   JOIN agent_memory_sources es
                     ON es.instance_key = e.instance_key AND es.id = e.source_id
                  WHERE e.instance_key = m.instance_key
                    AND e.assertion_id = m.assertion_id
                    AND e.stance = 'supports'
                    AND es.trust_class = ANY({human})) THEN 'dreams'
             ELSE 'ungrounded_dream'
           END AS pool,
           (EXISTS (SELECT 1 FROM unnest({prefixes}::text[]) AS p(prefix)
                     WHERE starts_with(lower(m.session_key), p.prefix))
            OR coalesce(s.trust_class = ANY({non_human}), false)) AS automation,
           CASE m.visibility_scope
             WHEN 'private' THEN m.user_id IS NOT NULL AND m.audience_key = m.user_id
             WHEN 'channel' THEN m.audience_key IN (m.channel_thread_key, m.group_room_id)
             ELSE m.audience_key = m.instance_key
                  AND (m.assertion_id IS NOT NULL OR m.user_id IS NOT NULL
                       OR m.session_key IS NOT NULL OR m.group_room_id IS NOT NULL
                       OR m.channel_thread_key IS NOT NULL)
           END AS owned
      FROM agent_memories m
      LEFT JOIN agent_memory_sources s
        ON s.instance_key = m.instance_key AND s.id = m.source_id
      LEFT JOIN agent_memory_assertions a
        ON a.instance_key = m.instance_key AND a.id = m.assertion_id
     WHERE m.memory_state = 'active'
       AND m.source_type IN ('summary', 'flush', 'fact', 'dream')
       AND {where}
"""

# Eligible rows with the per-session cap and the per-pool recency window applied.
_WINDOWED = """
    WITH classified AS ({classified}),
    eligible AS (
        SELECT c.*,
               CASE WHEN c.pool = 'activity' THEN row_number() OVER (
                   PARTITION BY c.instance_key, c.visibility_scope, c.audience_key, c.pool,
                                coalesce(c.session_key, '')
                   ORDER BY c.updated_at DESC, c.id) END AS session_rank
          FROM classified c
         WHERE c.pool = ANY({pools}) AND NOT c.automation AND c.owned
    ),
    capped AS (
        SELECT e.*, row_number() OVER (
                   PARTITION BY e.instance_key, e.visibility_scope, e.audience_key, e.pool
                   ORDER BY e.updated_at DESC, e.id) AS recency_rank
          FROM eligible e
         WHERE e.session_rank IS NULL OR e.session_rank <= {session_cap}
    )
"""

_COUNTS = """
    WITH classified AS ({classified})
    SELECT c.instance_key, c.visibility_scope, c.audience_key,
           count(*) FILTER (WHERE c.automation) AS automation,
           count(*) FILTER (WHERE NOT c.automation AND NOT c.owned
                              AND c.pool = ANY({pools})) AS quarantined,
           count(*) FILTER (WHERE NOT c.automation AND c.pool = 'legacy') AS legacy
      FROM classified c
     GROUP BY 1, 2, 3
"""


def _where(instance_key: str | None, partition: Partition | None) -> sql.Composable:
    clauses: list[sql.Composable] = []
    if partition is not None:
        clauses.append(sql.SQL(
            "m.instance_key = {} AND m.visibility_scope = {} AND m.audience_key = {}").format(
            sql.Literal(partition.instance_key), sql.Literal(partition.kind),
            sql.Literal(partition.key)))
    elif instance_key is not None:
        clauses.append(sql.SQL("m.instance_key = {}").format(sql.Literal(instance_key)))
    return sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("true")


def _classified(settings: Settings, where: sql.Composable) -> sql.Composed:
    prefixes = [p.lower() for p in settings.automation_session_prefixes if p]
    return sql.SQL(_CLASSIFIED).format(
        told=TOLD, human=sql.Literal(list(HUMAN_TRUST)),
        non_human=sql.Literal(list(NON_HUMAN_TRUST)),
        prefixes=sql.Literal(prefixes), where=where)


def _windowed(settings: Settings, where: sql.Composable) -> sql.Composed:
    return sql.SQL(_WINDOWED).format(
        classified=_classified(settings, where), pools=sql.Literal(list(POOLS)),
        session_cap=sql.Literal(settings.dream_per_session_activity_cap))


def _exclusion_counts(conn, settings: Settings, where: sql.Composable) -> dict[tuple, tuple]:
    query = sql.SQL(_COUNTS).format(classified=_classified(settings, where),
                                    pools=sql.Literal(list(POOLS)))
    return {(r[0], r[1], r[2]): r[3:] for r in conn.execute(query)}


# --- public --------------------------------------------------------------------------------


def eligible_partitions(
    conn: psycopg.Connection,
    settings: Settings,
    *,
    instance_key: str | None = None,
    since: datetime | None = None,
) -> list[PartitionSummary]:
    """Partitions with at least ``dream_min_inputs`` eligible inputs (inside the recency
    window), newest input first; with ``since``, only those with an input newer than it."""
    where = _where(instance_key, None)
    query = sql.SQL("""
        {windowed}
        SELECT instance_key, visibility_scope, audience_key,
               count(*) FILTER (WHERE pool = 'direct_facts'),
               count(*) FILTER (WHERE pool = 'activity'),
               count(*) FILTER (WHERE pool = 'other_facts'),
               count(*) FILTER (WHERE pool = 'dreams'),
               max(updated_at)
          FROM capped
         WHERE recency_rank <= {limit}
         GROUP BY 1, 2, 3
        HAVING count(*) >= {minimum} AND ({since}::timestamptz IS NULL
                                          OR max(updated_at) > {since}::timestamptz)
         ORDER BY max(updated_at) DESC, 1, 2, 3
    """).format(windowed=_windowed(settings, where),
                limit=sql.Literal(settings.dream_candidate_limit),
                minimum=sql.Literal(settings.dream_min_inputs), since=sql.Literal(since))
    rows = conn.execute(query).fetchall()
    excluded = _exclusion_counts(conn, settings, where) if rows else {}
    out = []
    for instance, kind, key, direct, activity, other, dreams, newest in rows:
        automation, quarantined, _legacy = excluded.get((instance, kind, key), (0, 0, 0))
        counts = {"direct_facts": direct, "activity": activity, "other_facts": other,
                  "dreams": dreams}
        out.append(PartitionSummary(Partition(instance, kind, key), counts,
                                    sum(counts.values()), newest, quarantined, automation))
    return out


def select_inputs(conn: psycopg.Connection, settings: Settings,
                  partition: Partition) -> DreamInputs:
    """The balanced inputs of one partition, with the counts the dream row records."""
    where = _where(None, partition)
    query = sql.SQL("""
        {windowed}
        SELECT id, pool, source_type, content, session_key, user_id, source_id, trust_class,
               assertion_id, created_at, updated_at, session_rank, occurred_at
          FROM capped
         WHERE recency_rank <= {limit}
         ORDER BY updated_at DESC, id
    """).format(windowed=_windowed(settings, where),
                limit=sql.Literal(settings.dream_candidate_limit))
    candidates: list[DreamInput] = []
    for row in conn.execute(query):
        candidates.append(DreamInput(memory_id=row[0], pool=row[1], source_type=row[2],
                                     content=row[3], session_key=row[4], user_id=row[5],
                                     source_id=row[6], trust_class=row[7],
                                     assertion_id=row[8], created_at=row[9],
                                     updated_at=row[10], occurred_at=row[12]))
    over_cap = conn.execute(sql.SQL("""
        {windowed}
        SELECT count(*) FROM eligible WHERE session_rank > {cap}
    """).format(windowed=_windowed(settings, where),
                cap=sql.Literal(settings.dream_per_session_activity_cap))).fetchone()[0]
    automation, quarantined, legacy = _exclusion_counts(conn, settings, where).get(
        (partition.instance_key, partition.kind, partition.key), (0, 0, 0))
    rows = balance(candidates, settings.dream_max_inputs, settings.dream_fact_quota_ratio)
    selected = {pool: sum(1 for r in rows if r.pool == pool) for pool in POOLS}
    counted = {pool: sum(1 for r in candidates if r.pool == pool) for pool in POOLS}
    return DreamInputs(partition, rows, selected, counted, quarantined=quarantined,
                       excluded_automation=automation, excluded_legacy=legacy,
                       over_session_cap=over_cap)


def balance(candidates: list[DreamInput], limit: int, fact_ratio: float) -> list[DreamInput]:
    """Pick at most ``limit`` inputs from recency-ordered candidates: the fact quota from
    direct human facts, then activity round-robin over sessions (most recently active
    session first), then the remaining facts and activity, then prior dreams. The result is
    in chronological order (how a conversation reads)."""
    pools: dict[str, list[DreamInput]] = {p: [] for p in POOLS}
    for row in candidates:
        pools[row.pool].append(row)
    chosen: list[DreamInput] = []
    taken: set[UUID] = set()

    def take(row: DreamInput) -> bool:
        if len(chosen) >= limit or row.memory_id in taken:
            return False
        chosen.append(row)
        taken.add(row.memory_id)
        return True

    quota = min(limit, math.ceil(limit * fact_ratio))
    for row in pools["direct_facts"][:quota]:
        take(row)
    sessions: OrderedDict[str, list[DreamInput]] = OrderedDict()
    for row in pools["activity"]:
        sessions.setdefault(row.session_key or "", []).append(row)
    queues = [list(rows) for rows in sessions.values()]
    while len(chosen) < limit and any(queues):
        for queue in queues:
            if queue:
                take(queue.pop(0))
    for row in [*pools["direct_facts"], *pools["other_facts"], *pools["activity"],
                *pools["dreams"]]:
        if len(chosen) >= limit:
            break
        take(row)
    return sorted(chosen, key=lambda r: (r.created_at, str(r.memory_id)))
