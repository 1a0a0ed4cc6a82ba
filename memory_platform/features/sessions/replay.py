"""What a runtime sends the model for a session (specification: a session's context is its
latest compaction summary plus the recent verbatim turns): the session's assembly
(``assembly.py``) cut to a token budget.

The summaries standing in the assembly come first, in order (they stand for the compacted
past); then the newest raw turns that still fit, in the order they were said. A turn is
never cut in half: the first one that does not fit ends the replay, and everything older is
counted as omitted (reachable through ``memory_expand`` / the summaries' links). When the
summaries alone exceed the budget, the newest summaries are kept.

Who may replay is decided before this runs, as for every session read: the caller's context
names the session, and a user key must take part in it (``access.resolve_context``: 403
``foreign_session``); a runtime key may replay any session of its instance.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

import psycopg

from memory_platform.features.sessions.tokens import estimate_tokens
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext

BUDGET_MIN = 64
BUDGET_MAX = 1_000_000

_ASSEMBLY = """
    SELECT i.position, i.item_kind, coalesce(m.id, s.id), coalesce(m.content, s.content),
           m.role, m.user_id, m.seq, s.depth, s.first_seq, s.last_seq,
           coalesce(m.created_at, s.created_at)
      FROM agent_context_items i
      LEFT JOIN agent_context_messages m
        ON m.instance_key = i.instance_key AND m.session_key = i.session_key
       AND m.id = i.message_id
      LEFT JOIN agent_context_summaries s
        ON s.instance_key = i.instance_key AND s.session_key = i.session_key
       AND s.id = i.summary_id
     WHERE i.instance_key = %s AND i.session_key = %s
     ORDER BY i.position
"""


@dataclass(frozen=True)
class ReplayItem:
    kind: str                       # 'summary' | 'message'
    id: uuid.UUID
    content: str
    tokens: int
    created_at: datetime
    role: str | None = None         # messages
    user_id: str | None = None
    seq: int | None = None
    depth: int | None = None        # summaries
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def node_id(self) -> str:
        return f"{self.kind}:{self.id}"


@dataclass
class Replay:
    session_key: str
    budget_tokens: int
    summaries: list[ReplayItem] = field(default_factory=list)
    turns: list[ReplayItem] = field(default_factory=list)
    omitted_turns: int = 0
    omitted_summaries: int = 0

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in (*self.summaries, *self.turns))


def replay(conn: psycopg.Connection, settings: Settings, ctx: AccessContext, *,
           budget_tokens: int | None = None) -> Replay:
    """The replay of the session ``ctx`` names within ``budget_tokens`` (default: the
    session context budget, ``session_context_budget_tokens``). Read-only."""
    if not ctx.session_key:
        raise InvalidInput("name the session to replay (sessionKey)",
                           details={"field": "sessionKey"})
    budget = budget_tokens if budget_tokens is not None \
        else settings.session_context_budget_tokens
    if not BUDGET_MIN <= budget <= BUDGET_MAX:
        raise InvalidInput(f"budgetTokens must be {BUDGET_MIN}-{BUDGET_MAX}",
                           details={"field": "budgetTokens"})
    items = [_item(row) for row in
             conn.execute(_ASSEMBLY, (ctx.instance_key, ctx.session_key)).fetchall()]
    result = Replay(ctx.session_key, budget)
    summaries = [i for i in items if i.kind == "summary"]
    turns = [i for i in items if i.kind == "message"]
    result.summaries, room = _newest_within(summaries, budget)
    result.turns, _ = _newest_within(turns, room)
    result.omitted_summaries = len(summaries) - len(result.summaries)
    result.omitted_turns = len(turns) - len(result.turns)
    return result


def _newest_within(items: list[ReplayItem], room: int) -> tuple[list[ReplayItem], int]:
    """The newest whole ``items`` that fit ``room`` tokens, in their order (the first one
    from the end that does not fit ends it), and the room left."""
    kept: list[ReplayItem] = []
    for item in reversed(items):
        if item.tokens > room:
            break
        kept.append(item)
        room -= item.tokens
    return kept[::-1], room


def _item(row: tuple) -> ReplayItem:
    (_, kind, ident, content, role, user_id, seq, depth, first_seq, last_seq,
     created_at) = row
    return ReplayItem(kind, ident, content, estimate_tokens(content), created_at, role=role,
                      user_id=user_id, seq=seq, depth=depth, first_seq=first_seq,
                      last_seq=last_seq)
