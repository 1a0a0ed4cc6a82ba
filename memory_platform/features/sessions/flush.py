"""Flush: durable facts of a session's recent turns into ``source_type='flush'`` memories.

The specification's "Flushing", before compaction shrinks the history: the facts of the runs
since the last flush are written as assertion-less episodic rows (Dreaming's activity input),
each in the audience of the run it was said in (the session's sharing rules and subject
refs, through ``store_memory``), so later retrieval finds them without replaying the
transcript. The flush reads the conversation, not only the people's lines
(``FLUSH_ROLES``): what the assistant stated as settled ("I booked the review for Friday at
14:00.") becomes a flush row too, as ``assistant_inference``. Shared facts stay with the
people's own turns.

When it is due:

* the transcript of the last ``session_flush_recent_runs`` (8) completed runs holds at least
  ``session_flush_transcript_bytes`` (18,000), or the budget is under pressure (the newest
  completed run's prompt tokens reach ``session_budget_pressure_ratio`` of its context
  budget, else of ``session_context_budget_tokens``);
* and at least ``session_flush_min_new_turns`` (3) completed runs came since the last flush,
  unless the budget is under pressure. ``force`` skips both triggers (not the need for a new
  run).

Automation sessions (the one prefix list Dreaming uses) are never flushed. Every decision is
recorded in ``agent_session_state.state_json.memoryFlush``: ``lastFlushedAt``,
``lastFlushedRunCount`` (the newest flushed run_index + 1), ``lastMemoryId``
(``agent_memories/<id>``), ``lastBytesWritten``, ``flushes``, ``lastSkipReason`` and
``lastBudgetCheck``. A model failure changes no state: the same runs are flushed on the next
pass.

Call it on a connection outside a transaction block: it commits its own units.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg

from memory_platform.features.dreaming.inputs import is_automation_session
from memory_platform.features.sessions.facts import (
    TurnItem,
    extract_facts,
    fact_model,
    read_run_items,
    store_fact,
)
from memory_platform.features.sessions.model import SessionModel
from memory_platform.features.sessions.report import OperationReport
from memory_platform.features.sessions.runs import SessionRun, completed_runs
from memory_platform.features.sessions.state import FLUSH_SECTION, merge_section, read_section
from memory_platform.features.sessions.tokens import chars_for_tokens
from memory_platform.foundation.db.units import committed_unit
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.llm.base import ModelError

MEMORY_CLASS = "flush"
FLUSH_ROLES = ("user", "assistant")  # the offline extraction reads both sides
MAX_RUN_ITEMS = 500  # the newest items of one run that are read


@dataclass(frozen=True)
class BudgetCheck:
    prompt_tokens: int | None
    budget_tokens: int
    ratio: float
    pressure: bool

    def as_state(self) -> dict[str, Any]:
        return {"promptTokens": self.prompt_tokens, "budgetTokens": self.budget_tokens,
                "ratio": round(self.ratio, 4), "pressure": self.pressure}


@dataclass
class FlushReport(OperationReport):
    memory_ids: list[uuid.UUID] = field(default_factory=list)
    deduplicated: int = 0
    facts_proposed: int = 0
    rejected: int = 0
    runs_flushed: int = 0
    transcript_bytes: int = 0
    new_runs: int = 0
    bytes_written: int = 0
    budget: BudgetCheck | None = None
    model: str | None = None
    reject_reasons: Counter[str] = field(default_factory=Counter)

    def details(self) -> dict[str, Any]:
        return {"reason": self.reason, "runsFlushed": self.runs_flushed,
                "newRuns": self.new_runs, "transcriptBytes": self.transcript_bytes,
                "factsProposed": self.facts_proposed, "written": len(self.memory_ids),
                "deduplicated": self.deduplicated, "rejected": self.rejected,
                "bytesWritten": self.bytes_written, "model": self.model,
                "budget": self.budget.as_state() if self.budget else None,
                "rejectReasons": dict(sorted(self.reject_reasons.items()))}


def budget_check(settings: Settings, run: SessionRun) -> BudgetCheck:
    """Budget pressure as of the run: its prompt tokens against its context budget (or the
    configured default)."""
    budget = run.context_budget_tokens or settings.session_context_budget_tokens
    prompt = run.prompt_tokens
    ratio = (prompt or 0) / budget
    return BudgetCheck(prompt, budget, ratio,
                       prompt is not None and ratio >= settings.session_budget_pressure_ratio)


def _new_runs(conn: psycopg.Connection, instance_key: str, session_key: str,
              flushed_count: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM agent_session_runs"
        " WHERE instance_key = %s AND session_key = %s AND status = 'completed'"
        "   AND run_index >= %s",
        (instance_key, session_key, flushed_count)).fetchone()[0]


def _count(section: dict[str, Any], key: str) -> int:
    """A counter of the state section (0 when missing or not a count)."""
    value = section.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else 0


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _skip(conn: psycopg.Connection, report: FlushReport, instance_key: str, session_key: str,
          reason: str, why: str, started: float) -> FlushReport:
    """A skipped flush: the reason goes to the report and to the state section."""
    values: dict[str, Any] = {"lastSkipReason": why, "lastSkippedAt": _now()}
    if report.budget is not None:
        values["lastBudgetCheck"] = report.budget.as_state()
    with committed_unit(conn):
        merge_section(conn, instance_key, session_key, FLUSH_SECTION, values)
    report.outcome, report.reason = "skipped", reason
    report.duration_seconds = time.monotonic() - started
    return report


def _items_to_flush(conn: psycopg.Connection, settings: Settings,
                    runs: list[SessionRun]) -> list[TurnItem]:
    """The items of ``runs`` (newest first in ``runs``) within the input budget, in order:
    the newest runs are kept when the window holds more than one call can read."""
    budget = chars_for_tokens(settings.session_facts_input_tokens)
    chosen: list[list[TurnItem]] = []
    used = 0
    for run in runs:
        if used >= budget:
            break
        items = read_run_items(conn, run, limit=MAX_RUN_ITEMS)
        used += sum(len(item.content) for item in items)
        chosen.append(items)
    return [item for items in reversed(chosen) for item in items]


def flush_session(conn: psycopg.Connection, settings: Settings, instance_key: str,
                  session_key: str, *, model: SessionModel | None = None, force: bool = False,
                  embedder: EmbeddingProvider | None = None) -> FlushReport:
    """Flush the session's recent turns when due (module docstring). Never raises on a model
    problem (outcome ``failed``, state unchanged); database errors propagate."""
    started = time.monotonic()
    report = FlushReport()
    if is_automation_session(settings, session_key):
        return _skip(conn, report, instance_key, session_key, "automation_session",
                     "automation_session", started)
    section = read_section(conn, instance_key, session_key, FLUSH_SECTION)
    flushed_count = _count(section, "lastFlushedRunCount")
    recent = completed_runs(conn, instance_key, session_key,
                            limit=settings.session_flush_recent_runs, newest_first=True)
    if not recent:
        return _skip(conn, report, instance_key, session_key, "not_due", "no_runs", started)
    report.budget = budget_check(settings, recent[0])
    report.transcript_bytes = sum(run.transcript_bytes for run in recent)
    report.new_runs = _new_runs(conn, instance_key, session_key, flushed_count)
    pressure = report.budget.pressure
    if report.new_runs == 0:
        return _skip(conn, report, instance_key, session_key, "not_due", "no_new_turns",
                     started)
    if not force:
        if report.transcript_bytes < settings.session_flush_transcript_bytes and not pressure:
            return _skip(conn, report, instance_key, session_key, "not_due",
                         "below_threshold", started)
        if report.new_runs < settings.session_flush_min_new_turns and not pressure:
            return _skip(conn, report, instance_key, session_key, "not_due",
                         "too_few_new_turns", started)

    runs = completed_runs(conn, instance_key, session_key, after_index=flushed_count - 1,
                          limit=settings.session_flush_recent_runs, newest_first=True)
    items = _items_to_flush(conn, settings, runs)
    try:
        model = fact_model(settings, model)
        report.model = model.name
        extraction = extract_facts(
            model, items, max_facts=settings.session_flush_max_facts,
            max_input_chars=chars_for_tokens(settings.session_facts_input_tokens),
            roles=FLUSH_ROLES)
    except ModelError as exc:
        report.outcome, report.reason, report.error = "failed", f"model_{exc.code}", exc.reason
        report.duration_seconds = time.monotonic() - started
        return report

    report.retries = extraction.retries
    report.facts_proposed = extraction.proposed
    report.rejected = len(extraction.rejected)
    report.reject_reasons.update(r.reason for r in extraction.rejected)
    by_id = {run.run_id: run for run in runs}
    last_memory: uuid.UUID | None = None
    for fact in extraction.facts:
        run = by_id[fact.item.run_id] if fact.item.run_id in by_id else None
        if run is None:  # an item without its run: cannot be (read_run_items reads by run)
            report.rejected += 1
            report.reject_reasons["no_run"] += 1
            continue
        stored = store_fact(
            conn, settings, run, fact, source_type="flush", memory_class=MEMORY_CLASS,
            metadata={"sessionKey": run.session_key, "runId": run.run_id,
                      "sourceMessageId": fact.item.message_id, "flushedBy": extraction.model,
                      "assertionType": fact.assertion_type, "excerpt": fact.excerpt},
            embedder=embedder)
        if isinstance(stored, str):
            report.rejected += 1
            report.reject_reasons[stored] += 1
            continue
        last_memory = stored.id
        if stored.deduplicated:
            report.deduplicated += 1
        else:
            report.memory_ids.append(stored.id)
            report.bytes_written += len(fact.text.encode())

    report.runs_flushed = len(runs)
    values: dict[str, Any] = {
        "lastFlushedAt": _now(),
        "lastFlushedRunCount": max(run.run_index for run in runs) + 1,
        "lastBytesWritten": report.bytes_written,
        "lastSkipReason": None,
        "lastBudgetCheck": report.budget.as_state(),
        "lastModel": extraction.model,
        "flushes": _count(section, "flushes") + 1,
    }
    if last_memory is not None:
        values["lastMemoryId"] = f"agent_memories/{last_memory}"
    with committed_unit(conn):
        merge_section(conn, instance_key, session_key, FLUSH_SECTION, values)
    report.outcome = "completed"
    report.reason = "flushed" if extraction.facts else "no_facts"
    report.duration_seconds = time.monotonic() - started
    return report
