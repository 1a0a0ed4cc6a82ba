"""Which assertions an agent may be told: the one statement of the rule.

An assertion may be told when it is ``active``, approved (by policy or a person) and valid
now. Candidate, conflicted, superseded, rejected, expired and tombstoned assertions never
reach an agent. SQL readers use :data:`TOLD` (alias ``a``); code holding a row in Python
uses :func:`is_approved_active` (the validity window is the database clock's, so only SQL
checks it).
"""

from __future__ import annotations

from psycopg import sql

APPROVED_REVIEW_STATES = ("policy_approved", "human_approved")

# Active and approved, over ``a`` (agent_memory_assertions): the slot a new assertion competes
# with, whatever its validity window.
APPROVED_ACTIVE = sql.SQL(
    "(a.status = 'active' AND a.review_state IN ('policy_approved', 'human_approved'))"
)
# ... and valid now: what an agent may be told.
TOLD = sql.SQL(
    "(a.status = 'active'"
    " AND a.review_state IN ('policy_approved', 'human_approved')"
    " AND (a.valid_from IS NULL OR a.valid_from <= now())"
    " AND (a.valid_to IS NULL OR a.valid_to > now()))"
)


def is_approved_active(status: str, review_state: str) -> bool:
    return status == "active" and review_state in APPROVED_REVIEW_STATES
