"""Conversations for the compaction tests, written with plain SQL: the rows the items API
stores (``agent_session_runs``, ``agent_context_messages`` numbered by ``seq``, the ordered
``agent_context_items`` assembly with one 'message' row per item), the session's owner in
``agent_session_participants`` and ``agent_session_state``. These tests therefore depend on
nothing but the schema.

The turns are English and German talk with the anchors a summary must keep: names,
numbers, dates, times, versions.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from starlette.responses import Response

from memory_platform.features.sessions.summarise import anchors
from memory_platform.foundation.settings import Settings
from tests.support.openai_server import ChatScript, RecordedRequest, chat_completion_chunks
from tests.support.settings import hash_embedding_settings

START = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def english_turn(n: int) -> list[tuple[str, str]]:
    return [
        ("user", f"Turn {n}: Alice from Finance says invoice INV-{1000 + n} for the Berlin "
                 f"office is due on 2026-12-{n % 28 + 1:02d} at 14:30. We decided to move the "
                 f"Kubernetes upgrade to version 1.{n}. Bob owns the Hamburg rollout."),
        ("assistant", f"Noted for turn {n}: invoice INV-{1000 + n} is due on "
                      f"2026-12-{n % 28 + 1:02d}, Kubernetes 1.{n} is the target and Bob "
                      "owns the Hamburg rollout. I will remind the team on Monday."),
    ]


def german_turn(n: int) -> list[tuple[str, str]]:
    return [
        ("user", f"Runde {n}: Frau Schneider meldet, dass der Vertrag mit der Müller GmbH am "
                 f"{n % 28 + 1}. März 2027 ausläuft. Wir haben beschlossen, das Budget auf "
                 f"{n * 1000} Euro zu erhöhen. Jonas macht die Abnahme in München."),
        ("assistant", f"Verstanden: Vertrag Müller GmbH bis {n % 28 + 1}. März 2027, Budget "
                      f"{n * 1000} Euro, Abnahme durch Jonas in München."),
    ]


def turn(n: int) -> list[tuple[str, str]]:
    return english_turn(n) if n % 2 == 0 else german_turn(n)


def add_run(conn: psycopg.Connection, instance: str, session: str,
            items: Sequence[tuple[str, str]], *, user_id: str | None = "alice",
            group_room_id: str | None = None, channel_thread_key: str | None = None,
            channel_type: str | None = None, completed: bool = True,
            prompt_tokens: int | None = None, context_budget_tokens: int | None = None,
            occurred_at: datetime | None = None, run_id: str | None = None,
            metadata: dict[str, Any] | None = None) -> str:
    """One run and its items at the end of the session (next run_index, seqs, positions);
    the first user of a session owns it."""
    run_id = run_id or f"run-{uuid.uuid4().hex[:10]}"
    index, seq, position = conn.execute(
        "SELECT (SELECT coalesce(max(run_index) + 1, 0) FROM agent_session_runs"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s),"
        "       (SELECT coalesce(max(seq) + 1, 0) FROM agent_context_messages"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s),"
        "       (SELECT coalesce(max(position) + 1, 0) FROM agent_context_items"
        "         WHERE instance_key = %(i)s AND session_key = %(s)s)",
        {"i": instance, "s": session}).fetchone()
    when = occurred_at or START + timedelta(minutes=5 * index)
    conn.execute(
        "INSERT INTO agent_session_runs (instance_key, session_key, run_id, run_index,"
        " user_id, group_room_id, channel_thread_key, channel_type, status, item_count,"
        " transcript_bytes, prompt_tokens, context_budget_tokens, completed_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        "         CASE WHEN %s THEN now() END)",
        (instance, session, run_id, index, user_id, group_room_id, channel_thread_key,
         channel_type, "completed" if completed else "open", len(items),
         sum(len(content.encode()) for _, content in items), prompt_tokens,
         context_budget_tokens, completed))
    if user_id:
        conn.execute(
            "INSERT INTO agent_session_participants (instance_key, session_key, user_id, role)"
            " VALUES (%s, %s, %s, CASE WHEN EXISTS (SELECT 1 FROM agent_session_participants"
            "   WHERE instance_key = %s AND session_key = %s) THEN 'participant' ELSE 'owner'"
            " END) ON CONFLICT DO NOTHING", (instance, session, user_id, instance, session))
        conn.execute(
            "INSERT INTO agent_session_state (instance_key, session_key, user_id)"
            " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING", (instance, session, user_id))
    for offset, (role, content) in enumerate(items):
        message_id = conn.execute(
            "INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
            " channel_thread_key, seq, role, content, token_count, run_id, metadata,"
            " occurred_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (instance, session, user_id, channel_thread_key, seq + offset, role, content,
             (len(content) + 3) // 4, run_id, json.dumps(metadata or {}),
             when + timedelta(seconds=30 * offset))).fetchone()[0]
        conn.execute(
            "INSERT INTO agent_context_items (instance_key, session_key, position, item_kind,"
            " message_id) VALUES (%s, %s, %s, 'message', %s)",
            (instance, session, position + offset, message_id))
    return run_id


def complete_run(conn: psycopg.Connection, instance: str, session: str, run_id: str) -> None:
    conn.execute("UPDATE agent_session_runs SET status = 'completed', completed_at = now()"
                 " WHERE instance_key = %s AND session_key = %s AND run_id = %s",
                 (instance, session, run_id))


def conversation(conn: psycopg.Connection, instance: str, session: str, turns: int, *,
                 first: int = 0, **run: Any) -> list[str]:
    """``turns`` completed runs of realistic talk (numbered from ``first``)."""
    return [add_run(conn, instance, session, turn(n), **run)
            for n in range(first, first + turns)]


# --- reading back ----------------------------------------------------------------------------

def messages(conn: psycopg.Connection, instance: str, session: str) -> list[tuple]:
    """(id, seq, run_id) of every raw item, in order."""
    return conn.execute(
        "SELECT id, seq, run_id FROM agent_context_messages WHERE instance_key = %s"
        " AND session_key = %s ORDER BY seq", (instance, session)).fetchall()


def summaries(conn: psycopg.Connection, instance: str, session: str) -> list[dict[str, Any]]:
    cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cursor.execute(
        "SELECT id, kind, depth, first_seq, last_seq, content, produced_by, model, user_id,"
        "       channel_thread_key, memory_id, token_count"
        "  FROM agent_context_summaries WHERE instance_key = %s AND session_key = %s"
        " ORDER BY depth, first_seq", (instance, session)).fetchall()


def assembly(conn: psycopg.Connection, instance: str, session: str) -> list[tuple]:
    """(position, kind, id) in order."""
    return conn.execute(
        "SELECT position, item_kind, coalesce(message_id, summary_id) FROM agent_context_items"
        " WHERE instance_key = %s AND session_key = %s ORDER BY position",
        (instance, session)).fetchall()


def reachable(conn: psycopg.Connection, summary_id: uuid.UUID) -> list[uuid.UUID]:
    """The raw items under a summary, found by walking the link tables (children first,
    then their messages), one level at a time."""
    found: list[uuid.UUID] = []
    frontier = [summary_id]
    while frontier:
        found += [row[0] for row in conn.execute(
            "SELECT message_id FROM agent_context_summary_messages"
            " WHERE summary_id = ANY(%s)", (frontier,))]
        frontier = [row[0] for row in conn.execute(
            "SELECT child_summary_id FROM agent_context_summary_parents"
            " WHERE parent_summary_id = ANY(%s)", (frontier,))]
    return found


def summary_memories(conn: psycopg.Connection, instance: str,
                     session: str) -> list[dict[str, Any]]:
    cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cursor.execute(
        "SELECT m.id, m.content, m.visibility_scope, m.audience_key, m.user_id, m.metadata,"
        "       m.memory_scope, m.occurred_at, s.trust_class"
        "  FROM agent_memories m LEFT JOIN agent_memory_sources s ON s.id = m.source_id"
        " WHERE m.instance_key = %s AND m.session_key = %s AND m.source_type = 'summary'"
        " ORDER BY m.created_at", (instance, session)).fetchall()


# --- settings and the scripted model ---------------------------------------------------------

def compaction_settings(database_url: str, **overrides: Any) -> Settings:
    """Small chunks and summaries so a few turns make several chunks; the offline model."""
    values: dict[str, Any] = {
        "hash_embedding_dimensions": 64, "maintenance_default_model": "extractive",
        "session_compaction_chunk_tokens": 200, "session_compaction_summary_tokens": 150,
        "session_compaction_transcript_bytes": 2_000, "session_compaction_min_new_turns": 2,
        "session_compaction_recent_turns": 3, "session_condense_fanout": 4}
    values.update(overrides)
    return hash_embedding_settings(database_url, **values)


def model_settings(database_url: str, base_url: str, **overrides: Any) -> Settings:
    """An OpenAI-compatible maintenance model at the scripted server."""
    values: dict[str, Any] = {
        "maintenance_model": "summary-model", "maintenance_base_url": base_url,
        "maintenance_max_retries": 0, "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 10.0}
    values.update(overrides)
    return compaction_settings(database_url, **values)


def prompt_texts(request: RecordedRequest) -> str:
    """The conversation text a summary request carries, without the instructions, item
    prefixes and range markers (what the guard measures a summary against)."""
    user = next(m["content"] for m in request.json["messages"] if m["role"] == "user")
    paragraphs = user.split("\n\n")[1:]
    lines: list[str] = []
    for paragraph in paragraphs:
        if paragraph.startswith("Your previous summary"):
            continue
        for line in paragraph.split("\n"):
            if line.startswith("[items "):
                continue
            lines.append(line.split("] ", 1)[1] if line.startswith("[") else line)
    return "\n".join(lines)


def good_summary(request: RecordedRequest) -> str:
    """A summary that passes the guard: it names the input's anchors."""
    kept = anchors(prompt_texts(request), 16)
    return "Summary of the talk: " + ", ".join(kept) + "."


def chat_answer(request: RecordedRequest, content: str) -> Response:
    """A streamed chat completion answering ``content`` (the OpenAI SSE shape)."""
    events = chat_completion_chunks(request.json, ChatScript(content=content))
    body = b"".join(
        f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
        for event in events)
    return Response(body, media_type="text/event-stream")


def good_answer(request: RecordedRequest) -> Response:
    return chat_answer(request, json.dumps({"summary": good_summary(request)}))


def answer(summary: str) -> str:
    return json.dumps({"summary": summary})


def wait_for(predicate: Any, timeout: float = 15.0, interval: float = 0.05) -> bool:
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def iter_pairs(values: Sequence[Any]) -> Iterator[tuple[Any, Any]]:
    return zip(values, values[1:], strict=False)


# Durable statements (a decision, a schedule, a preference, a rule, German, a remember
# intent) for the maintenance tests: one per run.
DURABLE_TURNS = [
    "We decided to use PostgreSQL 18 for the billing service; Bob owns the migration.",
    "Our release train leaves every second Tuesday at 10:00 from the Hamburg office.",
    "I prefer short answers with bullet points when we talk about invoices.",
    "The invoice run must never start before the 3rd of a month, says Finance.",
    "Wir nehmen ab sofort Hetzner für das Staging, sagt Jonas aus München.",
    "Remember that the Kubernetes upgrade to version 1.31 is planned for 2026-12-08.",
]
