"""The consolidation invariant of one partition, in SQL: no mutation without an audit row.

Consolidation's mutations leave marks: a ``supersede`` review by the curator (assertions
superseded or folded as duplicates), a conflict detected by consolidation, an entity
quarantined with ``mergedIntoEntityId``. Each such row must have an audit row naming it
(``agent_memory_v2_cleanup_audit.target_id``). (Claims and edges superseded by pruning or a
merge carry no mark of their own; their audit rows are written by the same code path, tested
in tests/consolidation.) Joined by id, not by the composite keys.
"""

from __future__ import annotations

from typing import Any

import psycopg

_UNAUDITED = """
    WITH marked AS (
        SELECT 'agent_memory_assertions' AS target_table, a.id::text AS target_id
          FROM agent_memory_assertions a
         WHERE a.instance_key = %(instance)s AND a.audience_kind = %(kind)s
           AND a.audience_key = %(key)s
           AND EXISTS (SELECT 1 FROM agent_memory_assertion_reviews r
                        WHERE r.assertion_id = a.id AND r.decision = 'supersede'
                          AND r.reviewer_kind = 'curator')
        UNION ALL
        SELECT 'agent_memory_assertion_conflicts', c.id::text
          FROM agent_memory_assertion_conflicts c
         WHERE c.instance_key = %(instance)s AND c.audience_kind = %(kind)s
           AND c.audience_key = %(key)s AND c.detected_by = 'consolidation'
        UNION ALL
        SELECT 'agent_knowledge_entities', e.id::text
          FROM agent_knowledge_entities e
         WHERE e.instance_key = %(instance)s AND e.visibility_scope = %(kind)s
           AND e.audience_key = %(key)s AND e.metadata ? 'mergedIntoEntityId')
    SELECT m.target_table, m.target_id,
           EXISTS (SELECT 1 FROM agent_memory_v2_cleanup_audit au
                    WHERE au.target_id = m.target_id) AS audited
      FROM marked m
"""


def unaudited_mutations(conn: psycopg.Connection, instance_key: str, audience_kind: str,
                        audience_key: str) -> dict[str, Any]:
    """``passed``, ``checked`` (marked rows), ``violations`` and up to 20 examples."""
    rows = conn.execute(_UNAUDITED, {"instance": instance_key, "kind": audience_kind,
                                     "key": audience_key}).fetchall()
    missing = [{"table": table, "id": ident} for table, ident, audited in rows if not audited]
    return {"passed": not missing, "checked": len(rows), "violations": len(missing),
            "examples": missing[:20]}
