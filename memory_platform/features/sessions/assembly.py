"""The ordered context assembly of a session: ``agent_context_items``.

The assembly is what a runtime replays as the session's history: summaries first (oldest
first, higher depths before the leaves they did not absorb), then the raw items not yet
compacted, in ``position`` order. Appending a turn adds message items at the end;
compaction replaces the items it covered by one summary item at the place of the first one
and renumbers the rest, so positions stay dense (0..n-1) and the order is kept.

Raw messages and summaries are never deleted here: an item row only says what stands in the
context now; the rows themselves stay reachable through the summary link tables.

Every function runs inside its caller's transaction (compaction's checkpoint) and commits
nothing. Renumbering moves the tail out of the way first (``position + OFFSET``) and then
back densely, because the primary key (instance, session, position) is checked row by row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import psycopg
from psycopg import sql

# Far above any real position (an int4 column): the tail is parked here while renumbering.
OFFSET = 1_000_000_000


@dataclass(frozen=True)
class HeadSummary:
    """A summary standing at the start of the assembly (a condensation candidate)."""

    position: int
    summary_id: uuid.UUID
    depth: int
    first_seq: int | None
    last_seq: int | None
    content: str
    channel_thread_key: str | None
    user_id: str | None


def leading_summaries(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                      limit: int) -> list[HeadSummary]:
    """The summaries the assembly starts with, up to its first raw item (at most
    ``limit``)."""
    rows = conn.execute(
        "SELECT i.position, i.item_kind, s.id, s.depth, s.first_seq, s.last_seq, s.content,"
        "       s.channel_thread_key, s.user_id"
        "  FROM agent_context_items i"
        "  LEFT JOIN agent_context_summaries s"
        "    ON s.instance_key = i.instance_key AND s.session_key = i.session_key"
        "   AND s.id = i.summary_id"
        " WHERE i.instance_key = %s AND i.session_key = %s"
        " ORDER BY i.position LIMIT %s",
        (instance_key, session_key, limit)).fetchall()
    head: list[HeadSummary] = []
    for position, kind, *summary in rows:
        if kind != "summary":
            break
        head.append(HeadSummary(position, *summary))
    return head


def raw_tokens(conn: psycopg.Connection, instance_key: str, session_key: str) -> int:
    """Estimated tokens of the raw items standing in the assembly (the history a runtime
    replays verbatim), counted like
    :func:`~memory_platform.features.sessions.tokens.estimate_tokens`."""
    row = conn.execute(
        "SELECT coalesce(sum((length(m.content) + 3) / 4), 0)"
        "  FROM agent_context_items i"
        "  JOIN agent_context_messages m"
        "    ON m.instance_key = i.instance_key AND m.session_key = i.session_key"
        "   AND m.id = i.message_id"
        " WHERE i.instance_key = %s AND i.session_key = %s AND i.item_kind = 'message'",
        (instance_key, session_key)).fetchone()
    return int(row[0])


_SCOPE = sql.SQL("instance_key = %(i)s AND session_key = %(s)s")
_MESSAGES_IN_RANGE = sql.SQL(
    "item_kind = 'message' AND message_id IN (SELECT id FROM agent_context_messages"
    " WHERE instance_key = %(i)s AND session_key = %(s)s"
    " AND seq BETWEEN %(first)s AND %(last)s)")
_SUMMARIES = sql.SQL("item_kind = 'summary' AND summary_id = ANY(%(children)s)")
# Where a summary goes when none of what it covers stands in the assembly: before the first
# raw item that comes after it, else at the end.
_FIRST_LATER_MESSAGE = sql.SQL(
    "SELECT min(i.position) FROM agent_context_items i"
    "  JOIN agent_context_messages m"
    "    ON m.instance_key = i.instance_key AND m.session_key = i.session_key"
    "   AND m.id = i.message_id"
    " WHERE i.instance_key = %(i)s AND i.session_key = %(s)s AND m.seq > %(last)s")


def _replace(conn: psycopg.Connection, removed: sql.Composable, params: dict,
             summary_id: uuid.UUID) -> int:
    """Replace the items ``removed`` selects by one summary item at the first one's place;
    renumber the tail densely. Answers how many items were removed."""
    where = sql.SQL("{} AND {}").format(_SCOPE, removed)
    first = conn.execute(sql.SQL("SELECT min(position), count(*) FROM agent_context_items"
                                 " WHERE {}").format(where), params).fetchone()
    position, count = first[0], int(first[1])
    if position is None:
        position = conn.execute(_FIRST_LATER_MESSAGE, params).fetchone()[0]
    if position is None:
        position = conn.execute(
            sql.SQL("SELECT coalesce(max(position) + 1, 0) FROM agent_context_items"
                    " WHERE {}").format(_SCOPE), params).fetchone()[0]
    params = {**params, "p": position, "offset": OFFSET, "summary": summary_id}
    conn.execute(sql.SQL("DELETE FROM agent_context_items WHERE {}").format(where), params)
    conn.execute(sql.SQL("UPDATE agent_context_items SET position = position + %(offset)s"
                         " WHERE {} AND position >= %(p)s").format(_SCOPE), params)
    conn.execute(
        "INSERT INTO agent_context_items (instance_key, session_key, position, item_kind,"
        "                                 summary_id)"
        " VALUES (%(i)s, %(s)s, %(p)s, 'summary', %(summary)s)", params)
    conn.execute(sql.SQL(
        "UPDATE agent_context_items t SET position = r.renumbered"
        "  FROM (SELECT position, %(p)s + row_number() OVER (ORDER BY position) AS renumbered"
        "          FROM agent_context_items WHERE {} AND position >= %(offset)s) r"
        " WHERE t.instance_key = %(i)s AND t.session_key = %(s)s"
        "   AND t.position = r.position").format(_SCOPE), params)
    return count


def replace_messages(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                     first_seq: int, last_seq: int, summary_id: uuid.UUID) -> int:
    """A leaf summary takes the place of the raw items of ``first_seq..last_seq``."""
    return _replace(conn, _MESSAGES_IN_RANGE,
                    {"i": instance_key, "s": session_key, "first": first_seq,
                     "last": last_seq}, summary_id)


def replace_summaries(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                      children: list[uuid.UUID], last_seq: int,
                      summary_id: uuid.UUID) -> int:
    """A condensed summary takes the place of the summaries it condenses."""
    return _replace(conn, _SUMMARIES,
                    {"i": instance_key, "s": session_key, "children": children,
                     "last": last_seq}, summary_id)
