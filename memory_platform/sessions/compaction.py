"""History compaction: older raw items into leaf summaries, leaf summaries into condensed
ones (specification, "Compactization / compaction" and "Lossless context graph").

A pass of :func:`compact_session`:

1. **repairs** leaf summaries without their memory row (a crash between a chunk's commit
   and its memory write): the row is looked up by its metadata first, so no summary ever
   gets a second one;
2. decides whether compaction is **due** (unless forced): enough uncompacted transcript
   bytes and enough new completed runs since the last pass; or, aggressively and without a
   turn minimum, raw history over its share of the context budget or the latest run's
   prompt near the budget; or an earlier pass left chunks unfinished (timeout, crash);
3. **plans** the candidates: raw items of completed runs after the checkpoint
   (``compactedThroughSeq``), in order, up to the first item of an open run or of the newest
   ``session_compaction_recent_turns`` completed runs (those stay verbatim; ranges stay
   contiguous), cut into chunks of at most ``session_compaction_chunk_tokens`` that never mix
   two conversation contexts (a summary's memory row has one audience);
4. per chunk: a summary (:mod:`memory_platform.sessions.summarise`: the model under the
   quality guard, one retry, else the deterministic fallback; the offline model's answer is
   the deterministic summary), then ONE transaction as the **checkpoint**: the leaf summary,
   its message links, the rewritten assembly (:mod:`memory_platform.sessions.assembly`) and
   the ``compaction`` state section; then the summary's ``source_type='summary'`` memory row
   through the write path, in the audience of the chunk's last run;
5. **condenses** while the assembly starts with ``session_condense_fanout`` summaries of
   one depth: the oldest of them become one summary a depth above (no memory row: its
   leaves are memory rows already), checkpointed the same way.

The whole pass has one deadline: ``session_compaction_timeout_seconds``, never above 50 s
(:data:`HARD_CAP_SECONDS`) nor the maintenance phase timeout; every model call gets the
time that is left, and no chunk starts after it. A pass that stops early reports
``chunks_left``; the next one resumes at the first unfinished chunk. The summary per
(session, depth, first item) is unique in the database and the checkpoint re-reads the
state under its row lock, so a resumed or a racing pass cannot write a second one. Raw
messages are never deleted: every one stays reachable from every summary above it through
``agent_context_summary_parents`` and ``agent_context_summary_messages``.
"""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql

from memory_platform.access import AccessContext
from memory_platform.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.dreaming.extractive import NAME as EXTRACTIVE
from memory_platform.dreaming.inputs import is_automation_session
from memory_platform.errors import AccessDenied, InvalidInput
from memory_platform.llm.base import Completion, JsonRequest, ModelError
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.sessions import assembly
from memory_platform.sessions.items import lock_session_items
from memory_platform.sessions.model import (
    SessionModel,
    complete,
    session_model,
    session_model_name,
)
from memory_platform.sessions.report import OperationReport
from memory_platform.sessions.runs import SessionRun, completed_runs, get_run, latest_run
from memory_platform.sessions.state import (
    COMPACTION_SECTION,
    ensure_state,
    merge_section,
    read_section,
)
from memory_platform.sessions.summarise import (
    ChildSummary,
    ModelCall,
    Span,
    SummaryItem,
    SummaryOutcome,
    condensed_request,
    condensed_source,
    condensed_summary,
    leaf_request,
    leaf_source,
    leaf_summary,
    summarise,
)
from memory_platform.sessions.tokens import CHARS_PER_TOKEN, chars_for_tokens, estimate_tokens
from memory_platform.settings import Settings

HARD_CAP_SECONDS = 50.0
MEMORY_CLASS = "session_summary"
# Bounds of one pass (work per pass, not behaviour: what is left waits for the next pass).
PLAN_ROWS = 20_000          # candidate items one pass plans
CHUNK_ROWS = 400            # items in one chunk at most (however small they are)
REPAIR_LIMIT = 50           # leaf summaries without a memory row repaired per pass
HEAD_LIMIT = 256            # leading summaries read for condensation
MAX_CONDENSATIONS = 64      # condensed summaries one pass writes at most
DETAIL_IDS = 50             # ids listed in a report's details (the counts are complete)


@dataclass
class CompactionReport(OperationReport):
    """What one compaction pass did (see the module docstring)."""

    trigger: str | None = None        # 'forced' | 'resume' | 'budget_pressure' |
    #                                   'history_share' | 'transcript_bytes'
    leaf_summaries: int = 0
    condensed_summaries: int = 0
    chunks_left: int = 0
    timed_out: bool = False
    summary_memory_ids: list[uuid.UUID] = field(default_factory=list)
    summary_ids: list[uuid.UUID] = field(default_factory=list)
    memory_repairs: int = 0
    memory_errors: int = 0
    candidates: int = 0
    compacted_through_seq: int | None = None
    model: str | None = None
    produced_by: dict[str, int] = field(default_factory=dict)
    measures: dict[str, Any] = field(default_factory=dict)
    deadline_seconds: float = 0.0

    def details(self) -> dict[str, Any]:
        return {
            "trigger": self.trigger,
            "leafSummaries": self.leaf_summaries,
            "condensedSummaries": self.condensed_summaries,
            "chunksLeft": self.chunks_left,
            "timedOut": self.timed_out,
            "summaryMemoryIds": [str(i) for i in self.summary_memory_ids[:DETAIL_IDS]],
            "summaryIds": [str(i) for i in self.summary_ids[:DETAIL_IDS]],
            "memoryRepairs": self.memory_repairs,
            "memoryErrors": self.memory_errors,
            "candidates": self.candidates,
            "compactedThroughSeq": self.compacted_through_seq,
            "model": self.model,
            "producedBy": dict(self.produced_by),
            "measures": dict(self.measures),
            "deadlineSeconds": self.deadline_seconds,
            "retries": self.retries,
            "fallbacks": self.fallbacks,
        }

    def _count(self, outcome: SummaryOutcome) -> None:
        self.retries += outcome.retries
        self.fallbacks += int(outcome.fallback)
        self.produced_by[outcome.produced_by] = self.produced_by.get(outcome.produced_by, 0) + 1
        if outcome.error:
            self.error = outcome.error


def compaction_deadline_seconds(settings: Settings) -> float:
    """The completion budget of one compaction: the setting, clamped to the 50 s hard cap
    and to the maintenance phase timeout (it can only be lowered)."""
    phase = (settings.maintenance_phase_timeout_seconds_override
             or settings.dream_phase_timeout_minutes * 60.0)
    return min(settings.session_compaction_timeout_seconds, HARD_CAP_SECONDS, phase)


# --- the model -------------------------------------------------------------------------------

def _model_call(settings: Settings, model: SessionModel | None) -> tuple[str, ModelCall | None]:
    """(model name, call): ``call`` None for the offline model. Every call is bounded by
    the time left (a fresh client per call, with that phase timeout)."""
    if model is not None:
        if model.client is None:
            return model.name, None
        client = model.client

        def call_given(request: JsonRequest, remaining: float) -> Completion:
            bounded = client
            if hasattr(client, "phase_timeout_seconds"):
                bounded = copy.copy(client)
                bounded.phase_timeout_seconds = max(0.001, remaining)  # type: ignore[union-attr]
            return bounded.complete_json(request)
        return model.name, call_given
    try:
        name = session_model_name(settings)
    except ValueError as exc:
        reason = str(exc)

        def unusable(request: JsonRequest, remaining: float) -> Completion:
            raise ModelError("unavailable", reason)
        return "invalid", unusable
    if name == EXTRACTIVE:
        return name, None

    def call(request: JsonRequest, remaining: float) -> Completion:
        return complete(session_model(settings, timeout_seconds=remaining), request)
    return name, call


# --- what is due -----------------------------------------------------------------------------

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


def _trigger(conn: psycopg.Connection, settings: Settings, instance_key: str,
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
class _Candidate:
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


def _candidates(conn: psycopg.Connection, settings: Settings, instance_key: str,
                session_key: str, through: int) -> list[_Candidate]:
    """Raw items after the checkpoint, in order, up to the first one of an open run (or
    of no run) or of the newest completed runs kept verbatim."""
    recent = settings.session_compaction_recent_turns
    kept = {run.run_id for run in completed_runs(conn, instance_key, session_key,
                                                  newest_first=True, limit=recent)} \
        if recent > 0 else set()
    out: list[_Candidate] = []
    for seq, run_id, run_index, status, chars, *context in conn.execute(
            _PLAN, (instance_key, session_key, through, PLAN_ROWS)):
        if status != "completed" or run_id in kept:
            break
        out.append(_Candidate(seq, run_id, run_index, chars, tuple(context)))
    return out


def _chunks(candidates: list[_Candidate], chunk_tokens: int) -> list[list[_Candidate]]:
    """Consecutive chunks of at most ``chunk_tokens`` (an item larger than a chunk is one
    chunk of its own and is cut in the prompt), never mixing conversation contexts."""
    chunks: list[list[_Candidate]] = []
    current: list[_Candidate] = []
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


def _chunk_items(conn: psycopg.Connection, settings: Settings, instance_key: str,
                 session_key: str, chunk: list[_Candidate]
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


def _span_of_items(items: list[SummaryItem]) -> Span:
    times = [item.when for item in items if item.when is not None]
    runs = [item.run_index for item in items if item.run_index is not None]
    return Span(items[0].seq, items[-1].seq, min(runs) if runs else None,
                max(runs) if runs else None, min(times) if times else None,
                max(times) if times else None)


def _span_of_range(conn: psycopg.Connection, instance_key: str, session_key: str,
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


# --- checkpoints -----------------------------------------------------------------------------

def _session_owner(conn: psycopg.Connection, instance_key: str,
                   session_key: str) -> str | None:
    row = conn.execute(
        "SELECT coalesce("
        "  (SELECT user_id FROM agent_session_participants"
        "    WHERE instance_key = %(i)s AND session_key = %(s)s AND role = 'owner'),"
        "  (SELECT user_id FROM agent_session_state"
        "    WHERE instance_key = %(i)s AND session_key = %(s)s))",
        {"i": instance_key, "s": session_key}).fetchone()
    return row[0] if row else None


def _lock_section(conn: psycopg.Connection, instance_key: str, session_key: str,
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


def _now() -> str:
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
        section = _lock_section(conn, instance_key, session_key, owner)
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
            "lastCompactedAt": _now(), "lastProducedBy": outcome.produced_by,
            **_totals(section, outcome, "leafSummaries")})
    return summary_id


def _checkpoint_condensed(conn: psycopg.Connection, instance_key: str, session_key: str, *,
                          children: list[assembly.HeadSummary], span: Span,
                          user_id: str | None, owner: str | None,
                          outcome: SummaryOutcome, model: str | None) -> uuid.UUID | None:
    ids = [child.summary_id for child in children]
    with committed_unit(conn):
        section = _lock_section(conn, instance_key, session_key, owner)
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
            "lastCondensedAt": _now(), **_totals(section, outcome, "condensedSummaries")})
    return summary_id


# --- summary memory rows ---------------------------------------------------------------------

def _summary_memory(conn: psycopg.Connection, settings: Settings, instance_key: str,
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


def _repair_memories(conn: psycopg.Connection, settings: Settings, instance_key: str,
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
        if _summary_memory(conn, settings, instance_key, session_key, summary_id, ctx,
                           report) is not None:
            report.memory_repairs += 1
    commit_if_idle(conn)


# --- the pass --------------------------------------------------------------------------------

def _leaves(conn: psycopg.Connection, settings: Settings, instance_key: str,
            session_key: str, chunks: list[list[_Candidate]], call: ModelCall | None,
            model_name: str, owner: str | None, write_memories: bool, deadline: float,
            report: CompactionReport) -> None:
    target = settings.session_compaction_summary_tokens
    max_chars = settings.memory_max_chars
    for index, chunk in enumerate(chunks):
        if time.monotonic() >= deadline:
            report.timed_out = True
            report.chunks_left = len(chunks) - index
            return
        items, thread = _chunk_items(conn, settings, instance_key, session_key, chunk)
        if not items:
            break
        last_run = get_run(conn, instance_key, session_key, chunk[-1].run_id)
        commit_if_idle(conn)  # nothing stays open while the model works
        span = _span_of_items(items)
        outcome = summarise(
            settings, call=call, source=leaf_source(items), deadline=deadline,
            max_chars=max_chars,
            request=lambda complaint, items=items, span=span: leaf_request(
                items, span, target, complaint),
            deterministic=lambda items=items, span=span: leaf_summary(
                items, span, target, max_chars))
        summary_id = checkpoint_leaf(
            conn, instance_key, session_key, span=span, last_run_index=chunk[-1].run_index,
            user_id=owner or (last_run.user_id if last_run else None),
            channel_thread_key=thread, outcome=outcome, model=model_name, owner=owner)
        if summary_id is None:  # another pass got there first: leave the rest to it
            report.chunks_left = len(chunks) - index
            report.measures["raced"] = True
            return
        report._count(outcome)
        report.leaf_summaries += 1
        report.summary_ids.append(summary_id)
        report.compacted_through_seq = span.last_seq
        if write_memories and last_run is not None:
            memory_id = _summary_memory(conn, settings, instance_key, session_key,
                                        summary_id, last_run.access(), report)
            if memory_id is not None:
                report.summary_memory_ids.append(memory_id)


def _condensable(head: list[assembly.HeadSummary],
                 fanout: int) -> list[assembly.HeadSummary] | None:
    """The oldest ``fanout`` summaries of the first run of same-depth summaries at the
    start of the assembly that has at least ``fanout`` of them."""
    group: list[assembly.HeadSummary] = []
    for summary in head:
        if summary.first_seq is None or summary.last_seq is None:
            group = []
            continue
        if group and summary.depth != group[0].depth:
            group = []
        group.append(summary)
        if len(group) == fanout:
            return group
    return None


def _condense(conn: psycopg.Connection, settings: Settings, instance_key: str,
              session_key: str, call: ModelCall | None, model_name: str, owner: str | None,
              deadline: float, report: CompactionReport) -> None:
    target = settings.session_compaction_summary_tokens
    max_chars = settings.memory_max_chars
    fanout = settings.session_condense_fanout
    for _ in range(MAX_CONDENSATIONS):
        group = _condensable(assembly.leading_summaries(conn, instance_key, session_key,
                                                        limit=HEAD_LIMIT), fanout)
        if group is None:
            break
        if time.monotonic() >= deadline:
            report.timed_out = True
            report.chunks_left += 1
            break
        first_seq = min(child.first_seq for child in group if child.first_seq is not None)
        last_seq = max(child.last_seq for child in group if child.last_seq is not None)
        span = _span_of_range(conn, instance_key, session_key, first_seq, last_seq)
        commit_if_idle(conn)
        children = [ChildSummary(c.first_seq or 0, c.last_seq or 0, c.depth, c.content)
                    for c in group]
        outcome = summarise(
            settings, call=call, source=condensed_source(children), deadline=deadline,
            max_chars=max_chars,
            request=lambda complaint, children=children, span=span: condensed_request(
                children, span, target, complaint),
            deterministic=lambda children=children, span=span: condensed_summary(
                children, span, target, max_chars))
        users = {child.user_id for child in group}
        summary_id = _checkpoint_condensed(
            conn, instance_key, session_key, children=group, span=span,
            user_id=owner or (users.pop() if len(users) == 1 else None), owner=owner,
            outcome=outcome, model=model_name)
        if summary_id is None:
            report.measures["raced"] = True
            break
        report._count(outcome)
        report.condensed_summaries += 1
        report.summary_ids.append(summary_id)


def _finish(conn: psycopg.Connection, instance_key: str, session_key: str, owner: str | None,
            report: CompactionReport, pending: int | None) -> None:
    with committed_unit(conn):
        section = _lock_section(conn, instance_key, session_key, owner)
        merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
            "passes": int(section.get("passes", 0)) + 1, "lastOutcome": report.reason,
            "lastTrigger": report.trigger, "lastTimedOut": report.timed_out,
            "lastPassFinishedAt": _now(),
            "pendingThroughSeq": pending if report.chunks_left else None})


def compact_session(conn: psycopg.Connection, settings: Settings, instance_key: str,
                    session_key: str, *, model: SessionModel | None = None,
                    force: bool = False) -> CompactionReport:
    """One compaction pass of a session (see the module docstring). Commits its own units
    of work: call it on a connection outside a transaction. Model problems never raise
    (the deterministic fallback stands in); database errors do."""
    require_idle(conn, "compact_session")
    started = time.monotonic()
    report = CompactionReport(deadline_seconds=compaction_deadline_seconds(settings))
    deadline = started + report.deadline_seconds
    write_memories = not is_automation_session(settings, session_key)
    report.measures["automationSession"] = not write_memories
    if write_memories:
        _repair_memories(conn, settings, instance_key, session_key, report)

    section = read_section(conn, instance_key, session_key, COMPACTION_SECTION)
    through = int(section.get("compactedThroughSeq", -1))
    latest = latest_run(conn, instance_key, session_key)
    report.trigger = _trigger(conn, settings, instance_key, session_key, section, through,
                              latest, force, report.measures)
    chunks: list[list[_Candidate]] = []
    if report.trigger is not None:
        candidates = _candidates(conn, settings, instance_key, session_key, through)
        report.candidates = len(candidates)
        chunks = _chunks(candidates, settings.session_compaction_chunk_tokens)
    fanout = settings.session_condense_fanout
    condensable = _condensable(assembly.leading_summaries(
        conn, instance_key, session_key, limit=HEAD_LIMIT), fanout) is not None
    commit_if_idle(conn)
    if not chunks and not condensable:
        if report.trigger == "resume":  # what an earlier pass left is done by now
            with committed_unit(conn):
                merge_section(conn, instance_key, session_key, COMPACTION_SECTION,
                              {"pendingThroughSeq": None})
        if report.memory_repairs:
            report.outcome, report.reason = "completed", "repaired"
        report.duration_seconds = time.monotonic() - started
        return report

    model_name, call = _model_call(settings, model)
    report.model = model_name
    owner = _session_owner(conn, instance_key, session_key)
    pending = chunks[-1][-1].seq if chunks else None
    if chunks:
        with committed_unit(conn):
            _lock_section(conn, instance_key, session_key, owner)
            merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
                "pendingThroughSeq": pending, "lastTrigger": report.trigger,
                "lastPassRunIndex": latest.run_index if latest else -1,
                "lastPassStartedAt": _now()})
        _leaves(conn, settings, instance_key, session_key, chunks, call, model_name, owner,
                write_memories, deadline, report)
    if not report.chunks_left:
        _condense(conn, settings, instance_key, session_key, call, model_name, owner,
                  deadline, report)

    done = report.leaf_summaries + report.condensed_summaries + report.memory_repairs
    if report.timed_out:
        report.outcome = "completed" if done else "failed"
        report.reason = "timed_out"
        report.error = report.error or "the compaction deadline passed with chunks left"
    elif report.leaf_summaries:
        report.outcome, report.reason = "completed", "compacted"
    elif report.condensed_summaries:
        report.outcome, report.reason = "completed", "condensed"
    elif report.memory_repairs:
        report.outcome, report.reason = "completed", "repaired"
    else:
        report.outcome, report.reason = "skipped", "not_due"
    if report.outcome != "skipped":
        _finish(conn, instance_key, session_key, owner, report, pending)
    report.duration_seconds = time.monotonic() - started
    return report
