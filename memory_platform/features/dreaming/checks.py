"""Invariant checks of one audience partition, in SQL (the Dagster asset checks call these;
each check answers an outcome, the orchestrator decides which asset it guards).

The database already refuses most violations (the verbatim-excerpt trigger, composite foreign
keys that include the audience); these checks re-verify the *result* of a Dream from the
outside, so a future migration, a manual repair or a bug in a guard cannot silently break
invariants 1 and 3:

* every active assertion of the partition cites at least one supporting excerpt that occurs
  verbatim in a source of the same instance and audience;
* no evidence row, and no projection, links the partition to another audience or instance;
* no active recall projection exists for an assertion that is not active and approved.

Links are joined by id alone (not by the composite keys), so a cross-boundary row is found
rather than filtered away by the join.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from memory_platform.features.dreaming.partitions import Partition

__all__ = ["CHECKS", "CheckOutcome", "cross_boundary_links", "inactive_projections",
           "run_check", "unsupported_active_assertions"]

EXAMPLE_LIMIT = 20


@dataclass(frozen=True)
class CheckOutcome:
    """One check over one partition: ``violations`` counts every offending row,
    ``examples`` shows at most ``EXAMPLE_LIMIT`` of them."""

    name: str
    passed: bool
    checked: int
    violations: int
    description: str
    examples: list[dict[str, Any]] = field(default_factory=list)


def _params(partition: Partition) -> dict[str, Any]:
    return {"instance": partition.instance_key, "kind": partition.kind,
            "key": partition.key, "limit": EXAMPLE_LIMIT}


def _rows(conn: psycopg.Connection, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, params).fetchall()


def _jsonable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: (v if isinstance(v, (int, float, bool)) or v is None else str(v))
             for k, v in row.items() if k not in ("total", "checked")} for row in rows]


def _outcome(conn: psycopg.Connection, partition: Partition, name: str, violations: str,
             checked_count: str, description: str) -> CheckOutcome:
    """Run ``violations`` (example rows, each carrying the ``checked`` and ``total``
    counts); without a violation, ``checked_count`` counts what was checked.
    ``description`` is formatted with ``checked`` and ``total``."""
    params = _params(partition)
    rows = _rows(conn, violations, params)
    checked = rows[0]["checked"] if rows else conn.execute(checked_count, params).fetchone()[0]
    total = rows[0]["total"] if rows else 0
    return CheckOutcome(name, total == 0, checked, total,
                        description.format(checked=checked, total=total), _jsonable(rows))


_UNSUPPORTED = """
    WITH active AS (
        SELECT a.id, a.instance_key, a.audience_kind, a.audience_key, a.assertion_text
          FROM agent_memory_assertions a
         WHERE a.instance_key = %(instance)s
           AND a.audience_kind = %(kind)s
           AND a.audience_key = %(key)s
           AND a.status = 'active'
    ),
    unsupported AS (
        SELECT a.id, a.assertion_text
          FROM active a
         WHERE NOT EXISTS (
                 SELECT 1
                   FROM agent_memory_assertion_evidence e
                   JOIN agent_memory_sources s ON s.id = e.source_id
                  WHERE e.assertion_id = a.id
                    AND e.stance = 'supports'
                    AND e.instance_key = a.instance_key
                    AND s.instance_key = a.instance_key
                    AND s.audience_kind = a.audience_kind
                    AND s.audience_key = a.audience_key
                    AND strpos(s.content, e.excerpt) > 0)
    )
    SELECT u.id AS assertion_id, left(u.assertion_text, 200) AS text,
           (SELECT count(*) FROM active) AS checked,
           (SELECT count(*) FROM unsupported) AS total
      FROM unsupported u
     ORDER BY u.id
     LIMIT %(limit)s
"""


def unsupported_active_assertions(conn: psycopg.Connection,
                                  partition: Partition) -> CheckOutcome:
    """Invariant 3: active assertions without a verbatim, same-audience supporting excerpt."""
    return _outcome(
        conn, partition, "active_assertions_cite_verbatim_evidence", _UNSUPPORTED,
        "SELECT count(*) FROM agent_memory_assertions WHERE instance_key = %(instance)s"
        " AND audience_kind = %(kind)s AND audience_key = %(key)s AND status = 'active'",
        "{checked} active assertion(s) checked; {total} without a supporting excerpt that "
        "occurs verbatim in a source of the same audience")




_CROSS = """
    WITH part_assertions AS (
        SELECT a.id, a.instance_key, a.audience_kind, a.audience_key
          FROM agent_memory_assertions a
         WHERE a.instance_key = %(instance)s AND a.audience_kind = %(kind)s
           AND a.audience_key = %(key)s
    ),
    part_sources AS (
        SELECT s.id, s.instance_key
          FROM agent_memory_sources s
         WHERE s.instance_key = %(instance)s AND s.audience_kind = %(kind)s
           AND s.audience_key = %(key)s
    ),
    evidence_ids AS (
        SELECT e.id FROM part_assertions a
          JOIN agent_memory_assertion_evidence e ON e.assertion_id = a.id
        UNION
        SELECT e.id FROM part_sources s
          JOIN agent_memory_assertion_evidence e
            ON e.instance_key = s.instance_key AND e.source_id = s.id
    ),
    projection_ids AS (
        SELECT m.id FROM agent_memories m
         WHERE m.instance_key = %(instance)s AND m.visibility_scope = %(kind)s
           AND m.audience_key = %(key)s AND m.assertion_id IS NOT NULL
        UNION
        SELECT m.id FROM part_assertions a
          JOIN agent_memories m ON m.instance_key = a.instance_key AND m.assertion_id = a.id
    ),
    links AS (
        SELECT 'evidence' AS link, e.id AS row_id, e.assertion_id, e.source_id,
               a.instance_key AS assertion_instance, a.audience_kind AS assertion_kind,
               a.audience_key AS assertion_key,
               s.instance_key AS other_instance, s.audience_kind AS other_kind,
               s.audience_key AS other_key,
               e.instance_key AS link_instance, e.audience_kind AS link_kind,
               e.audience_key AS link_key
          FROM evidence_ids i
          JOIN agent_memory_assertion_evidence e ON e.id = i.id
          JOIN agent_memory_assertions a ON a.id = e.assertion_id
          JOIN agent_memory_sources s ON s.id = e.source_id
        UNION ALL
        SELECT 'projection', m.id, m.assertion_id, NULL::uuid,
               a.instance_key, a.audience_kind, a.audience_key,
               m.instance_key, m.visibility_scope, m.audience_key,
               m.instance_key, m.visibility_scope, m.audience_key
          FROM projection_ids i
          JOIN agent_memories m ON m.id = i.id
          JOIN agent_memory_assertions a ON a.id = m.assertion_id
    ),
    crossing AS (
        SELECT * FROM links
         WHERE (other_instance, other_kind, other_key)
                   IS DISTINCT FROM (assertion_instance, assertion_kind, assertion_key)
            OR (link_instance, link_kind, link_key)
                   IS DISTINCT FROM (assertion_instance, assertion_kind, assertion_key)
    )
    SELECT link, row_id, assertion_id, source_id,
           assertion_instance || '/' || assertion_kind || '/' || assertion_key
               AS assertion_audience,
           other_instance || '/' || other_kind || '/' || other_key AS linked_audience,
           (SELECT count(*) FROM links) AS checked,
           (SELECT count(*) FROM crossing) AS total
      FROM crossing
     ORDER BY link, row_id
     LIMIT %(limit)s
"""


def cross_boundary_links(conn: psycopg.Connection, partition: Partition) -> CheckOutcome:
    """Invariant 1: evidence and projections touching the partition whose assertion, source
    or projection lives in another audience or instance."""
    return _outcome(
        conn, partition, "evidence_stays_in_audience", _CROSS,
        "SELECT (SELECT count(*) FROM agent_memory_assertion_evidence e"
        " WHERE e.instance_key = %(instance)s AND e.audience_kind = %(kind)s"
        " AND e.audience_key = %(key)s) + (SELECT count(*) FROM agent_memories m"
        " WHERE m.instance_key = %(instance)s AND m.visibility_scope = %(kind)s"
        " AND m.audience_key = %(key)s AND m.assertion_id IS NOT NULL)",
        "{checked} evidence/projection link(s) checked; {total} cross an audience or "
        "instance boundary")


_INACTIVE = """
    WITH projections AS (
        SELECT m.id AS memory_id, m.assertion_id, a.status, a.review_state
          FROM agent_memories m
          JOIN agent_memory_assertions a
            ON a.instance_key = m.instance_key AND a.id = m.assertion_id
         WHERE m.instance_key = %(instance)s
           AND m.visibility_scope = %(kind)s
           AND m.audience_key = %(key)s
           AND m.memory_state = 'active'
           AND m.source_id IS NULL
    ),
    bad AS (
        SELECT * FROM projections
         -- written out on purpose, not ledger.recall: a check restates the rule it guards
         WHERE NOT (status = 'active'
                    AND review_state IN ('policy_approved', 'human_approved'))
    )
    SELECT memory_id, assertion_id, status, review_state,
           (SELECT count(*) FROM projections) AS checked,
           (SELECT count(*) FROM bad) AS total
      FROM bad
     ORDER BY memory_id
     LIMIT %(limit)s
"""


def inactive_projections(conn: psycopg.Connection, partition: Partition) -> CheckOutcome:
    """Active recall projections (``agent_memories`` rows of an assertion, no source) whose
    assertion is not active and approved: recall would show a fact the ledger withdrew."""
    return _outcome(
        conn, partition, "no_projection_of_inactive_assertion", _INACTIVE,
        "SELECT count(*) FROM agent_memories WHERE instance_key = %(instance)s"
        " AND visibility_scope = %(kind)s AND audience_key = %(key)s"
        " AND memory_state = 'active' AND source_id IS NULL AND assertion_id IS NOT NULL",
        "{checked} active projection(s) checked; {total} project an assertion that is not "
        "active and approved")


CheckFunction = Callable[[psycopg.Connection, Partition], CheckOutcome]

# check name -> the function; the orchestrator decides what each check guards
CHECKS: dict[str, CheckFunction] = {
    "active_assertions_cite_verbatim_evidence": unsupported_active_assertions,
    "evidence_stays_in_audience": cross_boundary_links,
    "no_projection_of_inactive_assertion": inactive_projections,
}


def run_check(conn: psycopg.Connection, partition: Partition, name: str) -> CheckOutcome:
    """The outcome of the check ``name`` (a key of :data:`CHECKS`) over ``partition``."""
    return CHECKS[name](conn, partition)
