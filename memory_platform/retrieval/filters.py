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

from memory_platform.access import AccessContext, Binder, literal, visibility_predicate

ASSERTION_JOIN = sql.SQL(
    "LEFT JOIN agent_memory_assertions a"
    " ON a.instance_key = m.instance_key AND a.id = m.assertion_id"
)

# An assertion an agent may be told (alias ``a``): active, approved by policy or a person,
# and valid now. Assertion search uses it as is; a memory needs it of its assertion, if any.
CURRENT_APPROVED_ASSERTION = sql.SQL(
    "(a.status = 'active'"
    " AND a.review_state IN ('policy_approved', 'human_approved')"
    " AND (a.valid_from IS NULL OR a.valid_from <= now())"
    " AND (a.valid_to IS NULL OR a.valid_to > now()))"
)
_APPROVED_ASSERTION = sql.SQL("(m.assertion_id IS NULL OR {})").format(CURRENT_APPROVED_ASSERTION)


def recallable_memory(ctx: AccessContext, bind: Binder = literal) -> sql.Composed:
    """Condition over ``m`` (agent_memories) and ``a`` (its assertion, left-joined)."""
    return sql.SQL("{} AND m.memory_state = 'active' AND {}").format(
        visibility_predicate(ctx, "m", bind), _APPROVED_ASSERTION
    )
