"""What a compaction pass writes: the checkpoints (a leaf or condensed summary with its links,
the rewritten assembly and the ``compaction`` state section, in one transaction) and a leaf
summary's memory row through the write path, with the repair of rows a crash left unwritten
(steps 1 and 4 of :mod:`.compaction`)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.sessions import assembly
from memory_platform.features.sessions.items import lock_session_items
from memory_platform.features.sessions.runs import get_run
from memory_platform.features.sessions.state import COMPACTION_SECTION, ensure_state, merge_section
from memory_platform.features.sessions.summarise import Span, SummaryOutcome
from memory_platform.features.sessions.tokens import estimate_tokens
from memory_platform.foundation.db.units import commit_if_idle, committed_unit
from memory_platform.foundation.errors import AccessDenied, InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext

if TYPE_CHECKING:
    from memory_platform.features.sessions.compaction import CompactionReport

MEMORY_CLASS = "session_summary"
REPAIR_LIMIT = 50           # leaf summaries without a memory row repaired per pass


def session_owner(conn: psycopg.Connection, instance_key: str,
                  session_key: str) -> str | None:
    row = conn.execute(
        "SELECT coalesce("
        "  (SELECT user_id FROM agent_session_participants"
        "    WHERE instance_key = %(i)s AND session_key = %(s)s AND role = 'owner'),"
        "  (SELECT user_id FROM agent_session_state"
        "    WHERE instance_key = %(i)s AND session_key = %(s)s))",
        {"i": instance_key, "s": session_key}).fetchone()
    return row[0] if row else None


def lock_section(conn: psycopg.Connection, instance_key: str, session_key: str,
                 owner: str | None) -> dict[str, Any]:
    """The compaction section under the session's item lock (the one appends hold while
    they number items and assembly positions) and the state row's lock, in that order
    (the appends' order), inside a transaction: every checkpoint of the session serialises
    here, sees the latest one, and rewrites the assembly while no append numbers it."""
    lock_session_items(conn, instance_key, session_key)
    ensure_state(conn, instance_key, session_key, owner)
    row = conn.execute(
        "SELECT state_json -> %s FROM agent_session_state"
        " WHERE instance_key = %s AND session_key = %s FOR UPDATE",
        (COMPACTION_SECTION, instance_key, session_key)).fetchone()
    return dict(row[0] or {}) if row else {}


def now_text() -> str:
    return datetime.now(UTC).isoformat()


def _totals(section: dict[str, Any], outcome: SummaryOutcome, counter: str) -> dict[str, Any]:
    return {counter: int(section.get(counter, 0)) + 1,
            "fallbacks": int(section.get("fallbacks", 0)) + int(outcome.fallback),
            "retries": int(section.get("retries", 0)) + outcome.retries}


_INSERT_SUMMARY = sql.SQL(
    "INSERT INTO agent_context_summaries"
    "       (instance_key, session_key, user_id, kind, depth, content, token_count,"
    "        first_seq, last_seq, channel_thread_key, produced_by, model)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (instance_key, session_key, depth, first_seq) DO NOTHING"
    " RETURNING id")


def checkpoint_leaf(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                    span: Span, last_run_index: int, user_id: str | None,
                    channel_thread_key: str | None, outcome: SummaryOutcome,
                    model: str | None, owner: str | None = None) -> uuid.UUID | None:
    """ONE transaction: the leaf summary of ``span``, its message links, the assembly with
    the summary in place of those items, and the state section. None (and nothing written)
    when the checkpoint has already passed ``span.first_seq`` (another pass did it)."""
    with committed_unit(conn):
        section = lock_section(conn, instance_key, session_key, owner)
        if span.first_seq <= int(section.get("compactedThroughSeq", -1)):
            return None
        row = conn.execute(_INSERT_SUMMARY, (
            instance_key, session_key, user_id, "leaf", 0, outcome.text,
            estimate_tokens(outcome.text), span.first_seq, span.last_seq,
            channel_thread_key, outcome.produced_by, model)).fetchone()
        if row is None:
            return None
        summary_id = row[0]
        conn.execute(
            "INSERT INTO agent_context_summary_messages"
            "       (instance_key, session_key, summary_id, message_id)"
            " SELECT instance_key, session_key, %s, id FROM agent_context_messages"
            "  WHERE instance_key = %s AND session_key = %s AND seq BETWEEN %s AND %s",
            (summary_id, instance_key, session_key, span.first_seq, span.last_seq))
        assembly.replace_messages(conn, instance_key, session_key, first_seq=span.first_seq,
                                  last_seq=span.last_seq, summary_id=summary_id)
        merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
            "compactedThroughSeq": span.last_seq, "lastCompactedRunIndex": last_run_index,
            "lastCompactedAt": now_text(), "lastProducedBy": outcome.produced_by,
            **_totals(section, outcome, "leafSummaries")})
    return summary_id


def checkpoint_condensed(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                         children: list[assembly.HeadSummary], span: Span,
                         user_id: str | None, owner: str | None,
                         outcome: SummaryOutcome, model: str | None) -> uuid.UUID | None:
    ids = [child.summary_id for child in children]
    with committed_unit(conn):
        section = lock_section(conn, instance_key, session_key, owner)
        standing = conn.execute(
            "SELECT count(*) FROM agent_context_items WHERE instance_key = %s"
            " AND session_key = %s AND item_kind = 'summary' AND summary_id = ANY(%s)",
            (instance_key, session_key, ids)).fetchone()[0]
        if standing != len(ids):
            return None
        threads = {child.channel_thread_key for child in children}
        row = conn.execute(_INSERT_SUMMARY, (
            instance_key, session_key, user_id, "condensed", children[0].depth + 1,
            outcome.text, estimate_tokens(outcome.text), span.first_seq, span.last_seq,
            threads.pop() if len(threads) == 1 else None, outcome.produced_by,
            model)).fetchone()
        if row is None:
            return None
        summary_id = row[0]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO agent_context_summary_parents"
                "       (instance_key, session_key, parent_summary_id, child_summary_id)"
                " VALUES (%s, %s, %s, %s)",
                [(instance_key, session_key, summary_id, child) for child in ids])
        assembly.replace_summaries(conn, instance_key, session_key, children=ids,
                                   last_seq=span.last_seq, summary_id=summary_id)
        merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
            "lastCondensedAt": now_text(), **_totals(section, outcome, "condensedSummaries")})
    return summary_id


# --- summary memory rows ---------------------------------------------------------------------

def summary_memory(conn: psycopg.Connection, settings: Settings, instance_key: str,
                   session_key: str, summary_id: uuid.UUID, ctx: AccessContext,
                   report: CompactionReport) -> uuid.UUID | None:
    """The ``source_type='summary'`` memory row of a leaf summary, written once: under a
    lock per summary, an existing row (found by its metadata) is linked instead of writing
    another one. Written outside any transaction block (the write path embeds first)."""
    lock = f"session-summary-memory:{summary_id}"
    conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (lock,))
    try:
        row = conn.execute(
            "SELECT s.memory_id, s.content, s.first_seq, s.last_seq, s.produced_by,"
            "       (SELECT max(coalesce(m.occurred_at, m.created_at))"
            "          FROM agent_context_messages m"
            "         WHERE m.instance_key = s.instance_key AND m.session_key = s.session_key"
            "           AND m.seq BETWEEN s.first_seq AND s.last_seq)"
            "  FROM agent_context_summaries s WHERE s.instance_key = %s AND s.session_key = %s"
            "   AND s.id = %s", (instance_key, session_key, summary_id)).fetchone()
        if row is None:
            return None
        memory_id, content, first_seq, last_seq, produced_by, occurred_at = row
        if memory_id is not None:
            return memory_id
        found = conn.execute(
            "SELECT id FROM agent_memories WHERE instance_key = %s AND session_key = %s"
            " AND source_type = 'summary' AND metadata ->> 'contextSummaryId' = %s"
            " ORDER BY created_at LIMIT 1",
            (instance_key, session_key, str(summary_id))).fetchone()
        if found is not None:
            memory_id = found[0]
        else:
            try:
                stored = store_memory(conn, settings, ctx, MemoryWrite(
                    content=content, source_type="summary", memory_class=MEMORY_CLASS,
                    visibility=None, trust_class="assistant_inference",
                    title=f"Conversation summary, items {first_seq}–{last_seq}",
                    metadata={"contextSummaryId": str(summary_id), "sessionKey": session_key,
                              "firstSeq": first_seq, "lastSeq": last_seq,
                              "producedBy": produced_by},
                    occurred_at=min(occurred_at, datetime.now(UTC)) if occurred_at else None))
            except (InvalidInput, AccessDenied) as exc:
                report.memory_errors += 1
                report.error = f"summary memory row refused: {exc.message}"
                return None
            memory_id = stored.id
        conn.execute(
            "UPDATE agent_context_summaries SET memory_id = %s WHERE instance_key = %s"
            " AND session_key = %s AND id = %s AND memory_id IS NULL",
            (memory_id, instance_key, session_key, summary_id))
        commit_if_idle(conn)
        return memory_id
    finally:
        conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (lock,))
        commit_if_idle(conn)


def _run_context(conn: psycopg.Connection, instance_key: str, session_key: str,
                 last_seq: int) -> AccessContext | None:
    """The context of the run the summary's last item was said in."""
    row = conn.execute(
        "SELECT run_id FROM agent_context_messages WHERE instance_key = %s"
        " AND session_key = %s AND seq = %s", (instance_key, session_key, last_seq)).fetchone()
    run = get_run(conn, instance_key, session_key, row[0]) if row and row[0] else None
    return run.access() if run else None


def repair_memories(conn: psycopg.Connection, settings: Settings, instance_key: str,
                    session_key: str, report: CompactionReport) -> None:
    """Leaf summaries committed without their memory row (a crash in between)."""
    rows = conn.execute(
        "SELECT id, last_seq FROM agent_context_summaries WHERE instance_key = %s"
        " AND session_key = %s AND kind = 'leaf' AND memory_id IS NULL"
        " ORDER BY first_seq LIMIT %s",
        (instance_key, session_key, REPAIR_LIMIT)).fetchall()
    for summary_id, last_seq in rows:
        ctx = _run_context(conn, instance_key, session_key, last_seq)
        if ctx is None:
            continue
        if summary_memory(conn, settings, instance_key, session_key, summary_id, ctx,
                          report) is not None:
            report.memory_repairs += 1
    commit_if_idle(conn)


