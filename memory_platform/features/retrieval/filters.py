"""The recall filter every memory read path applies inside SQL.

A memory row is recallable when the caller may see it (access.visibility_predicate), it is
``active``, and, if it is backed by a canonical assertion, that assertion is active,
approved (by policy or a human) and currently valid. Candidate, conflicted, superseded,
rejected, expired and tombstoned assertions never reach an agent.

The query must join ``agent_memory_assertions`` as ``a`` with
``LEFT JOIN agent_memory_assertions a ON a.instance_key = m.instance_key AND a.id = m.assertion_id``
(:data:`ASSERTION_JOIN`).
"""

from __future__ import annotations

from psycopg import sql

from memory_platform.shared.access import AccessContext, Binder, literal, visibility_predicate
from memory_platform.shared.ledger.recall import TOLD

ASSERTION_JOIN = sql.SQL(
    "LEFT JOIN agent_memory_assertions a"
    " ON a.instance_key = m.instance_key AND a.id = m.assertion_id"
)

# Assertion search uses the rule as is; a memory needs it of its assertion, if any.
CURRENT_APPROVED_ASSERTION = TOLD
_APPROVED_ASSERTION = sql.SQL("(m.assertion_id IS NULL OR {})").format(CURRENT_APPROVED_ASSERTION)


def recallable_memory(ctx: AccessContext, bind: Binder = literal) -> sql.Composed:
    """Condition over ``m`` (agent_memories) and ``a`` (its assertion, left-joined)."""
    return sql.SQL("{} AND m.memory_state = 'active' AND {}").format(
        visibility_predicate(ctx, "m", bind), _APPROVED_ASSERTION
    )
