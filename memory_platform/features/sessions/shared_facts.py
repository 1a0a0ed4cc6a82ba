"""Shared facts: durable facts of a completed run into ``source_type='fact'`` memories.

The specification's cheap cross-session path ("Shared facts", "Shared user memory"): after a
run completes, the background pass extracts its durable facts (:mod:`.facts`) and writes
each through ``store_memory`` in the context the run was said in, so the sharing rules pick
the audience exactly as for an explicit write: owner-private in an authenticated direct
session, the team when that user shares with the team (opt-out, on by default), the team in
a room or a linked channel, the channel in an unlinked one. Each becomes a canonical
assertion with its own text as evidence: a fact the run's human said verbatim is
``human_direct`` (activated by the write-path policy), anything else waits for review; so
does every fact of a run an agent wrote (``agent_written``). The offline extraction reads
only the people's turns (``USER_ROLES``; the flush reads the assistant's too). A repeat
within the dedup window only touches the existing row's ``updated_at``.

A run is skipped (``shared_facts='skipped'``) when its session is an automation session (the
one prefix list Dreaming uses), when it names no user and no channel (nobody to attribute a
fact to), and when its user turns are together shorter than ``shared_fact_min_chars`` with no
explicit remember intent. A model failure leaves the run ``pending``: the next pass retries
it.

Call it on a connection outside a transaction block: it commits its own units (every
memory write, every run's mark).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg

from memory_platform.features.dreaming.inputs import is_automation_session
from memory_platform.features.sessions.facts import (
    USER_ROLES,
    TurnItem,
    extract_facts,
    fact_model,
    has_remember_intent,
    read_run_items,
    store_fact,
)
from memory_platform.features.sessions.model import SessionModel
from memory_platform.features.sessions.report import OperationReport
from memory_platform.features.sessions.runs import SessionRun, get_run
from memory_platform.features.sessions.tokens import chars_for_tokens
from memory_platform.foundation.db.units import committed_unit
from memory_platform.foundation.settings import Settings
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.llm.base import ModelError

MEMORY_CLASS = "shared_fact"
MAX_RUN_ITEMS = 500  # the newest items of one run that are read


@dataclass
class SharedFactsReport(OperationReport):
    reason: str = "nothing_pending"
    runs_done: int = 0
    runs_skipped: int = 0
    runs_failed: int = 0
    memory_ids: list[uuid.UUID] = field(default_factory=list)
    deduplicated: int = 0
    rejected: int = 0
    facts_proposed: int = 0
    model: str | None = None
    skip_reasons: Counter[str] = field(default_factory=Counter)
    reject_reasons: Counter[str] = field(default_factory=Counter)

    def details(self) -> dict[str, Any]:
        return {"runsDone": self.runs_done, "runsSkipped": self.runs_skipped,
                "runsFailed": self.runs_failed, "factsProposed": self.facts_proposed,
                "written": len(self.memory_ids), "deduplicated": self.deduplicated,
                "rejected": self.rejected, "model": self.model,
                "skipReasons": dict(sorted(self.skip_reasons.items())),
                "rejectReasons": dict(sorted(self.reject_reasons.items()))}


def pending_runs(conn: psycopg.Connection, instance_key: str, session_key: str,
                 limit: int) -> list[SessionRun]:
    """Completed runs still waiting for shared-fact extraction, oldest first."""
    rows = conn.execute(
        "SELECT run_id FROM agent_session_runs"
        " WHERE instance_key = %s AND session_key = %s"
        "   AND status = 'completed' AND shared_facts = 'pending'"
        " ORDER BY run_index LIMIT %s",
        (instance_key, session_key, max(0, limit))).fetchall()
    runs = [get_run(conn, instance_key, session_key, row[0]) for row in rows]
    return [run for run in runs if run is not None]


def _mark(conn: psycopg.Connection, run: SessionRun, state: str) -> None:
    with committed_unit(conn):
        conn.execute(
            "UPDATE agent_session_runs SET shared_facts = %s"
            " WHERE instance_key = %s AND session_key = %s AND run_id = %s"
            "   AND shared_facts = 'pending'",
            (state, run.instance_key, run.session_key, run.run_id))


def _too_short(settings: Settings, user_turns: list[str]) -> bool:
    """Tiny user turns are not worth a model call, unless they ask to remember something."""
    return (sum(len(text.strip()) for text in user_turns) < settings.shared_fact_min_chars
            and not any(has_remember_intent(text) for text in user_turns))


def extract_shared_facts(conn: psycopg.Connection, settings: Settings, instance_key: str,
                         session_key: str, *, model: SessionModel | None = None,
                         limit: int = 20,
                         embedder: EmbeddingProvider | None = None) -> SharedFactsReport:
    """Shared facts of the session's completed runs with ``shared_facts='pending'`` (oldest
    first, at most ``limit``); see the module docstring. Never raises on a model problem
    (outcome ``failed``, the run stays pending); database errors propagate."""
    started = time.monotonic()
    report = SharedFactsReport()
    automation = is_automation_session(settings, session_key)
    for run in pending_runs(conn, instance_key, session_key, limit):
        reason = _skip_reason(conn, settings, run, automation)
        if isinstance(reason, str):
            _mark(conn, run, "skipped")
            report.runs_skipped += 1
            report.skip_reasons[reason] += 1
            continue
        try:
            model = fact_model(settings, model)
            report.model = model.name
            extraction = extract_facts(
                model, reason, max_facts=settings.session_shared_facts_max_facts,
                max_input_chars=chars_for_tokens(settings.session_facts_input_tokens),
                roles=USER_ROLES)
        except ModelError as exc:
            report.runs_failed += 1
            report.error = exc.reason
            report.reason = f"model_{exc.code}"
            break  # the provider is down or confused: the rest waits for the next pass
        report.retries += extraction.retries
        report.facts_proposed += extraction.proposed
        report.rejected += len(extraction.rejected)
        report.reject_reasons.update(r.reason for r in extraction.rejected)
        for fact in extraction.facts:
            stored = store_fact(
                conn, settings, run, fact, source_type="fact", memory_class=MEMORY_CLASS,
                metadata={"sessionKey": run.session_key, "runId": run.run_id,
                          "sourceMessageId": fact.item.message_id,
                          "extractedBy": extraction.model, "excerpt": fact.excerpt},
                embedder=embedder)
            if isinstance(stored, str):
                report.rejected += 1
                report.reject_reasons[stored] += 1
            elif stored.deduplicated:
                report.deduplicated += 1
            else:
                report.memory_ids.append(stored.id)
        _mark(conn, run, "done")
        report.runs_done += 1
    report.duration_seconds = time.monotonic() - started
    if report.runs_failed:
        report.outcome = "failed"
    elif report.runs_done:
        report.outcome, report.reason = "completed", "extracted"
    elif report.runs_skipped:
        reasons = list(report.skip_reasons)
        report.reason = reasons[0] if len(reasons) == 1 else "runs_skipped"
    return report


def _skip_reason(conn: psycopg.Connection, settings: Settings, run: SessionRun,
                 automation: bool) -> str | list[TurnItem]:
    """Why the run is skipped, or its items (it is extracted)."""
    if automation:
        return "automation_session"
    if not (run.user_id or run.group_room_id or run.channel_thread_key):
        return "unattributed"
    items = read_run_items(conn, run, limit=MAX_RUN_ITEMS)
    if _too_short(settings, [item.content for item in items if item.role == "user"]):
        return "too_short"
    return items
