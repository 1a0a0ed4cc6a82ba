"""Reading the lossless context graph back: ``memory_grep``, ``memory_describe``,
``memory_expand``.

* :func:`grep` is exact search: a case-insensitive substring match (``ILIKE`` with ``%``,
  ``_`` and ``\\`` escaped, so the pattern is matched literally) over raw messages and
  summaries of the sessions the caller may read (resolved first), served by the trigram
  indexes led by instance and session (migration 0027). A trigram index needs three
  characters, so shorter patterns are refused rather than turned into a scan of every row.
* :func:`describe` answers one node: a message with the summaries above it (leaf first),
  or a summary with its range, provenance, children and parents.
* :func:`expand` walks from a summary down to the raw items it covers (through condensed
  summaries too), in ``seq`` order and paged, so every raw item under any summary is
  reachable: nothing compaction did is lossy.

Every statement applies THE history rule (``access.history_visibility``) in SQL, to the node
asked for and to every node it lists. An invisible id answers exactly like an unknown one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.sessions.items import ROLES
from memory_platform.foundation.errors import InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, channel_keys, history_visibility

PATTERN_MIN_CHARS = 3       # a trigram index needs three characters to narrow anything
PATTERN_MAX_CHARS = 500
GREP_DEFAULT_LIMIT = 20
GREP_MAX_LIMIT = 100
SNIPPET_CHARS = 160
EXPAND_DEFAULT_LIMIT = 100
EXPAND_MAX_LIMIT = 200
NODE_LIST_LIMIT = 100       # children, parents, covering summaries listed with one node
CURSOR_MAX_CHARS = 300

_MESSAGES, _SUMMARIES = "agent_context_messages", "agent_context_summaries"


@dataclass(frozen=True)
class GrepHit:
    id: str                 # 'message:<uuid>' | 'summary:<uuid>'
    kind: str
    session_key: str
    first_seq: int | None   # a message: its seq (first == last)
    last_seq: int | None
    role: str | None
    user_id: str | None
    snippet: str
    occurred_at: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class GrepPage:
    hits: list[GrepHit]
    next_before: str | None  # the cursor of the next (older) page, None on the last


@dataclass(frozen=True)
class SummaryRef:
    id: str
    kind: str
    depth: int
    first_seq: int | None
    last_seq: int | None


@dataclass(frozen=True)
class MessageNode:
    id: str
    session_key: str
    seq: int
    role: str
    content: str
    run_id: str | None
    user_id: str | None
    occurred_at: datetime | None
    created_at: datetime
    client_item_id: str | None
    metadata: dict[str, Any]
    summaries: list[SummaryRef]   # covering it: leaf first, then its ancestors
    kind: str = "message"


@dataclass(frozen=True)
class SummaryNode:
    id: str
    session_key: str
    summary_kind: str
    depth: int
    content: str
    first_seq: int | None
    last_seq: int | None
    token_count: int
    produced_by: str | None
    model: str | None
    memory_id: str | None
    user_id: str | None
    created_at: datetime
    child_count: int
    children: list[str]           # typed ids, child summaries first (bounded)
    parents: list[str]
    kind: str = "summary"


@dataclass(frozen=True)
class ExpandedMessage:
    id: str
    seq: int
    role: str
    user_id: str | None
    content: str
    run_id: str | None
    occurred_at: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class Expansion:
    summary_id: str
    messages: list[ExpandedMessage]
    child_summaries: list[SummaryRef]
    next_after_seq: int | None    # page on with after_seq=this; None on the last page


# --- ids and cursors ---------------------------------------------------------------------
def parse_node_id(node_id: object) -> tuple[str, UUID]:
    """``message:<uuid>`` or ``summary:<uuid>``; anything else is simply not found."""
    text = str(node_id)[:100]
    kind, _, ident = text.partition(":")
    if kind in ("message", "summary"):
        try:
            return kind, UUID(ident)
        except ValueError:
            pass
    raise NotFound(f"no session node {text!r} (ids look like message:<uuid> or "
                   "summary:<uuid>)")


def _encode_cursor(created_at: datetime, sort_seq: int, ident: UUID) -> str:
    raw = json.dumps([created_at.isoformat(), sort_seq, str(ident)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, int, UUID]:
    try:
        if len(cursor) > CURSOR_MAX_CHARS:
            raise ValueError("too long")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, seq, ident = json.loads(raw)
        created = datetime.fromisoformat(at)
        if created.tzinfo is None or isinstance(seq, bool) or not isinstance(seq, int):
            raise ValueError("bad cursor fields")
        return created, seq, UUID(ident)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("before is not a cursor this server gave out (use nextBefore of "
                           "the previous page)", code="invalid_cursor",
                           details={"field": "before"}) from exc


def like_pattern(pattern: str) -> str:
    """``%pattern%`` for ILIKE, with the pattern's own ``\\``, ``%`` and ``_`` escaped (the
    default escape character is the backslash), so it matches literally."""
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def snippet(content: str, pattern: str, width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters around the first case-insensitive match (linear time:
    ``str.find`` is linear in the text for long needles). Where lower-casing changes the
    length (a few scripts), or the match is not found, the start of the content."""
    lowered = content.lower()
    at = lowered.find(pattern.lower()) if len(lowered) == len(content) else -1
    if at < 0:
        return content[:width] + ("…" if len(content) > width else "")
    start = max(0, at - max(0, width - len(pattern)) // 2)
    end = min(len(content), start + width)
    start = max(0, min(start, end - width))
    return ("…" if start > 0 else "") + content[start:end] + ("…" if end < len(content) else "")


# --- grep --------------------------------------------------------------------------------
def _check_grep(ctx: AccessContext, pattern: object, all_sessions: bool,
                roles: Sequence[str] | None, limit: int) -> list[str] | None:
    if not isinstance(pattern, str) or len(pattern) < PATTERN_MIN_CHARS:
        raise InvalidInput(f"pattern needs at least {PATTERN_MIN_CHARS} characters: grep is "
                           "an exact substring search served by a trigram index, which "
                           "cannot narrow a shorter pattern", code="pattern_too_short",
                           details={"field": "pattern", "minimum": PATTERN_MIN_CHARS})
    if len(pattern) > PATTERN_MAX_CHARS:
        raise InvalidInput(f"pattern has more than {PATTERN_MAX_CHARS} characters",
                           code="pattern_too_long",
                           details={"field": "pattern", "limit": PATTERN_MAX_CHARS})
    if "\x00" in pattern:
        raise InvalidInput("pattern contains a NUL character", code="invalid_characters",
                           details={"field": "pattern", "character": "U+0000"})
    if not all_sessions and not ctx.session_key:
        raise InvalidInput("name a session (sessionKey) or search all sessions you take part "
                           "in (allSessions=true)", code="session_required",
                           details={"field": "sessionKey"})
    if isinstance(limit, bool) or not isinstance(limit, int) or not \
            1 <= limit <= GREP_MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {GREP_MAX_LIMIT}",
                           code="invalid_limit", details={"field": "limit"})
    if roles is None:
        return None
    chosen = list(dict.fromkeys(roles))
    unknown = [r for r in chosen if r not in ROLES]
    if not chosen or unknown:
        raise InvalidInput(f"roles must be some of {', '.join(ROLES)}", code="invalid_role",
                           details={"field": "roles", "unknown": unknown[:5]})
    return chosen


# The sessions a caller may grep across: those they take part in, those they wrote in
# (their own items are theirs in any session), and those holding a user-less transcript of
# a channel the caller reads in (membership was checked by trust.resolve_context). The last
# two are loose index scans (migration 0027): one probe per session, however long the
# history.
_READABLE_SESSIONS = """
    WITH RECURSIVE own(session_key) AS (
        (SELECT session_key FROM agent_context_messages
          WHERE instance_key = %(instance)s AND user_id = %(user)s
          ORDER BY session_key LIMIT 1)
        UNION ALL
        SELECT (SELECT m.session_key FROM agent_context_messages m
                 WHERE m.instance_key = %(instance)s AND m.user_id = %(user)s
                   AND m.session_key > own.session_key
                 ORDER BY m.session_key LIMIT 1)
          FROM own WHERE own.session_key IS NOT NULL),
    channel(thread, session_key) AS (
        SELECT t.thread,
               (SELECT m.session_key FROM agent_context_messages m
                 WHERE m.instance_key = %(instance)s AND m.channel_thread_key = t.thread
                   AND m.user_id IS NULL
                 ORDER BY m.session_key LIMIT 1)
          FROM unnest(%(channels)s::text[]) AS t(thread)
        UNION ALL
        SELECT c.thread,
               (SELECT m.session_key FROM agent_context_messages m
                 WHERE m.instance_key = %(instance)s AND m.channel_thread_key = c.thread
                   AND m.user_id IS NULL AND m.session_key > c.session_key
                 ORDER BY m.session_key LIMIT 1)
          FROM channel c WHERE c.session_key IS NOT NULL)
    SELECT session_key FROM agent_session_participants
     WHERE instance_key = %(instance)s AND user_id = %(user)s
    UNION
    SELECT session_key FROM own WHERE session_key IS NOT NULL
    UNION
    SELECT session_key FROM channel WHERE session_key IS NOT NULL
    LIMIT %(cap)s
"""


def readable_sessions(conn: psycopg.Connection, ctx: AccessContext, *,
                      max_sessions: int) -> list[str]:
    """The sessions ``memory_grep`` with ``allSessions`` searches: every session the caller
    takes part in or wrote in, and those with a user-less transcript of the caller's channel
    thread or room; at most ``max_sessions`` (more is refused: name a session). Resolved
    before anything is searched, so a grep reads only these sessions' rows, never another
    tenant's (review finding 7). A user-less transcript outside any channel (a system
    session) is not searched across sessions: the context search's history arm finds it."""
    rows = conn.execute(_READABLE_SESSIONS, {"instance": ctx.instance_key,
                                             "user": ctx.user_id,
                                             "channels": channel_keys(ctx),
                                             "cap": max_sessions + 1}).fetchall()
    if len(rows) > max_sessions:
        raise InvalidInput(f"you take part in more than {max_sessions} sessions: name one "
                           "(sessionKey) to grep it", code="too_many_sessions",
                           details={"field": "allSessions", "limit": max_sessions})
    return [row[0] for row in rows]


def _setting(name: str, value: int | None) -> int:
    """``value``, or the default of setting ``name`` (defaults live in settings.py only)."""
    return value if value is not None else Settings.model_fields[name].default


def grep_statement(ctx: AccessContext, pattern: str, sessions: list[str], *,
                   all_sessions: bool, roles: list[str] | None, limit: int,
                   cursor: tuple[datetime, int, UUID] | None,
                   scan_cap: int) -> tuple[sql.Composed, dict[str, Any]]:
    """The one statement of a grep page inside ``sessions`` (apart so that its plan can be
    examined: tests and ``bench/session_grep.py``)."""
    params: dict[str, Any] = {"instance": ctx.instance_key, "sessions": sessions,
                              "like": like_pattern(pattern), "roles": roles,
                              "limit": limit + 1, "cap": scan_cap + 1}
    if cursor:
        params.update({"c_at": cursor[0], "c_seq": cursor[1], "c_id": cursor[2]})

    def part(alias: str, table: str, sort_seq: sql.Composable) -> sql.Composed:
        col = lambda name: sql.Identifier(alias, name)  # noqa: E731
        where = [sql.SQL("{} = %(instance)s").format(col("instance_key")),
                 sql.SQL("{} = ANY(%(sessions)s::text[])").format(col("session_key")),
                 sql.SQL("{} ILIKE %(like)s").format(col("content")),
                 history_visibility(ctx, alias, table, all_sessions=all_sessions)]
        if cursor:
            where.append(sql.SQL("({}, {}, {}) < (%(c_at)s, %(c_seq)s, %(c_id)s)").format(
                col("created_at"), sort_seq, col("id")))
        return sql.SQL(" AND ").join(where)

    m_sort, s_sort = sql.SQL("m.seq"), sql.SQL("COALESCE(s.last_seq, -1)")
    # Each part reads at most cap + 1 matches (count(*) OVER () counts them before the page
    # is cut), then orders them.
    message_part = sql.SQL("""
        (SELECT *, count(*) OVER () AS matched FROM
          (SELECT 'message' AS kind, m.id, m.session_key, m.seq AS first_seq,
                  m.seq AS last_seq, m.role, m.user_id, m.content, m.occurred_at,
                  m.created_at, {m_sort} AS sort_seq
             FROM agent_context_messages m
            WHERE {m_where} {m_roles}
            LIMIT %(cap)s) capped
          ORDER BY created_at DESC, sort_seq DESC, id DESC
          LIMIT %(limit)s)""").format(
        m_sort=m_sort, m_where=part("m", _MESSAGES, m_sort),
        m_roles=sql.SQL("AND m.role = ANY(%(roles)s)") if roles else sql.SQL(""))
    summary_part = sql.SQL("""
        (SELECT *, count(*) OVER () AS matched FROM
          (SELECT 'summary' AS kind, s.id, s.session_key, s.first_seq, s.last_seq,
                  NULL::text AS role, s.user_id, s.content, NULL::timestamptz AS occurred_at,
                  s.created_at, {s_sort} AS sort_seq
             FROM agent_context_summaries s
            WHERE {s_where}
            LIMIT %(cap)s) capped
          ORDER BY created_at DESC, sort_seq DESC, id DESC
          LIMIT %(limit)s)""").format(s_sort=s_sort, s_where=part("s", _SUMMARIES, s_sort))
    parts = [message_part] if roles else [message_part, summary_part]
    statement = sql.SQL("SELECT *, max(matched) OVER () FROM ({}) hits"
                        " ORDER BY created_at DESC, sort_seq DESC, id DESC LIMIT %(limit)s") \
        .format(sql.SQL(" UNION ALL ").join(parts))
    return parameter_safe(statement), params


def grep(conn: psycopg.Connection, ctx: AccessContext, pattern: str, *,
         all_sessions: bool = False, roles: Sequence[str] | None = None,
         limit: int = GREP_DEFAULT_LIMIT, before: str | None = None, scan_cap: int | None = None,
         max_sessions: int | None = None) -> GrepPage:
    """Messages and summaries whose content contains ``pattern`` (case-insensitive,
    literally), newest first (by write time, then position), that ``ctx`` may read: in the
    current session, or in every session the caller takes part in or wrote in
    (``all_sessions``; :func:`readable_sessions`). ``roles`` keeps messages of those roles
    only (summaries have no role: then none). ``before``: the ``next_before`` cursor of the
    previous page.

    Bounded work: the sessions are resolved first and the match runs only inside them (the
    trigram indexes are led by instance and session, migration 0027), with the history rule
    in the same statement; at most ``scan_cap`` matches (setting ``session_grep_scan_cap``)
    of each kind are read and ordered, and a pattern matching more is refused
    (``pattern_too_broad``) rather than answered out of order."""
    chosen_roles = _check_grep(ctx, pattern, all_sessions, roles, limit)
    cap = _setting("session_grep_scan_cap", scan_cap)
    cursor = _decode_cursor(before) if before else None
    sessions = readable_sessions(
        conn, ctx, max_sessions=_setting("session_grep_max_sessions", max_sessions)) \
        if all_sessions else [ctx.session_key]
    if not sessions:
        return GrepPage(hits=[], next_before=None)
    statement, params = grep_statement(ctx, pattern, sessions, all_sessions=all_sessions,
                                       roles=chosen_roles, limit=limit, cursor=cursor,
                                       scan_cap=cap)
    rows = conn.execute(statement, params).fetchall()
    if rows and rows[0][12] > cap:
        raise InvalidInput(f"more than {cap} items match {pattern!r}: name a session or use a "
                           "longer pattern", code="pattern_too_broad",
                           details={"field": "pattern", "limit": cap})
    hits = [GrepHit(id=f"{kind}:{ident}", kind=kind, session_key=session, first_seq=first,
                    last_seq=last, role=role, user_id=user, snippet=snippet(content, pattern),
                    occurred_at=occurred, created_at=created)
            for kind, ident, session, first, last, role, user, content, occurred, created, *_
            in rows[:limit]]
    next_before = None
    if len(rows) > limit:
        last_row = rows[limit - 1]
        next_before = _encode_cursor(last_row[9], last_row[10], last_row[1])
    return GrepPage(hits=hits, next_before=next_before)


# --- describe ----------------------------------------------------------------------------
def _refs(rows: list[tuple]) -> list[SummaryRef]:
    return [SummaryRef(f"summary:{ident}", kind, depth, first, last)
            for ident, kind, depth, first, last in rows]


def _covering(conn: psycopg.Connection, ctx: AccessContext, message_id: UUID) -> list[SummaryRef]:
    """The visible summaries above a message: its leaf summaries, then their ancestors
    (recursive through the parent links; UNION stops at a cycle)."""
    statement = sql.SQL("""
        WITH RECURSIVE covering(id) AS (
            SELECT sm.summary_id FROM agent_context_summary_messages sm
             WHERE sm.message_id = %(m)s
            UNION
            SELECT p.parent_summary_id FROM agent_context_summary_parents p
              JOIN covering c ON p.child_summary_id = c.id)
        SELECT s.id, s.kind, s.depth, s.first_seq, s.last_seq
          FROM covering c JOIN agent_context_summaries s ON s.id = c.id
         WHERE {visible}
         ORDER BY s.depth, s.first_seq NULLS LAST, s.id
         LIMIT %(cap)s""").format(
        visible=history_visibility(ctx, "s", _SUMMARIES, all_sessions=True))
    return _refs(conn.execute(parameter_safe(statement),
                              {"m": message_id, "cap": NODE_LIST_LIMIT}).fetchall())


def _describe_message(conn: psycopg.Connection, ctx: AccessContext, ident: UUID) -> MessageNode:
    statement = sql.SQL("""
        SELECT m.session_key, m.seq, m.role, m.content, m.run_id, m.user_id, m.occurred_at,
               m.created_at, m.client_item_id, m.metadata
          FROM agent_context_messages m WHERE m.id = %(id)s AND {visible}""").format(
        visible=history_visibility(ctx, "m", _MESSAGES, all_sessions=True))
    row = conn.execute(parameter_safe(statement), {"id": ident}).fetchone()
    if row is None:
        raise NotFound(f"no session node message:{ident}")
    session, seq, role, content, run, user, occurred, created, cid, metadata = row
    return MessageNode(id=f"message:{ident}", session_key=session, seq=seq, role=role,
                       content=content, run_id=run, user_id=user, occurred_at=occurred,
                       created_at=created, client_item_id=cid, metadata=dict(metadata or {}),
                       summaries=_covering(conn, ctx, ident))


def _describe_summary(conn: psycopg.Connection, ctx: AccessContext, ident: UUID) -> SummaryNode:
    visible_s = history_visibility(ctx, "s", _SUMMARIES, all_sessions=True)
    statement = sql.SQL("""
        SELECT s.session_key, s.kind, s.depth, s.content, s.first_seq, s.last_seq,
               s.token_count, s.produced_by, s.model, s.memory_id, s.user_id, s.created_at
          FROM agent_context_summaries s WHERE s.id = %(id)s AND {visible}""").format(
        visible=visible_s)
    row = conn.execute(parameter_safe(statement), {"id": ident}).fetchone()
    if row is None:
        raise NotFound(f"no session node summary:{ident}")
    (session, kind, depth, content, first, last, tokens, produced_by, model, memory_id,
     user, created) = row
    children = conn.execute(parameter_safe(sql.SQL("""
        (SELECT 'summary:' || s.id, 0 AS rank, s.first_seq AS at, count(*) OVER () AS total
           FROM agent_context_summary_parents p
           JOIN agent_context_summaries s ON s.id = p.child_summary_id
          WHERE p.parent_summary_id = %(id)s AND {visible_s}
          ORDER BY s.first_seq NULLS LAST, s.id LIMIT %(cap)s)
        UNION ALL
        (SELECT 'message:' || m.id, 1, m.seq, count(*) OVER ()
           FROM agent_context_summary_messages sm
           JOIN agent_context_messages m ON m.id = sm.message_id
          WHERE sm.summary_id = %(id)s AND {visible_m}
          ORDER BY m.seq LIMIT %(cap)s)
        ORDER BY rank, at NULLS LAST""").format(
        visible_s=visible_s,
        visible_m=history_visibility(ctx, "m", _MESSAGES, all_sessions=True))),
        {"id": ident, "cap": NODE_LIST_LIMIT}).fetchall()
    totals: dict[int, int] = {}
    for _, rank, _, total in children:
        totals[rank] = total
    parents = conn.execute(parameter_safe(sql.SQL("""
        SELECT 'summary:' || s.id FROM agent_context_summary_parents p
          JOIN agent_context_summaries s ON s.id = p.parent_summary_id
         WHERE p.child_summary_id = %(id)s AND {visible}
         ORDER BY s.depth, s.first_seq NULLS LAST, s.id LIMIT %(cap)s""").format(
        visible=visible_s)), {"id": ident, "cap": NODE_LIST_LIMIT}).fetchall()
    return SummaryNode(
        id=f"summary:{ident}", session_key=session, summary_kind=kind, depth=depth,
        content=content, first_seq=first, last_seq=last, token_count=tokens,
        produced_by=produced_by, model=model, memory_id=str(memory_id) if memory_id else None,
        user_id=user, created_at=created, child_count=sum(totals.values()),
        children=[r[0] for r in children][:NODE_LIST_LIMIT], parents=[r[0] for r in parents])


def describe(conn: psycopg.Connection, ctx: AccessContext,
             node_id: str) -> MessageNode | SummaryNode:
    """One node of the context graph the caller may read (any session they take part in,
    their own items anywhere); NotFound for an unknown or invisible id alike."""
    kind, ident = parse_node_id(node_id)
    if kind == "message":
        return _describe_message(conn, ctx, ident)
    return _describe_summary(conn, ctx, ident)


# --- expand ------------------------------------------------------------------------------
def expand(conn: psycopg.Connection, ctx: AccessContext, summary_id: str, *,
           limit: int = EXPAND_DEFAULT_LIMIT, after_seq: int | None = None) -> Expansion:
    """The raw messages under a summary (through every summary below it), in ``seq`` order,
    ``limit`` per page after ``after_seq``, and the summary's direct child summaries."""
    kind, ident = parse_node_id(summary_id)
    if kind != "summary":
        raise InvalidInput("expand takes a summary id (summary:<uuid>); a message has nothing "
                           "below it (use describe)", code="not_a_summary",
                           details={"field": "id"})
    if isinstance(limit, bool) or not isinstance(limit, int) or \
            not 1 <= limit <= EXPAND_MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {EXPAND_MAX_LIMIT}",
                           code="invalid_limit", details={"field": "limit"})
    if after_seq is not None and (isinstance(after_seq, bool) or not isinstance(after_seq, int)
                                  or not -1 <= after_seq <= 2_147_483_647):
        raise InvalidInput("afterSeq must be a whole number of at least -1",
                           code="invalid_after_seq", details={"field": "afterSeq"})
    visible_s = history_visibility(ctx, "s", _SUMMARIES, all_sessions=True)
    found = conn.execute(parameter_safe(sql.SQL(
        "SELECT 1 FROM agent_context_summaries s WHERE s.id = %(id)s AND {}").format(
        visible_s)), {"id": ident}).fetchone()
    if found is None:
        raise NotFound(f"no session node summary:{ident}")
    rows = conn.execute(parameter_safe(sql.SQL("""
        WITH RECURSIVE tree(id) AS (
            SELECT %(id)s::uuid
            UNION
            SELECT p.child_summary_id FROM agent_context_summary_parents p
              JOIN tree t ON p.parent_summary_id = t.id)
        SELECT m.id, m.seq, m.role, m.user_id, m.content, m.run_id, m.occurred_at,
               m.created_at
          FROM agent_context_messages m
         WHERE m.id IN (SELECT sm.message_id FROM agent_context_summary_messages sm
                         WHERE sm.summary_id IN (SELECT id FROM tree))
           AND m.seq > %(after)s AND {visible}
         ORDER BY m.seq
         LIMIT %(limit)s""").format(
        visible=history_visibility(ctx, "m", _MESSAGES, all_sessions=True))),
        {"id": ident, "after": -1 if after_seq is None else after_seq,
         "limit": limit + 1}).fetchall()
    messages = [ExpandedMessage(f"message:{mid}", seq, role, user, content, run, occurred,
                                created)
                for mid, seq, role, user, content, run, occurred, created in rows[:limit]]
    children = conn.execute(parameter_safe(sql.SQL("""
        SELECT s.id, s.kind, s.depth, s.first_seq, s.last_seq
          FROM agent_context_summary_parents p
          JOIN agent_context_summaries s ON s.id = p.child_summary_id
         WHERE p.parent_summary_id = %(id)s AND {visible}
         ORDER BY s.first_seq NULLS LAST, s.id LIMIT %(cap)s""").format(visible=visible_s)),
        {"id": ident, "cap": NODE_LIST_LIMIT}).fetchall()
    return Expansion(summary_id=f"summary:{ident}", messages=messages,
                     child_summaries=_refs(children),
                     next_after_seq=messages[-1].seq if len(rows) > limit else None)
