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
4. per chunk: a summary (:mod:`memory_platform.features.sessions.summarise`: the model under the
   quality guard, one retry, else the deterministic fallback; the offline model's answer is
   the deterministic summary), then ONE transaction as the **checkpoint**: the leaf summary,
   its message links, the rewritten assembly (:mod:`memory_platform.features.sessions.assembly`) and
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

This module is the pass; :mod:`.compaction_plan` decides what is due and plans the chunks,
:mod:`.compaction_writes` writes the checkpoints and the summary memory rows.
"""

from __future__ import annotations

import copy
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg

from memory_platform.features.dreaming.extractive import NAME as EXTRACTIVE
from memory_platform.features.dreaming.inputs import is_automation_session
from memory_platform.features.sessions import assembly
from memory_platform.features.sessions.compaction_plan import (
    Candidate,
    chunk_items,
    due_trigger,
    plan_candidates,
    plan_chunks,
    span_of_items,
    span_of_range,
)
from memory_platform.features.sessions.compaction_writes import (
    checkpoint_condensed,
    checkpoint_leaf,
    lock_section,
    now_text,
    repair_memories,
    session_owner,
    summary_memory,
)
from memory_platform.features.sessions.model import (
    SessionModel,
    complete,
    session_model,
    session_model_name,
)
from memory_platform.features.sessions.report import OperationReport
from memory_platform.features.sessions.runs import get_run, latest_run
from memory_platform.features.sessions.state import COMPACTION_SECTION, merge_section, read_section
from memory_platform.features.sessions.summarise import (
    ChildSummary,
    ModelCall,
    SummaryOutcome,
    condensed_request,
    condensed_source,
    condensed_summary,
    leaf_request,
    leaf_source,
    leaf_summary,
    summarise,
)
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError

__all__ = ["CompactionReport", "checkpoint_leaf", "compact_session",
           "compaction_deadline_seconds"]

HARD_CAP_SECONDS = 50.0
# Bounds of one pass (work per pass, not behaviour: what is left waits for the next pass).
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



# --- the pass --------------------------------------------------------------------------------

def _leaves(conn: psycopg.Connection, settings: Settings, instance_key: str,
            session_key: str, chunks: list[list[Candidate]], call: ModelCall | None,
            model_name: str, owner: str | None, write_memories: bool, deadline: float,
            report: CompactionReport) -> None:
    target = settings.session_compaction_summary_tokens
    max_chars = settings.memory_max_chars
    for index, chunk in enumerate(chunks):
        if time.monotonic() >= deadline:
            report.timed_out = True
            report.chunks_left = len(chunks) - index
            return
        items, thread = chunk_items(conn, settings, instance_key, session_key, chunk)
        if not items:
            break
        last_run = get_run(conn, instance_key, session_key, chunk[-1].run_id)
        commit_if_idle(conn)  # nothing stays open while the model works
        span = span_of_items(items)
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
            memory_id = summary_memory(conn, settings, instance_key, session_key,
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
        span = span_of_range(conn, instance_key, session_key, first_seq, last_seq)
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
        summary_id = checkpoint_condensed(
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
        section = lock_section(conn, instance_key, session_key, owner)
        merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
            "passes": int(section.get("passes", 0)) + 1, "lastOutcome": report.reason,
            "lastTrigger": report.trigger, "lastTimedOut": report.timed_out,
            "lastPassFinishedAt": now_text(),
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
        repair_memories(conn, settings, instance_key, session_key, report)

    section = read_section(conn, instance_key, session_key, COMPACTION_SECTION)
    through = int(section.get("compactedThroughSeq", -1))
    latest = latest_run(conn, instance_key, session_key)
    report.trigger = due_trigger(conn, settings, instance_key, session_key, section, through,
                                 latest, force, report.measures)
    chunks: list[list[Candidate]] = []
    if report.trigger is not None:
        candidates = plan_candidates(conn, settings, instance_key, session_key, through)
        report.candidates = len(candidates)
        chunks = plan_chunks(candidates, settings.session_compaction_chunk_tokens)
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
    owner = session_owner(conn, instance_key, session_key)
    pending = chunks[-1][-1].seq if chunks else None
    if chunks:
        with committed_unit(conn):
            lock_section(conn, instance_key, session_key, owner)
            merge_section(conn, instance_key, session_key, COMPACTION_SECTION, {
                "pendingThroughSeq": pending, "lastTrigger": report.trigger,
                "lastPassRunIndex": latest.run_index if latest else -1,
                "lastPassStartedAt": now_text()})
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
