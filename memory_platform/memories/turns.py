"""Conversation turns: a memory written into a session, with an event time, is a turn.

An agent that stores a conversation turn by turn (``POST /api/v1/memory`` with
``context.sessionKey`` and ``occurredAt``) writes short utterances whose meaning often lives
in the turn before: "Rex! After my grandpa's dog." answers "What did you end up naming the
puppy?". So a turn links to the turn before it in the same session and audience
(``previous_memory_id``: search lets neighbouring turns lend each other score), and its first
chunk carries a *context*: the session's date in words and the end of the two turns before,
indexed in a second tsvector (docs/architecture.md, "Conversational retrieval"). Search
returns the single turn all the same. The context is not embedded with the turn: on the
conversational benchmark that gained 0.01 recall@10 for 2.5 times the embedding work per
turn (docs/benchmarks.md).

The context never crosses an audience: the turns before are looked up in the new turn's own
audience, so no text of another audience is copied into a row. When one of them is deleted,
migration 0017's trigger removes the copy.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

import psycopg

from memory_platform.access import AccessContext, Audience

CONTEXT_TURNS = 2  # the turns before a turn that make its context
CONTEXT_MAX_CHARS = 1000  # of their text: its end, where the question usually stands
TURN_MEMORY_CLASS = "explicit"  # what an agent stores (API, MCP); derived memories are not turns

_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")
_MONTHS_DE = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
              "September", "Oktober", "November", "Dezember")

_PREVIOUS_TURNS = """
    SELECT id, content
      FROM agent_memories
     WHERE instance_key = %s AND session_key = %s
       AND visibility_scope = %s AND audience_key = %s
       AND occurred_at <= %s AND memory_state = 'active'
       AND source_type = 'fact' AND metadata ->> 'memoryClass' = %s
     ORDER BY occurred_at DESC, created_at DESC
     LIMIT %s
"""


@dataclass(frozen=True)
class TurnContext:
    """What a new turn takes from its conversation: the turn before it (None for a session's
    first turn) and the context text its first chunk carries."""

    previous_memory_id: uuid.UUID | None
    text: str


def is_turn(ctx: AccessContext, source_type: str, memory_class: str,
            occurred_at: datetime | None) -> bool:
    """Whether a write is a conversation turn: an agent's own memory (not a flush, summary or
    extracted fact), written in a session, with an event time that orders it."""
    return (ctx.session_key is not None and occurred_at is not None
            and source_type == "fact" and memory_class == TURN_MEMORY_CLASS)


def turn_context(conn: psycopg.Connection, ctx: AccessContext, audience: Audience,
                 occurred_at: datetime) -> TurnContext:
    """The context of a turn written at ``occurred_at`` into ``ctx``'s session and
    ``audience``: the day, and the last :data:`CONTEXT_TURNS` turns before it (one index
    look-up; a turn written late still finds the turns before it). Two turns, because an
    answer often follows a question that follows the news ("Back from Barcelona!" - "Who
    did you go with?" - "Caleb. The best part was the sea.")."""
    rows = conn.execute(_PREVIOUS_TURNS, (ctx.instance_key, ctx.session_key, audience.kind,
                                          audience.key, occurred_at, TURN_MEMORY_CLASS,
                                          CONTEXT_TURNS)).fetchall()
    date = date_words(occurred_at)
    if not rows:
        return TurnContext(None, date)
    before = "\n".join(content for _, content in reversed(rows))
    return TurnContext(rows[0][0], f"{date}\n{_tail(before, CONTEXT_MAX_CHARS)}")


def date_words(moment: datetime) -> str:
    """The day of ``moment`` as people write it, in English and German ("8 May 2023 ·
    8. Mai 2023"), so a question naming the month or the year matches its turns."""
    month = moment.month - 1
    return (f"{moment.day} {_MONTHS_EN[month]} {moment.year} · "
            f"{moment.day}. {_MONTHS_DE[month]} {moment.year}")


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text``, starting at a word."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < len(tail) - 1 else tail

