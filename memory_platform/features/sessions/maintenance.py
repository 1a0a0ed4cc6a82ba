"""One session's background maintenance pass, and a batch of the sessions that are due.

A pass holds the session's advisory lock (one pass per session at a time, across
processes), runs the three operations in the specification's order (shared facts of the
completed runs, then the flush of durable facts, then compaction) and writes one
``agent_session_maintenance_events`` row per operation: the audit trail and the source of
the ``/metrics`` numbers. It then records the time it *started* as the session's done-mark,
so requests that arrived while it ran leave exactly one trailing pass (``state.py``).

Each operation runs in its own ``try``: one that fails (a broken provider, even a database
error) does not stop the others. None of them raises on a model problem: they report
``failed`` and leave their work pending, or compaction falls back deterministically. A pass
with a failed operation keeps the session due after a backoff (``retry_later``: 30 s,
doubled per consecutive failed pass, at most an hour by default), so a broken provider is
retried without being hammered.

The maintenance model is resolved once per pass. When it cannot be resolved (not
configured), each operation is called without one: it resolves it itself, finds it
unavailable and reports that (failed and retryable; compaction falls back), unless it has
nothing to do anyway.

Self-committing (``db/units.py``): call it on a connection outside a transaction.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from memory_platform.features.sessions import state
from memory_platform.features.sessions.compaction import compact_session
from memory_platform.features.sessions.flush import flush_session
from memory_platform.features.sessions.metrics import OPERATIONS, OUTCOMES, OperationStats
from memory_platform.features.sessions.model import SessionModel, session_model
from memory_platform.features.sessions.shared_facts import extract_shared_facts
from memory_platform.foundation.db.units import (
    commit_if_idle,
    committed_unit,
    require_idle,
    rollback_if_open,
)
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import find_secret
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import ModelError

__all__ = ["OPERATIONS", "OUTCOMES", "PASS_OUTCOMES", "MAINTENANCE_SECTION",
           "MaintenanceBatch", "OperationResult", "OperationTotals", "SessionPass",
           "backoff_seconds", "maintain_session", "run_due_sessions"]

SHARED_FACTS, MEMORY_FLUSH, HISTORY_COMPACTION = OPERATIONS       # the order of a pass
# of a pass: done (every operation completed or skipped), failed (one failed: retried after
# a backoff), busy (another pass holds the lock: nothing done), not_due (done meanwhile)
PASS_OUTCOMES = ("done", "failed", "busy", "not_due")

# agent_session_state.state_json section of the queue's own bookkeeping
MAINTENANCE_SECTION = "maintenance"

_MAX_ERROR_CHARS = 500
_MAX_DETAIL_BYTES = 16_000


@dataclass(frozen=True)
class OperationResult:
    """What one operation of a pass did (the event row holds the same)."""

    operation: str
    outcome: str                 # completed | failed | skipped
    reason: str
    retries: int
    fallbacks: int
    duration_seconds: float
    rows_written: int            # memories (facts, flush rows) or summaries written
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    raised: bool = False         # an exception escaped the operation (not a reported failure)


@dataclass
class SessionPass:
    """One session's pass (or why there was none)."""

    instance_key: str
    session_key: str
    outcome: str                 # one of PASS_OUTCOMES
    operations: list[OperationResult] = field(default_factory=list)
    started_at: datetime | None = None
    duration_seconds: float = 0.0
    model: str | None = None
    model_error: str | None = None
    retry_at: datetime | None = None      # set when a failure keeps the session due
    consecutive_failures: int = 0
    error: str | None = None              # the pass itself broke (not one operation)

    def operation(self, name: str) -> OperationResult | None:
        return next((o for o in self.operations if o.operation == name), None)

    def summary(self) -> str:
        head = f"{self.instance_key}/{self.session_key}: {self.outcome}"
        parts = [f"{o.operation} {o.outcome}" + (f" ({o.reason})" if o.reason else "")
                 for o in self.operations]
        text = head + (": " + ", ".join(parts) if parts else "")
        if self.retry_at is not None:
            text += f"; retry after {self.retry_at.isoformat(timespec='seconds')}"
        if self.error:
            text += f"; error: {self.error}"
        return text + f" [{self.duration_seconds:.2f}s]"


@dataclass
class OperationTotals(OperationStats):
    """One operation over a batch: the event aggregate's numbers, plus the rows written."""

    rows_written: int = 0

    @property
    def runs(self) -> int:
        return sum(self.outcomes.values())

    def add(self, result: OperationResult) -> None:
        self.merge(OperationStats(
            result.operation, {result.outcome: 1}, result.retries, result.fallbacks,
            result.duration_seconds, result.duration_seconds))
        self.rows_written += result.rows_written


@dataclass
class MaintenanceBatch:
    """The sessions one run handled (oldest request first) and their totals."""

    passes: list[SessionPass]
    limit: int
    due: int                     # sessions that were due when the batch started (<= limit)
    duration_seconds: float = 0.0

    @property
    def more(self) -> bool:
        """The due list filled the limit: more sessions may be waiting."""
        return self.due >= self.limit

    def count(self, outcome: str) -> int:
        return sum(1 for p in self.passes if p.outcome == outcome)

    @property
    def sessions_done(self) -> int:
        return self.count("done")

    @property
    def sessions_failed(self) -> int:
        return self.count("failed")

    @property
    def sessions_busy(self) -> int:
        return self.count("busy")

    @property
    def sessions_not_due(self) -> int:
        return self.count("not_due")

    def totals(self) -> dict[str, OperationTotals]:
        totals = {name: OperationTotals(name) for name in OPERATIONS}
        for session_pass in self.passes:
            for result in session_pass.operations:
                totals[result.operation].add(result)
        return totals

    def raised(self) -> list[tuple[SessionPass, str]]:
        """Errors that escaped an operation or a pass (bugs, database errors), as
        (pass, text): reported model failures are not among them."""
        found = [(p, f"{o.operation}: {o.error}") for p in self.passes
                 for o in p.operations if o.raised]
        return found + [(p, p.error) for p in self.passes if p.error]

    def summary(self) -> str:
        return "; ".join(self.summary_lines())

    def summary_lines(self) -> list[str]:
        """The batch's sessions, then one line per operation that ran."""
        parts = [f"{len(self.passes)} session(s): {self.sessions_done} done, "
                 f"{self.sessions_failed} failed, {self.sessions_busy} busy, "
                 f"{self.sessions_not_due} no longer due"]
        for name, total in self.totals().items():
            if total.runs:
                counts = ", ".join(f"{n} {k}" for k, n in total.outcomes.items() if n)
                parts.append(f"{name}: {counts}; {total.retries} retries, "
                             f"{total.fallbacks} fallbacks, {total.rows_written} rows, "
                             f"{total.duration_seconds_total:.2f}s total, "
                             f"{total.duration_seconds_max:.2f}s max")
        if self.more:
            parts.append("more sessions may be due")
        return parts


# --- one session ---------------------------------------------------------------------------


def maintain_session(conn: psycopg.Connection, settings: Settings, instance_key: str,
                     session_key: str, *, model: SessionModel | None = None) -> SessionPass:
    """One pass over the session now (due or not): shared facts, flush, compaction.

    ``busy`` and nothing done when another pass holds the session's lock: that pass marks
    the session done as of its start, so a request made since leaves a trailing pass."""
    return _maintain(conn, settings, instance_key, session_key, model=model,
                     only_if_due=False)


def backoff_seconds(settings: Settings, failures: int) -> float:
    """The wait before a session whose last ``failures`` passes failed is due again."""
    exponent = min(max(failures, 1) - 1, 32)
    return min(settings.session_maintenance_retry_seconds * (2 ** exponent),
               settings.session_maintenance_retry_max_seconds)


def _maintain(conn: psycopg.Connection, settings: Settings, instance_key: str,
              session_key: str, *, model: SessionModel | None,
              only_if_due: bool) -> SessionPass:
    require_idle(conn, "maintain_session")
    clock = time.perf_counter()
    locked = state.try_lock_session(conn, instance_key, session_key)
    commit_if_idle(conn)
    if not locked:
        return SessionPass(instance_key, session_key, "busy")
    try:
        if only_if_due and not state.is_due(conn, instance_key, session_key):
            commit_if_idle(conn)
            return SessionPass(instance_key, session_key, "not_due",
                               duration_seconds=time.perf_counter() - clock)
        started = state.start_pass(conn, instance_key, session_key)
        failures = int(state.read_section(conn, instance_key, session_key,
                                          MAINTENANCE_SECTION).get("consecutiveFailures") or 0)
        commit_if_idle(conn)
        session_pass = SessionPass(instance_key, session_key, "done", started_at=started)
        if model is None:
            try:
                model = session_model(settings)
            except ModelError as exc:   # its reason never holds a key (llm/base.py)
                session_pass.model_error = _short(exc.reason)
        session_pass.model = model.name if model is not None else None

        for name, call in _operations(conn, settings, instance_key, session_key, model):
            result = _run_operation(conn, name, call)
            _record_event(conn, instance_key, session_key, result, session_pass.model)
            session_pass.operations.append(result)

        failed = any(o.outcome == "failed" for o in session_pass.operations)
        session_pass.outcome = "failed" if failed else "done"
        session_pass.consecutive_failures = failures + 1 if failed else 0
        session_pass.duration_seconds = time.perf_counter() - clock
        with committed_unit(conn):
            state.finish_pass(conn, instance_key, session_key, started)
            if failed:
                session_pass.retry_at = state.retry_later(
                    conn, instance_key, session_key,
                    backoff_seconds(settings, session_pass.consecutive_failures))
            state.merge_section(conn, instance_key, session_key, MAINTENANCE_SECTION, {
                "lastPassAt": started.isoformat(),
                "lastOutcome": session_pass.outcome,
                "consecutiveFailures": session_pass.consecutive_failures,
                "retryAt": session_pass.retry_at.isoformat() if session_pass.retry_at
                else None,
                "operations": {o.operation: o.outcome for o in session_pass.operations},
                "model": session_pass.model,
            })
        return session_pass
    finally:
        if not conn.closed and not conn.broken:
            rollback_if_open(conn)
            state.unlock_session(conn, instance_key, session_key)
            commit_if_idle(conn)


def _operations(conn: psycopg.Connection, settings: Settings, instance_key: str,
                session_key: str, model: SessionModel | None
                ) -> list[tuple[str, Callable[[], Any]]]:
    return [
        (SHARED_FACTS, lambda: extract_shared_facts(conn, settings, instance_key, session_key,
                                                    model=model)),
        (MEMORY_FLUSH, lambda: flush_session(conn, settings, instance_key, session_key,
                                             model=model)),
        (HISTORY_COMPACTION, lambda: compact_session(conn, settings, instance_key,
                                                     session_key, model=model)),
    ]


def _run_operation(conn: psycopg.Connection, name: str, call: Callable[[], Any]
                   ) -> OperationResult:
    clock = time.perf_counter()
    try:
        report = call()
    except Exception as exc:  # recorded; the pass goes on with the next operation
        if conn.closed or conn.broken:
            raise
        rollback_if_open(conn)
        return OperationResult(name, "failed", "error", 0, 0, time.perf_counter() - clock, 0,
                               error=_exception_text(exc),
                               details={"exception": type(exc).__name__}, raised=True)
    elapsed = time.perf_counter() - clock
    commit_if_idle(conn)
    outcome = str(getattr(report, "outcome", "failed"))
    if outcome not in OUTCOMES:
        outcome = "failed"
    duration = float(getattr(report, "duration_seconds", 0.0) or 0.0)
    error = getattr(report, "error", None)
    return OperationResult(
        name, outcome, str(getattr(report, "reason", "") or ""),
        max(0, int(getattr(report, "retries", 0) or 0)),
        max(0, int(getattr(report, "fallbacks", 0) or 0)),
        duration if duration > 0 else elapsed,
        _rows_written(name, report),
        error=_short(str(error)) if error else None,      # no secrets, by contract
        details=_safe_details(report))


def _rows_written(name: str, report: Any) -> int:
    """Memories (facts, flush rows) or summaries the operation wrote."""
    if name == HISTORY_COMPACTION:
        return int(getattr(report, "leaf_summaries", 0) or 0) \
            + int(getattr(report, "condensed_summaries", 0) or 0)
    ids = getattr(report, "memory_ids", None) or ()
    return len(ids) if not isinstance(ids, int) else ids


def _safe_details(report: Any) -> dict[str, Any]:
    """The report's details as JSON, never a credential and never unbounded."""
    try:
        details = report.details()
        text = json.dumps(details, default=str)
    except Exception as exc:  # a report that cannot describe itself still gets its event
        return {"detailsError": type(exc).__name__}
    if not isinstance(details, dict):
        return {"detailsError": "not an object"}
    if find_secret(text):
        return {"detailsWithheld": "credential-like text"}
    if len(text.encode()) > _MAX_DETAIL_BYTES:
        return {"detailsWithheld": f"larger than {_MAX_DETAIL_BYTES} bytes"}
    return json.loads(text)


def _short(text: str) -> str:
    return " ".join(str(text).split())[:_MAX_ERROR_CHARS]


def _exception_text(exc: BaseException) -> str:
    """An unexpected exception's message may quote anything (a statement's parameters, a
    row): it is withheld when it looks like it holds a credential."""
    text = _short(f"{type(exc).__name__}: {exc}")
    return f"{type(exc).__name__} (message withheld: it looks like it holds a credential)" \
        if find_secret(text) else text


def _record_event(conn: psycopg.Connection, instance_key: str, session_key: str,
                  result: OperationResult, model: str | None) -> None:
    """The operation's event row, committed at once (the metrics read settled rows only)."""
    details = {**result.details, "reason": result.reason, "rowsWritten": result.rows_written}
    if model:
        details["model"] = model
    if result.error:
        details["error"] = result.error
    with committed_unit(conn):
        conn.execute(
            "INSERT INTO agent_session_maintenance_events (instance_key, session_key,"
            " operation, outcome, retries, fallbacks, duration_ms, details)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (instance_key, session_key, result.operation, result.outcome, result.retries,
             result.fallbacks, max(0.0, result.duration_seconds * 1000.0), Jsonb(details)))


# --- the due sessions ----------------------------------------------------------------------


Progress = Callable[[int, int, SessionPass], None]


def run_due_sessions(conn: psycopg.Connection, settings: Settings, *,
                     limit: int | None = None, instance_key: str | None = None,
                     progress: Progress | None = None) -> MaintenanceBatch:
    """A pass over each due session, oldest request first, at most ``limit``
    (``session_maintenance_max_sessions``). A session done by another process meanwhile is
    ``not_due``, one whose lock is held ``busy``; a pass that breaks is recorded and the
    batch goes on. ``progress(number, total, session_pass)`` is called after each session."""
    require_idle(conn, "run_due_sessions")
    limit = settings.session_maintenance_max_sessions if limit is None else limit
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    clock = time.perf_counter()
    due = state.due_sessions(conn, limit, instance_key)
    commit_if_idle(conn)
    batch = MaintenanceBatch([], limit, len(due))
    for number, item in enumerate(due, 1):
        try:
            session_pass = _maintain(conn, settings, item.instance_key, item.session_key,
                                     model=None, only_if_due=True)
        except Exception as exc:  # recorded; the next session is independent
            if conn.closed or conn.broken:
                raise
            rollback_if_open(conn)
            session_pass = SessionPass(item.instance_key, item.session_key, "failed",
                                       error=_exception_text(exc))
        batch.passes.append(session_pass)
        if progress is not None:
            progress(number, len(due), session_pass)
    batch.duration_seconds = time.perf_counter() - clock
    return batch
