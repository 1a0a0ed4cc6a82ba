"""What a compaction pass works on: whether compaction is due (:func:`due_trigger`) and the
plan, the candidate items cut into chunks that never mix two conversation contexts (steps 2
and 3 of :mod:`.compaction`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from memory_platform.features.sessions import assembly
from memory_platform.features.sessions.runs import SessionRun, completed_runs
from memory_platform.features.sessions.summarise import Span, SummaryItem
from memory_platform.features.sessions.tokens import CHARS_PER_TOKEN, chars_for_tokens
from memory_platform.foundation.settings import Settings

# Bounds of one pass (work per pass, not behaviour: what is left waits for the next pass).
PLAN_ROWS = 20_000          # candidate items one pass plans
CHUNK_ROWS = 400            # items in one chunk at most (however small they are)


def _count_new_turns(conn: psycopg.Connection, instance_key: str, session_key: str,
                     after_index: int) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM agent_session_runs WHERE instance_key = %s AND session_key = %s"
        " AND status = 'completed' AND run_index > %s",
        (instance_key, session_key, after_index)).fetchone()[0])


def _uncompacted_bytes(conn: psycopg.Connection, instance_key: str, session_key: str,
                       through: int) -> int:
    return int(conn.execute(
        "SELECT coalesce(sum(octet_length(m.content)), 0)"
        "  FROM agent_context_messages m"
        "  JOIN agent_session_runs r"
        "    ON r.instance_key = m.instance_key AND r.session_key = m.session_key"
        "   AND r.run_id = m.run_id AND r.status = 'completed'"
        " WHERE m.instance_key = %s AND m.session_key = %s AND m.seq > %s",
        (instance_key, session_key, through)).fetchone()[0])


def due_trigger(conn: psycopg.Connection, settings: Settings, instance_key: str,
                session_key: str, section: dict[str, Any], through: int,
                latest: SessionRun | None, force: bool, measures: dict[str, Any]) -> str | None:
    """Why compaction is due (None: it is not). ``measures`` gets what was measured."""
    budget = (latest.context_budget_tokens if latest and latest.context_budget_tokens
              else settings.session_context_budget_tokens)
    measures["budgetTokens"] = budget
    if force:
        return "forced"
    pending = section.get("pendingThroughSeq")
    if isinstance(pending, int) and pending > through:
        measures["pendingThroughSeq"] = pending
        return "resume"
    prompt = latest.prompt_tokens if latest else None
    measures["promptTokens"] = prompt
    if prompt is not None and prompt >= settings.session_budget_pressure_ratio * budget:
        return "budget_pressure"
    raw = assembly.raw_tokens(conn, instance_key, session_key)
    measures["rawHistoryTokens"] = raw
    if raw >= settings.session_compaction_max_history_share * budget:
        return "history_share"
    new_turns = _count_new_turns(conn, instance_key, session_key,
                                 int(section.get("lastPassRunIndex", -1)))
    measures["newTurns"] = new_turns
    if new_turns < settings.session_compaction_min_new_turns:
        return None
    transcript = _uncompacted_bytes(conn, instance_key, session_key, through)
    measures["uncompactedBytes"] = transcript
    if transcript >= settings.session_compaction_transcript_bytes:
        return "transcript_bytes"
    return None


# --- the plan --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    seq: int
    run_id: str
    run_index: int
    chars: int
    context: tuple[str | None, ...]   # the run's user, room, thread, channel type


_PLAN = sql.SQL(
    "SELECT m.seq, m.run_id, r.run_index, r.status, length(m.content), r.user_id,"
    "       r.group_room_id, r.channel_thread_key, r.channel_type"
    "  FROM agent_context_messages m"
    "  LEFT JOIN agent_session_runs r"
    "    ON r.instance_key = m.instance_key AND r.session_key = m.session_key"
    "   AND r.run_id = m.run_id"
    " WHERE m.instance_key = %s AND m.session_key = %s AND m.seq > %s"
    " ORDER BY m.seq LIMIT %s")


def plan_candidates(conn: psycopg.Connection, settings: Settings, instance_key: str,
                    session_key: str, through: int) -> list[Candidate]:
    """Raw items after the checkpoint, in order, up to the first one of an open run (or
    of no run) or of the newest completed runs kept verbatim."""
    recent = settings.session_compaction_recent_turns
    kept = {run.run_id for run in completed_runs(conn, instance_key, session_key,
                                                  newest_first=True, limit=recent)} \
        if recent > 0 else set()
    out: list[Candidate] = []
    for seq, run_id, run_index, status, chars, *context in conn.execute(
            _PLAN, (instance_key, session_key, through, PLAN_ROWS)):
        if status != "completed" or run_id in kept:
            break
        out.append(Candidate(seq, run_id, run_index, chars, tuple(context)))
    return out


def plan_chunks(candidates: list[Candidate], chunk_tokens: int) -> list[list[Candidate]]:
    """Consecutive chunks of at most ``chunk_tokens`` (an item larger than a chunk is one
    chunk of its own and is cut in the prompt), never mixing conversation contexts."""
    chunks: list[list[Candidate]] = []
    current: list[Candidate] = []
    tokens = 0
    for item in candidates:
        cost = min(-(-item.chars // CHARS_PER_TOKEN) if item.chars else 0, chunk_tokens)
        if current and (tokens + cost > chunk_tokens or len(current) >= CHUNK_ROWS
                        or item.context != current[0].context):
            chunks.append(current)
            current, tokens = [], 0
        current.append(item)
        tokens += cost
    if current:
        chunks.append(current)
    return chunks


_CONTENT = sql.SQL(
    "SELECT seq, role, user_id, metadata, coalesce(occurred_at, created_at),"
    "       channel_thread_key,"
    "       CASE WHEN length(content) > %(cap)s THEN left(content, %(half)s) ELSE content END,"
    "       CASE WHEN length(content) > %(cap)s THEN right(content, %(half)s) END,"
    "       length(content)"
    "  FROM agent_context_messages"
    " WHERE instance_key = %(i)s AND session_key = %(s)s"
    "   AND seq BETWEEN %(first)s AND %(last)s"
    " ORDER BY seq")


def _author(role: str, user_id: str | None, metadata: Any) -> str | None:
    meta = metadata if isinstance(metadata, dict) else {}
    if role == "user":
        name = meta.get("authorName")
        return name if isinstance(name, str) and name else user_id
    if role == "tool":
        name = meta.get("tool") or meta.get("name")
        return name if isinstance(name, str) else None
    return None


def chunk_items(conn: psycopg.Connection, settings: Settings, instance_key: str,
                session_key: str, chunk: list[Candidate]
                ) -> tuple[list[SummaryItem], str | None]:
    """The chunk's items as the summary sees them (an item larger than the whole chunk:
    head and tail), and the channel thread they all share (else None)."""
    cap = chars_for_tokens(settings.session_compaction_chunk_tokens)
    half = max(1, cap // 2 - 40)
    run_of = {item.seq: item.run_index for item in chunk}
    items: list[SummaryItem] = []
    threads: set[str | None] = set()
    rows = conn.execute(_CONTENT, {"i": instance_key, "s": session_key, "cap": cap,
                                   "half": half, "first": chunk[0].seq,
                                   "last": chunk[-1].seq})
    for seq, role, user_id, metadata, when, thread, head, tail, chars in rows:
        text = head if tail is None else \
            f"{head} … [{chars - 2 * half} characters left out] … {tail}"
        items.append(SummaryItem(seq, role, _author(role, user_id, metadata), text, chars,
                                 when, run_of.get(seq)))
        threads.add(thread)
    shared = next(iter(threads)) if len(threads) == 1 else None
    return items, shared


def span_of_items(items: list[SummaryItem]) -> Span:
    times = [item.when for item in items if item.when is not None]
    runs = [item.run_index for item in items if item.run_index is not None]
    return Span(items[0].seq, items[-1].seq, min(runs) if runs else None,
                max(runs) if runs else None, min(times) if times else None,
                max(times) if times else None)


def span_of_range(conn: psycopg.Connection, instance_key: str, session_key: str,
                  first_seq: int, last_seq: int) -> Span:
    row = conn.execute(
        "SELECT min(r.run_index), max(r.run_index),"
        "       min(coalesce(m.occurred_at, m.created_at)),"
        "       max(coalesce(m.occurred_at, m.created_at))"
        "  FROM agent_context_messages m"
        "  LEFT JOIN agent_session_runs r"
        "    ON r.instance_key = m.instance_key AND r.session_key = m.session_key"
        "   AND r.run_id = m.run_id"
        " WHERE m.instance_key = %s AND m.session_key = %s AND m.seq BETWEEN %s AND %s",
        (instance_key, session_key, first_seq, last_seq)).fetchone()
    return Span(first_seq, last_seq, *row)


