"""Conversation turns: a memory written into a session, with an event time, is a turn.

An agent that stores a conversation turn by turn (``POST /api/v1/memory`` with
``context.sessionKey`` and ``occurredAt``) writes short utterances whose meaning often lives
in the turn before: "Rex! After my grandpa's dog." answers "What did you end up naming the
puppy?". So a turn links to the turn before it in the same session and audience
(``previous_memory_id``: search lets neighbouring turns lend each other score), and its first
chunk carries a *context*: the session's date in words and the end of the two turns before,
indexed in a second tsvector (docs/architecture.md, "Conversational retrieval"), and a
*context vector*: the turn embedded together with the turn before it (:func:`context_passage`),
which search mixes into the turn's similarity. Search returns the single turn all the same.
On LoCoMo's real conversations the context vector is the largest single lever of turn search
(docs/benchmarks.md, "LoCoMo"); only the turn *before* is embedded, so a write never
re-embeds an earlier row, and the turn after still counts through its own context vector and
the neighbour smoothing of search.

The context never crosses an audience: the turns before are looked up in the new turn's own
audience, so no text of another audience is copied into a row. When one of them is deleted,
migration 0017's trigger removes the copy (and, since 0032, the context vector made from it)
from the turns the links lead to from it. Where they do not lead (a turn written late is
copied into the context of a later turn that links to another one), the context names the
turns it copies (``context_memory_ids``, :func:`off_the_links`) and 0042's trigger clears it
by them. Only such contexts name them: an index entry on every turn cost its write a fifth to
a third more PostgreSQL CPU, for a case that is rare.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any

import psycopg

from memory_platform.shared.access import AccessContext, Audience

CONTEXT_TURNS = 2  # the turns before a turn that make its context
CONTEXT_MAX_CHARS = 1000  # of their text: its end, where the question usually stands
TURN_MEMORY_CLASS = "explicit"  # what an agent stores (API, MCP); derived memories are not turns
# Turns a new turn follows: an agent's, and an imported conversation's (memories/bulk/turns.py).
TURN_MEMORY_CLASSES = (TURN_MEMORY_CLASS, "import")
# A session item recalled as a turn (sessions/turn_recall.py): a row of its own source type,
# which projects no assertion, of this memory class.
SESSION_TURN_SOURCE = "message"
SESSION_TURN_CLASS = "session"

_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")
_MONTHS_DE = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
              "September", "Oktober", "November", "Dezember")

_PREVIOUS_TURNS = """
    SELECT id, content, previous_memory_id
      FROM agent_memories
     WHERE instance_key = %s AND session_key = %s
       AND visibility_scope = %s AND audience_key = %s
       AND occurred_at <= %s AND memory_state = 'active'
       AND ((source_type = 'fact' AND metadata ->> 'memoryClass' = ANY(%s))
            OR source_type = 'message')
       AND NOT id = ANY(%s::uuid[])
     ORDER BY occurred_at DESC, created_at DESC
     LIMIT %s
"""


@dataclass(frozen=True)
class TurnContext:
    """What a new turn takes from its conversation: the turn before it (None for a session's
    first turn), the context text its first chunk carries, the text of the turn before
    (embedded with the new turn: :func:`context_passage`) and the ids of the turns the
    context copies where the links do not lead to it (:func:`off_the_links`)."""

    previous_memory_id: uuid.UUID | None
    text: str
    previous_text: str | None = None
    copied: tuple[uuid.UUID, ...] = ()

    def passage(self, turn: str) -> str | None:
        """What the context vector of ``turn`` embeds (None for a session's first turn)."""
        return None if self.previous_text is None else context_passage(self.previous_text,
                                                                       turn)


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
    assert ctx.session_key is not None
    window = previous_turns(conn, ctx.instance_key, ctx.session_key, audience.kind,
                            audience.key, occurred_at)[::-1]  # oldest first
    text = context_text(occurred_at, [content for _, content, _ in window])
    if not window:
        return TurnContext(None, text)
    previous_id, previous_text, _ = window[-1]
    return TurnContext(previous_id, text, previous_text, off_the_links(window))


def previous_turns(conn: psycopg.Connection, instance_key: str, session_key: str,
                   audience_kind: str, audience_key: str, occurred_at: datetime,
                   exclude: list[uuid.UUID] | None = None
                   ) -> list[tuple[uuid.UUID, str, uuid.UUID | None]]:
    """The last :data:`CONTEXT_TURNS` turns (id, text, the turn before it) of the session and
    audience at or before ``occurred_at``, newest first (one index look-up), none of
    ``exclude``."""
    return conn.execute(_PREVIOUS_TURNS, (instance_key, session_key, audience_kind,
                                          audience_key, occurred_at, list(TURN_MEMORY_CLASSES),
                                          exclude or [], CONTEXT_TURNS)).fetchall()


def walk_contexts(before: list[tuple[Any, str, Any]],
                  turns: Iterable[tuple[Any, datetime, str]]
                  ) -> Iterator[tuple[Any, Any, str, str | None, tuple[Any, ...]]]:
    """Per turn of ``turns`` (id, event time, text; one session and audience, in event-time
    order, following ``before``: :func:`previous_turns`, newest first): its id, the id of the
    turn before it (None for the session's first), its context text, its context passage
    (None without a turn before) and :func:`off_the_links` of its context. The import
    (memories/bulk/turns.py) and the session items (sessions/turn_recall.py) link a batch of
    turns with it; the write path does one turn."""
    window = list(reversed(before))[-CONTEXT_TURNS:]  # oldest first
    for turn_id, occurred_at, content in turns:
        previous = window[-1] if window else None
        yield (turn_id, previous[0] if previous else None,
               context_text(occurred_at, [text for _, text, _ in window]),
               context_passage(previous[1], content) if previous else None,
               off_the_links(window))
        window = [*window, (turn_id, content, previous[0] if previous else None)
                  ][-CONTEXT_TURNS:]


def off_the_links(window: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The ids of the turns a context copies (``window``: (id, text, the turn before it),
    oldest first, the last one the new turn's link) when the links do not lead from each of
    them to the new turn, else none: the link trigger then clears the copies."""
    linked = all(later[2] == earlier[0] for earlier, later in pairwise(window))
    return () if linked else tuple(turn[0] for turn in window)


def context_text(occurred_at: datetime, before: list[str]) -> str:
    """A turn's context: the day, then the end of the turns before it (oldest first)."""
    date = date_words(occurred_at)
    if not before:
        return date
    return f"{date}\n{_tail(chr(10).join(before), CONTEXT_MAX_CHARS)}"


def context_passage(previous: str, turn: str) -> str:
    """The text a turn's context vector embeds: the end of the turn before it, then the turn
    (its first chunk). The write path and the re-embedding (projection/reembed.py) both make
    it here, so a re-embedded turn gets the vector a new write would."""
    return f"{_tail(previous, CONTEXT_MAX_CHARS)}\n{turn}"


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

