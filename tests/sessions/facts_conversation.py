"""A small, realistic conversation for the fact-extraction tests, written with plain SQL.

Runs and their items go straight into ``agent_session_runs`` / ``agent_context_messages``
(what the items API stores), so these tests depend on nothing but the schema. Every run's
acting user takes part in the session (``agent_session_participants``), as the API records.

The sentences: English and German, with durable statements (a decision, a preference, a
constraint, a fact with a name), transient chatter, questions, a remember intent and a
private cue.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg

from memory_platform.features.sessions.model import SessionModel, session_model
from memory_platform.foundation.settings import Settings
from tests.support.settings import hash_embedding_settings

# One run = the items said in it: (role, content) or (role, content, author user).
Item = tuple[str, str] | tuple[str, str, str | None]

DECISION = "We decided to use PostgreSQL 18 for the billing service."
PREFERENCE = "I prefer short answers with bullet points."
CONSTRAINT = "The invoice run must never start before the 3rd of a month."
GERMAN_DECISION = "Wir nehmen ab sofort Hetzner für das Staging."
REMEMBERED = "Der Steuerberater heißt Herr Krause."
PRIVATE = "I have a standing doctor's appointment every Friday at 8."

ALICE_RUN: list[Item] = [
    ("user", f"Hi! {DECISION} Can you draft the migration plan?"),
    ("assistant", "Sure. The billing service will move to PostgreSQL 18; I will draft "
                  "the plan with a rollback step."),
    ("user", f"{PREFERENCE} I'm working on the report today."),
]
GERMAN_RUN: list[Item] = [
    ("user", f"{GERMAN_DECISION} Merk dir: {REMEMBERED}"),
    ("assistant", "Alles klar, Hetzner für Staging und Herr Krause als Steuerberater."),
]
PRIVATE_RUN: list[Item] = [
    ("user", f"Only for me: {PRIVATE}"),
    ("assistant", "Noted, I will keep that to myself."),
]
CHATTER_RUN: list[Item] = [
    ("user", "Thanks, great!"),      # 14 characters: below the 16-character minimum
    ("assistant", "You're welcome! Anything else I can help with today?"),
]
SHORT_REMEMBER_RUN: list[Item] = [
    ("user", "Merk dir Gate 7"),     # 15 characters, but a remember intent
    ("assistant", "Gemerkt."),
]


def filler_run(index: int, size: int = 2_400) -> list[Item]:
    """A run of ordinary talk of about ``size`` bytes (no durable cue in the user turn)."""
    chatter = f"Could you look at ticket {index} again please? " * (size // 46 + 1)
    return [("user", chatter[:size]), ("assistant", "Looking at it.")]


def add_run(conn: psycopg.Connection, instance: str, session: str, items: Sequence[Item], *,
            user_id: str | None = None, group_room_id: str | None = None,
            channel_thread_key: str | None = None, channel_type: str | None = None,
            run_id: str | None = None, completed: bool = True,
            prompt_tokens: int | None = None, context_budget_tokens: int | None = None,
            transcript_bytes: int | None = None) -> str:
    """One run with its items (each item's author defaults to the run's user), the next
    run_index and seqs of the session; ``transcript_bytes`` defaults to the items' UTF-8
    size."""
    run_id = run_id or f"run-{uuid.uuid4().hex[:8]}"
    index = conn.execute(
        "SELECT count(*) FROM agent_session_runs WHERE instance_key = %s AND session_key = %s",
        (instance, session)).fetchone()[0]
    seq = conn.execute(
        "SELECT COALESCE(max(seq) + 1, 0) FROM agent_context_messages"
        " WHERE instance_key = %s AND session_key = %s", (instance, session)).fetchone()[0]
    size = sum(len(item[1].encode()) for item in items)
    conn.execute(
        "INSERT INTO agent_session_runs (instance_key, session_key, run_id, run_index, user_id,"
        " group_room_id, channel_thread_key, channel_type, status, item_count, transcript_bytes,"
        " prompt_tokens, context_budget_tokens, completed_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        "         CASE WHEN %s THEN now() END)",
        (instance, session, run_id, index, user_id, group_room_id, channel_thread_key,
         channel_type, "completed" if completed else "open", len(items),
         size if transcript_bytes is None else transcript_bytes, prompt_tokens,
         context_budget_tokens, completed))
    if user_id:
        conn.execute(
            "INSERT INTO agent_session_participants (instance_key, session_key, user_id, role)"
            " VALUES (%s, %s, %s, CASE WHEN EXISTS (SELECT 1 FROM agent_session_participants"
            "   WHERE instance_key = %s AND session_key = %s) THEN 'participant' ELSE 'owner' END)"
            " ON CONFLICT DO NOTHING",
            (instance, session, user_id, instance, session))
    for offset, item in enumerate(items):
        role, content = item[0], item[1]
        author = item[2] if len(item) > 2 else user_id  # type: ignore[misc]
        conn.execute(
            "INSERT INTO agent_context_messages (instance_key, session_key, user_id,"
            " channel_thread_key, seq, role, content, run_id)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (instance, session, author, channel_thread_key, seq + offset, role, content,
             run_id))
    return run_id


def set_share(conn: psycopg.Connection, instance: str, user_id: str,
              share: bool | None) -> None:
    """The user's profile row: ``None`` keeps the column default (share, on by default)."""
    if share is None:
        conn.execute("INSERT INTO agent_user_preferences (instance_key, user_id)"
                     " VALUES (%s, %s) ON CONFLICT DO NOTHING", (instance, user_id))
    else:
        conn.execute("INSERT INTO agent_user_preferences (instance_key, user_id,"
                     " share_memories_with_team) VALUES (%s, %s, %s)"
                     " ON CONFLICT (instance_key, user_id)"
                     " DO UPDATE SET share_memories_with_team = EXCLUDED.share_memories_with_team",
                     (instance, user_id, share))


def memories(conn: psycopg.Connection, instance: str, session: str | None = None,
             source_type: str | None = None) -> list[dict[str, Any]]:
    """The memory rows of the instance (of a session / source type), oldest first, with the
    trust class of their source envelope and their assertion's status."""
    cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cursor.execute(
        "SELECT m.id, m.content, m.source_type, m.visibility_scope, m.audience_key,"
        "       m.user_id, m.session_key, m.subject_refs, m.metadata, m.memory_scope,"
        "       m.created_at, m.updated_at, m.assertion_id, s.trust_class,"
        "       a.status AS assertion_status"
        "  FROM agent_memories m"
        "  LEFT JOIN agent_memory_sources s ON s.id = m.source_id"
        "  LEFT JOIN agent_memory_assertions a ON a.id = m.assertion_id"
        " WHERE m.instance_key = %s AND (%s::text IS NULL OR m.session_key = %s::text)"
        "   AND (%s::text IS NULL OR m.source_type = %s::text)"
        " ORDER BY m.created_at, m.content",
        (instance, session, session, source_type, source_type)).fetchall()


def run_states(conn: psycopg.Connection, instance: str, session: str) -> list[str]:
    return [row[0] for row in conn.execute(
        "SELECT shared_facts FROM agent_session_runs WHERE instance_key = %s"
        " AND session_key = %s ORDER BY run_index", (instance, session)).fetchall()]


def offline_settings(database_url: str, **overrides: Any) -> Settings:
    """The offline extractive model and hash embeddings."""
    return hash_embedding_settings(database_url, hash_embedding_dimensions=64,
                                   maintenance_default_model="extractive", **overrides)


def http_settings(database_url: str, base_url: str, **overrides: Any) -> Settings:
    """An OpenAI-compatible maintenance model at the scripted server, fast retries."""
    values: dict[str, Any] = {
        "maintenance_model": "fact-model", "maintenance_base_url": base_url,
        "maintenance_retry_backoff_seconds": 0.01, "maintenance_max_retries": 0,
        "maintenance_idle_timeout_seconds": 5.0, "session_facts_timeout_seconds": 10.0}
    values.update(overrides)
    return offline_settings(database_url, **values)


def http_model(settings: Settings) -> SessionModel:
    model = session_model(settings, timeout_seconds=10.0)
    assert model.client is not None and model.name == "fact-model"
    return model


def answer(*facts: dict[str, Any], **extra: Any) -> str:
    """A model answer of the facts contract (``extra`` adds top-level fields)."""
    return json.dumps({"facts": list(facts), **extra}, ensure_ascii=False)


def fact(text: str, excerpt: str | None = None, kind: str = "fact", private: bool = False,
         **extra: Any) -> dict[str, Any]:
    return {"text": text, "excerpt": text if excerpt is None else excerpt,
            "assertionType": kind, "private": private, **extra}


@contextmanager
def no_requests(server: Any) -> Iterator[None]:
    """Asserts the block made no chat request to the scripted server."""
    before = len(server.requests("chat/completions"))
    yield
    assert len(server.requests("chat/completions")) == before
