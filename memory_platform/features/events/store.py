"""The event feed: what changed, in commit-safe order, for what the caller may see.

Events are written by triggers (migration 0025), never here. A page is ordered by
(``txid``, ``seq``) and holds only events of transactions older than every transaction still
running (``txid < pg_snapshot_xmin(pg_current_snapshot())``): an event committed after a
page was served can never sort before it, so a cursor never skips one. The cursor is opaque
(base64url of ``txid:seq``); each page answers the cursor to continue from, also when it is
empty (poll with it again).

The visibility rule is THE rule (:func:`memory_platform.shared.access.audience_predicate`) over the
event's copy of the changed row's audience, in SQL: an event the caller may not see never
leaves the database.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext, audience_predicate

KINDS = ("memory.written", "memory.deduplicated", "assertion.activated",
         "assertion.superseded", "assertion.rejected", "assertion.expired",
         "assertion.tombstoned", "assertion.conflicted", "assertion.reopened",
         "dream.completed", "dream.rolled_back", "user.erased", "memory.forgotten")
DEFAULT_LIMIT = 100
MAX_LIMIT = 500

_PAGE = """
    SELECT e.seq, e.txid::text AS txid, e.id, e.kind, e.audience_kind, e.audience_key,
           e.memory_id, e.assertion_id, e.dream_id, e.erasure_id, e.payload, e.created_at
      FROM agent_memory_events e
     WHERE {visible}
       AND e.txid < pg_snapshot_xmin(pg_current_snapshot())
       AND (e.txid, e.seq) > (%(txid)s::xid8, %(seq)s::bigint)
       AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
     ORDER BY e.txid, e.seq
     LIMIT %(limit)s
"""


def encode_cursor(txid: str | int, seq: int) -> str:
    return base64.urlsafe_b64encode(f"{txid}:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[int, int]:
    """(txid, seq) of an opaque cursor; (0, 0) for none; InvalidInput when malformed."""
    if not cursor:
        return 0, 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        txid, seq = text.split(":")
        values = int(txid), int(seq)
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise InvalidInput("malformed cursor", details={"field": "after"}) from exc
    if values[0] < 0 or values[1] < 0 or values[0] >= 2 ** 63 or values[1] >= 2 ** 63:
        raise InvalidInput("malformed cursor", details={"field": "after"})
    return values


def check_kinds(kinds: Sequence[str] | None) -> list[str] | None:
    """The kinds filter, each one known (InvalidInput otherwise); None or empty: all."""
    if not kinds:
        return None
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise InvalidInput(f"unknown event kind(s): {', '.join(unknown)}",
                           details={"field": "kinds", "known": list(KINDS)})
    return sorted(set(kinds))


def event_json(row: dict[str, Any]) -> dict[str, Any]:
    """The public shape of one event (no text: ids, states, the audience)."""
    ids = {"memoryId": row["memory_id"], "assertionId": row["assertion_id"],
           "dreamId": row["dream_id"], "erasureId": row["erasure_id"]}
    return {"id": str(row["id"]), "kind": row["kind"],
            "audience": {"kind": row["audience_kind"], "key": row["audience_key"]},
            **{k: str(v) for k, v in ids.items() if v is not None},
            "data": row["payload"], "createdAt": row["created_at"].isoformat()}


def list_events(conn: psycopg.Connection, ctx: AccessContext, *, after: str | None = None,
                limit: int | None = None, kinds: Sequence[str] | None = None,
                ) -> tuple[list[dict[str, Any]], str]:
    """One page of the events ``ctx`` may see after the cursor ``after``, and the cursor to
    continue from (the given one when the page is empty)."""
    txid, seq = decode_cursor(after)
    size = min(max(1, limit or DEFAULT_LIMIT), MAX_LIMIT)
    statement = sql.SQL(_PAGE).format(visible=audience_predicate(ctx, "e"))
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(statement, {"txid": str(txid), "seq": seq,
                                       "kinds": check_kinds(kinds), "limit": size}).fetchall()
    cursor = encode_cursor(rows[-1]["txid"], rows[-1]["seq"]) if rows else (
        after or encode_cursor(0, 0))
    return [event_json(r) for r in rows], cursor


def event_by_id(conn: psycopg.Connection, event_id: Any) -> dict[str, Any] | None:
    """One event by id, whatever its audience (webhook delivery: an operator's channel)."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            "SELECT seq, txid::text AS txid, id, instance_key, kind, audience_kind,"
            " audience_key, memory_id, assertion_id, dream_id, erasure_id, payload, created_at"
            " FROM agent_memory_events WHERE id = %s", (event_id,)).fetchone()
    return row
