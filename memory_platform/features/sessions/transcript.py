"""A session's items as they were written: read back losslessly, and removed by their author
(``GET`` / ``DELETE /api/v1/sessions/{key}/items``; what an agent framework's session
needs: its history exactly as it added it, the newest item popped, the session cleared).

* :func:`read_items` answers the items the caller may read (THE history rule,
  ``access.history_visibility``, in SQL, as grep, describe and expand apply it), in ``seq``
  order, each with its raw form exactly as written (``items`` keeps it beside the content)
  and whether a summary covers it. Paged forward (``after_seq``: the items after it, oldest
  first) or backward (``before_seq``: the newest items before it); neither is the newest
  page, so the last ``limit`` items are one request. Every page is in ``seq`` order.
* :func:`pop_item` removes the newest item the acting user wrote in the session and what
  was derived from it. An item a summary covers already is refused (409 ``item_compacted``):
  popping undoes the last turn, it does not rewrite history compaction has summarised
  (clearing does).
* :func:`clear_items` removes every item the acting user wrote in the session, every
  summary covering one of them (the assembly then holds what such a summary stood for and
  stays: other people's turns, raw again) and what was drawn from them.

What "removed" means in a ledger that derives memory from conversations: the items are
deleted, with everything derived from them, by the erasure engine seeded by the items
(``maintenance.erasure.forget_session_items``: a summary covering one and those above it,
the memories drawn from them, their sources, assertions nothing else supports, graph refs,
Dreams redacted, profiles re-derived), in the removal's own transaction, and a
content-free report (``agent_memory_erasures``, subject ``session_items``) stays. When no
item of anyone is left in the session, the session itself goes too: its maintenance state,
runs, maintenance events and participation (also one an admin recorded), as if it had
never been used. Otherwise the runs keep their counters without the removed items,
and the compaction checkpoint never points past the newest item left (a later item's
``seq`` is then compacted in its turn).

Who may remove: an item's author only, through their own user key or the runtime acting for
them (context ``userId``); the rows are chosen by ``user_id`` in SQL. A request without a
user removes nothing (403 ``user_required``); an agent key is refused by the route (403
``person_required``, as forgetting a memory). Every removal holds the session's lock
(``items.lock_session_items``), so no append or compaction interleaves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from memory_platform.features.maintenance.erasure import ErasureReport, forget_session_items
from memory_platform.features.retrieval.statements import parameter_safe
from memory_platform.features.sessions import state
from memory_platform.features.sessions.items import lock_session_items
from memory_platform.foundation.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, history_visibility

ITEMS_DEFAULT_LIMIT = 100
ITEMS_MAX_LIMIT = 200
SEQ_MAX = 2_147_483_647


@dataclass(frozen=True)
class TranscriptItem:
    id: UUID
    seq: int
    role: str
    content: str
    user_id: str | None
    run_id: str | None
    client_item_id: str | None
    occurred_at: datetime | None
    created_at: datetime
    metadata: dict[str, Any]
    raw: dict[str, Any] | None      # the client's own form, exactly as written
    compacted: bool                 # a summary covers it

    @property
    def node_id(self) -> str:
        return f"message:{self.id}"


@dataclass(frozen=True)
class TranscriptPage:
    session_key: str
    items: list[TranscriptItem]
    next_before_seq: int | None     # older items remain: before_seq of the next page
    next_after_seq: int | None      # newer items remain: after_seq of the next page


@dataclass(frozen=True)
class Removal:
    session_key: str
    items: list[TranscriptItem]     # what went, in seq order
    report: ErasureReport | None    # None: nothing was removed
    session_removed: bool


_COLUMNS = sql.SQL(
    "m.id, m.seq, m.role, m.content, m.user_id, m.run_id, m.client_item_id, m.occurred_at,"
    " m.created_at, m.metadata, m.raw,"
    " EXISTS (SELECT 1 FROM agent_context_summary_messages sm WHERE sm.message_id = m.id)")


def _item(row: tuple) -> TranscriptItem:
    ident, seq, role, content, user, run, cid, occurred, created, metadata, raw, covered = row
    return TranscriptItem(ident, seq, role, content, user, run, cid, occurred, created,
                          dict(metadata or {}), raw, bool(covered))


def _session_of(ctx: AccessContext) -> str:
    if not ctx.session_key:
        raise InvalidInput("name the session (sessionKey)", code="session_required",
                           details={"field": "sessionKey"})
    return ctx.session_key


def _bound(value: int | None, field: str, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or \
            not minimum <= value <= SEQ_MAX:
        raise InvalidInput(f"{field} must be a whole number of at least {minimum}",
                           code="invalid_seq", details={"field": field})
    return value


# --- reading ------------------------------------------------------------------------------
def read_items(conn: psycopg.Connection, ctx: AccessContext, *,
               limit: int = ITEMS_DEFAULT_LIMIT, after_seq: int | None = None,
               before_seq: int | None = None) -> TranscriptPage:
    """One page of the session's items the caller may read, in ``seq`` order: after
    ``after_seq`` (oldest first), else the newest before ``before_seq``, else the newest.
    Read-only."""
    session_key = _session_of(ctx)
    if isinstance(limit, bool) or not isinstance(limit, int) or \
            not 1 <= limit <= ITEMS_MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {ITEMS_MAX_LIMIT}",
                           code="invalid_limit", details={"field": "limit"})
    after = _bound(after_seq, "afterSeq", -1)
    before = _bound(before_seq, "beforeSeq", 0)
    if after is not None and before is not None:
        raise InvalidInput("page forward (afterSeq) or backward (beforeSeq), not both",
                           code="invalid_seq", details={"field": "beforeSeq"})
    forward = after is not None
    statement = parameter_safe(sql.SQL("""
        SELECT {columns} FROM agent_context_messages m
         WHERE m.instance_key = %(i)s AND m.session_key = %(s)s AND {visible}
           AND {bound}
         ORDER BY m.seq {direction}
         LIMIT %(limit)s""").format(
        columns=_COLUMNS, visible=history_visibility(ctx, "m"),
        bound=sql.SQL("m.seq > %(after)s" if forward else "m.seq < %(before)s"),
        direction=sql.SQL("ASC" if forward else "DESC")))
    rows = conn.execute(statement, {
        "i": ctx.instance_key, "s": session_key, "after": after, "limit": limit + 1,
        "before": SEQ_MAX if before is None else before}).fetchall()
    items = [_item(row) for row in rows[:limit]]
    more = len(rows) > limit
    if forward:
        return TranscriptPage(session_key, items, None, items[-1].seq if more else None)
    items.reverse()
    return TranscriptPage(session_key, items, items[0].seq if more else None, None)


# --- removing -----------------------------------------------------------------------------
def _author(ctx: AccessContext) -> tuple[str, str]:
    session_key = _session_of(ctx)
    if not ctx.user_id:
        raise AccessDenied("removing session items acts for their author: a user's own key, "
                           "or the runtime naming the user (context userId)",
                           code="user_required", details={"field": "userId"})
    return session_key, ctx.user_id


def _own_items(conn: psycopg.Connection, instance_key: str, session_key: str, user_id: str,
               *, newest_only: bool) -> list[TranscriptItem]:
    statement = sql.SQL(
        "SELECT {columns} FROM agent_context_messages m"
        " WHERE m.instance_key = %s AND m.session_key = %s AND m.user_id = %s"
        " ORDER BY m.seq {order}").format(
        columns=_COLUMNS,
        order=sql.SQL("DESC LIMIT 1" if newest_only else "ASC"))
    return [_item(row) for row in
            conn.execute(statement, (instance_key, session_key, user_id)).fetchall()]


def _remove(conn: psycopg.Connection, settings: Settings, ctx: AccessContext,
            session_key: str, user_id: str, items: list[TranscriptItem]) -> Removal:
    """Inside the caller's transaction and the session's lock: the items and what was
    derived from them go, then the session's bookkeeping follows (see the module
    docstring)."""
    instance = ctx.instance_key
    report = None
    if items:
        report = forget_session_items(conn, settings, instance, user_id, session_key,
                                      [i.id for i in items])
    gone = _tidy_session(conn, instance, session_key, items)
    return Removal(session_key, items, report, gone)


_NEWEST_LEFT = """
    SELECT max(seq) FROM agent_context_messages WHERE instance_key = %(i)s AND session_key = %(s)s
"""
_SESSION_ROWS = ("agent_session_state", "agent_session_runs",
                 "agent_session_maintenance_events", "agent_session_participants")


def _tidy_session(conn: psycopg.Connection, instance_key: str, session_key: str,
                  removed: list[TranscriptItem]) -> bool:
    """After a removal: the whole session goes when no item of anyone is left (True, when
    there was something to remove); else the runs lose the removed items from their counters
    and the compaction checkpoint is pulled back to the newest item left."""
    params = {"i": instance_key, "s": session_key}
    newest = conn.execute(_NEWEST_LEFT, params).fetchone()[0]
    if newest is None:
        deleted = sum(conn.execute(sql.SQL("DELETE FROM {} WHERE instance_key = %(i)s"
                                           " AND session_key = %(s)s").format(
                                               sql.Identifier(table)), params).rowcount
                      for table in _SESSION_ROWS)
        return bool(removed or deleted)
    runs: dict[str, list[int]] = {}
    for item in removed:
        if item.run_id is not None:
            counted = runs.setdefault(item.run_id, [0, 0])
            counted[0] += 1
            counted[1] += len(item.content.encode("utf-8"))
    for run_id, (count, size) in runs.items():
        conn.execute(
            "UPDATE agent_session_runs SET item_count = greatest(item_count - %s, 0),"
            "  transcript_bytes = greatest(transcript_bytes - %s, 0)"
            " WHERE instance_key = %s AND session_key = %s AND run_id = %s",
            (count, size, instance_key, session_key, run_id))
    section = state.read_section(conn, instance_key, session_key, state.COMPACTION_SECTION)
    pulled = {key: newest for key in ("compactedThroughSeq", "pendingThroughSeq")
              if isinstance(section.get(key), int) and section[key] > newest}
    if pulled:
        state.merge_section(conn, instance_key, session_key, state.COMPACTION_SECTION, pulled)
    return False


def pop_item(conn: psycopg.Connection, settings: Settings, ctx: AccessContext) -> Removal:
    """Remove the newest item the acting user wrote in the session of ``ctx`` (NotFound
    when there is none; Conflict ``item_compacted`` when a summary covers it)."""
    session_key, user_id = _author(ctx)
    with conn.transaction():
        lock_session_items(conn, ctx.instance_key, session_key)
        newest = _own_items(conn, ctx.instance_key, session_key, user_id, newest_only=True)
        if not newest:
            raise NotFound(f"you have no item in session {session_key!r}", code="no_items",
                           details={"field": "sessionKey"})
        if newest[0].compacted:
            raise Conflict("your newest item of this session is summarised already: popping "
                           "undoes the last turn, not compacted history (clear the session "
                           "to remove it)", code="item_compacted",
                           details={"id": newest[0].node_id, "seq": newest[0].seq})
        return _remove(conn, settings, ctx, session_key, user_id, newest)


def clear_items(conn: psycopg.Connection, settings: Settings, ctx: AccessContext) -> Removal:
    """Remove every item the acting user wrote in the session of ``ctx`` and what was
    derived from them; a session left without any item goes (see the module docstring)."""
    session_key, user_id = _author(ctx)
    with conn.transaction():
        lock_session_items(conn, ctx.instance_key, session_key)
        items = _own_items(conn, ctx.instance_key, session_key, user_id, newest_only=False)
        return _remove(conn, settings, ctx, session_key, user_id, items)
