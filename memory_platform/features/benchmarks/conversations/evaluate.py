"""The conversational retrieval benchmark (``memory-platform bench retrieval --suite
conversations``, ``python -m bench.conversations``).

Every conversation belongs to one user (``bench-conv-<key>``). Each of its turns is written
as that user's private memory, in turn order, with the turn's time as ``occurred_at`` and the
session key ``<conversation>-s<session, 2 digits>``, exactly as an agent stores a turn through
the API (a fact of class ``explicit``, the user's own statement), so the write path makes it a
conversation turn (memories/turns.py: linked to the turn before, with its context).
Identical turn texts of one user are one memory (the write path's dedup), so a memory maps to
the list of turns it stands for. Then
every question is asked as the conversation's user (10 answers) and the answered memories
are mapped back to turns: the rank of each evidence turn gives recall and MRR
(:mod:`.report`).

Two ways in, chosen by ``via``:

* ``library``: ``store_memory`` and ``search_memories`` in this process, with the chosen
  embedding provider. One seeded corpus is asked under several settings variants
  (:mod:`.variants`).
* ``api``: the HTTP API, through what the caller gives (:class:`ApiAccess`): an
  ``httpx.Client`` of the API (a real server on loopback, :mod:`.loopback`; the tests pass
  Starlette's in-process TestClient) and the token of a user key per conversation user
  (this package may not import ``apikeys``: the command lines make the keys, for the run
  only). It writes ``POST /api/v1/memory`` and asks ``GET /api/v1/memory``; the server ranks
  with its own settings, so there are no variants.

The cleanup deletes the benchmark users' memories (chunks cascade), the sources no ledger
evidence names and their session participation. A turn is a fact: its ledger assertion and
the review decision that activated it are append-only, so those (with their evidence and
sources) stay, private to the benchmark's users, as in any instance that ever held facts.

Seeding is the slow part (the local model embeds every turn): progress is printed every 100
turns, ``keep`` leaves the memories in place and ``reuse`` finds them again (by user and
content hash, the write path's own dedup key) and writes only the turns that are missing.
The run uses its own instance (``bench-conversations-<provider>``) unless told otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
import psycopg
from psycopg import sql

from memory_platform.features.benchmarks.conversations.corpus import Conversation, Turn
from memory_platform.features.benchmarks.conversations.generate import generate
from memory_platform.features.benchmarks.conversations.report import (
    RECALL_AT,
    QuestionResult,
    VariantReport,
    evidence_ranks,
    markdown_table,
    results_json,
)
from memory_platform.features.benchmarks.conversations.variants import DEFAULT_VARIANTS, Variant
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import content_hash
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider

USER_PREFIX = "bench-conv-"
ASK_LIMIT = max(RECALL_AT)
PROGRESS_EVERY = 100
VIAS = ("library", "api")


def instance_for(provider: EmbeddingProvider, instance_key: str | None = None) -> str:
    """The run's instance: the one given, else the provider's own benchmark instance."""
    return instance_key or f"bench-conversations-{provider.provider}"


def user_of(conversation: Conversation) -> str:
    return f"{USER_PREFIX}{conversation.key}"


def session_key(conversation: Conversation, session: int) -> str:
    return f"{conversation.key}-s{session:02d}"


def default_corpus(conversations: int = 8, seed: int = 14) -> list[Conversation]:
    """The generated corpus."""
    return generate(seed=seed, conversations=conversations)


# --- the two ways in ----------------------------------------------------------------------


class Caller(Protocol):
    """Writes turns and asks questions as a conversation's user."""

    def write(self, user: str, session: str, turn: Turn) -> str:
        """Store the turn; the id of the memory that holds it (new or deduplicated)."""

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        """The ids of the answered memories, best first (at most ASK_LIMIT)."""


@dataclass
class LibraryCaller:
    conn: psycopg.Connection
    settings: Settings
    instance_key: str
    provider: EmbeddingProvider

    def write(self, user: str, session: str, turn: Turn) -> str:
        stored = store_memory(
            self.conn, self.settings,
            AccessContext(self.instance_key, user_id=user, session_key=session),
            # What POST /api/v1/memory writes for a user key (api/routes/memory.py).
            MemoryWrite(content=turn.content(), source_type="fact", memory_class="explicit",
                        trust_class="human_direct", visibility="private",
                        occurred_at=turn.occurred_at),
            embedder=self.provider)
        return str(stored.id)

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        hits = search_memories(self.conn, settings, AccessContext(self.instance_key,
                                                                  user_id=user),
                               question, limit=ASK_LIMIT, embedder=self.provider, stamp=False)
        return [str(h.memory_id) for h in hits]


@dataclass(frozen=True)
class ApiAccess:
    """How to reach the API as a user: a client of it, and ``token_for(user)``, the bearer
    token of a user key of the run's instance acting as that user (memory:read and
    memory:write)."""

    client: httpx.Client
    token_for: Callable[[str], str]


@dataclass
class ApiCaller:
    """The HTTP API as each conversation's user."""

    access: ApiAccess

    def _headers(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.access.token_for(user)}"}

    def write(self, user: str, session: str, turn: Turn) -> str:
        response = self.access.client.post("/api/v1/memory", headers=self._headers(user), json={
            "content": turn.content(), "visibility": "private",
            "occurredAt": turn.occurred_at.isoformat(), "context": {"sessionKey": session}})
        if response.status_code not in (200, 201):
            raise RuntimeError(f"writing turn {turn.id}: {response.status_code} {response.text}")
        return response.json()["id"]

    def ask(self, user: str, question: str, settings: Settings) -> list[str]:
        response = self.access.client.get("/api/v1/memory", headers=self._headers(user),
                                          params={"query": question, "limit": ASK_LIMIT})
        if response.status_code != 200:
            raise RuntimeError(f"asking {question!r}: {response.status_code} {response.text}")
        return [item["id"] for item in response.json()["results"]]


# --- seed, ask, clean up ------------------------------------------------------------------


def seeded_turns(conn: psycopg.Connection, instance_key: str,
                 corpus: Sequence[Conversation]) -> dict[str, list[str]]:
    """Memory id -> the turns it holds, for the turns already stored as their user's active
    private memory (matched like the write path's dedup: by normalised content hash)."""
    turns_of: dict[str, list[str]] = {}
    for conversation in corpus:
        stored = dict(conn.execute(
            "SELECT DISTINCT ON (content_hash) content_hash, id::text FROM agent_memories"
            " WHERE instance_key = %s AND user_id = %s AND visibility_scope = 'private'"
            " AND memory_state = 'active' ORDER BY content_hash, created_at, id",
            (instance_key, user_of(conversation))).fetchall())
        for turn in conversation.turns():
            memory_id = stored.get(content_hash(turn.content()))
            if memory_id is not None:
                turns_of.setdefault(memory_id, []).append(turn.id)
    return turns_of


def stray_memories(conn: psycopg.Connection, instance_key: str,
                   corpus: Sequence[Conversation], turns_of: Mapping[str, list[str]]) -> int:
    """Active memories of the corpus's users that hold none of its turns (e.g. left by a kept
    run of another corpus): they compete in the answers."""
    users = [user_of(c) for c in corpus]
    stored = conn.execute("SELECT count(*) FROM agent_memories WHERE instance_key = %s"
                          " AND user_id = ANY(%s) AND memory_state = 'active'",
                          (instance_key, users)).fetchone()[0]
    return stored - len(turns_of)


def seed(caller: Caller, corpus: Sequence[Conversation],
         stored: Mapping[str, list[str]] | None = None,
         echo: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Write every turn not in ``stored`` (memory id -> turns) in turn order; the complete
    memory id -> turns map."""
    turns_of = {memory_id: list(turns) for memory_id, turns in (stored or {}).items()}
    present = {turn for turns in turns_of.values() for turn in turns}
    todo = [(conversation, turn) for conversation in corpus
            for turn in conversation.turns() if turn.id not in present]
    started = time.perf_counter()
    for done, (conversation, turn) in enumerate(todo, 1):
        memory_id = caller.write(user_of(conversation), session_key(conversation, turn.session),
                                 turn)
        turns_of.setdefault(memory_id, []).append(turn.id)
        if done % PROGRESS_EVERY == 0 or done == len(todo):
            elapsed = time.perf_counter() - started
            echo(f"  {done}/{len(todo)} turns written ({done / elapsed:.1f}/s)")
    return turns_of


def ask(caller: Caller, settings: Settings, corpus: Sequence[Conversation],
        turns_of: Mapping[str, list[str]], variant: Variant) -> VariantReport:
    """Every question of ``corpus`` as its conversation's user, ranked under ``variant``."""
    tuned = variant.apply(settings)
    report = VariantReport(variant.name, dict(variant.overrides))
    questions = [(user_of(c), q) for c in corpus for q in c.questions]
    started = time.perf_counter()
    for user, question in questions:
        answered = caller.ask(user, question.text, tuned)
        report.results.append(QuestionResult(
            question.id, question.conversation, question.category, question.evidence,
            evidence_ranks(question.evidence, answered, turns_of)))
    report.seconds_per_query = (time.perf_counter() - started) / max(1, len(questions))
    return report


CLEANUP_ATTEMPTS = 3


def cleanup(conn: psycopg.Connection, instance_key: str) -> int:
    """Delete the benchmark users' memories (chunks cascade), the source envelopes no ledger
    evidence names, the sessions they appended to, their session participation and their
    registry rows (their keys registered them); answers the memories deleted. A deadlock
    with an API that is still stamping the recalled rows (its deferred stamper) rolls the
    cleanup back: it is tried again, at most ``CLEANUP_ATTEMPTS`` times."""
    for attempt in range(1, CLEANUP_ATTEMPTS + 1):
        try:
            return _cleanup_once(conn, instance_key)
        except psycopg.errors.DeadlockDetected:
            if attempt == CLEANUP_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _cleanup_once(conn: psycopg.Connection, instance_key: str) -> int:
    users = f"{USER_PREFIX}%"
    with conn.transaction():
        sources = conn.execute(
            "DELETE FROM agent_memories WHERE instance_key = %s AND user_id LIKE %s"
            " RETURNING source_id", (instance_key, users)).fetchall()
        conn.execute(
            "DELETE FROM agent_memory_sources s WHERE s.instance_key = %s AND s.id = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM agent_memory_assertion_evidence e"
            " WHERE e.instance_key = s.instance_key AND e.source_id = s.id)",
            (instance_key, [row[0] for row in sources if row[0]]))
        # The sessions a sessions-path run appended (their items take their recalled turns
        # with them, migration 0041), then who took part.
        sessions = [row[0] for row in conn.execute(
            "SELECT DISTINCT session_key FROM agent_context_messages WHERE instance_key = %s"
            " AND user_id LIKE %s", (instance_key, users))]
        for table in ("agent_context_messages", "agent_session_runs", "agent_session_state"):
            conn.execute(sql.SQL("DELETE FROM {} WHERE instance_key = %s"
                                 " AND session_key = ANY(%s)").format(sql.Identifier(table)),
                         (instance_key, sessions))
        conn.execute("DELETE FROM agent_session_participants WHERE instance_key = %s"
                     " AND user_id LIKE %s", (instance_key, users))
        conn.execute("DELETE FROM agent_users WHERE instance_key = %s AND user_id LIKE %s",
                     (instance_key, users))
    return len(sources)


# --- a run ----------------------------------------------------------------------------------


@dataclass
class RunResult:
    provider: str
    model: str
    via: str
    instance_key: str
    corpus: dict[str, int]
    written_turns: int
    seed_seconds: float
    reports: list[VariantReport]

    def as_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "via": self.via,
                "instance": self.instance_key, "corpus": self.corpus,
                "written_turns": self.written_turns, "seed_seconds": round(self.seed_seconds, 2),
                "ask_limit": ASK_LIMIT, **results_json(self.reports)}


def _caller(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider,
            instance_key: str, via: str, api: ApiAccess | None,
            variants: Sequence[Variant]) -> Caller:
    if via == "library":
        return LibraryCaller(conn, settings, instance_key, provider)
    if via != "api":
        raise ValueError(f"via must be one of {', '.join(VIAS)}, not {via!r}")
    if api is None:
        raise ValueError("via='api' needs an ApiAccess (a client of the API, user keys)")
    if any(v.overrides for v in variants):
        raise ValueError("settings variants need via='library': the API ranks with its "
                         "server's settings")
    return ApiCaller(api)


def run(conn: psycopg.Connection, settings: Settings, provider: EmbeddingProvider,
        corpus: Sequence[Conversation], *, via: str = "library",
        api: ApiAccess | None = None, variants: Sequence[Variant] | None = None,
        instance_key: str | None = None, keep: bool = False, reuse: bool = False,
        echo: Callable[[str], None] = print) -> RunResult:
    """Seed ``corpus`` (or, with ``reuse``, only what is missing), ask every question under
    each variant (default: :data:`DEFAULT_VARIANTS` in the library, the server's settings
    through the API), print a table per variant, and delete the memories unless ``keep``."""
    instance_key = instance_for(provider, instance_key)
    if variants is None:
        variants = DEFAULT_VARIANTS if via == "library" else (Variant("server"),)
    caller = _caller(conn, settings, provider, instance_key, via, api, variants)
    turns = sum(len(c.turns()) for c in corpus)
    echo(f"{len(corpus)} conversations, {turns} turns, "
         f"{sum(len(c.questions) for c in corpus)} questions; instance {instance_key!r}, "
         f"{provider.provider}:{provider.model} via {via}")
    try:
        stored: dict[str, list[str]] = {}
        if reuse:
            stored = seeded_turns(conn, instance_key, corpus)
            echo(f"reusing {sum(len(t) for t in stored.values())} stored turns")
        else:
            cleanup(conn, instance_key)
        found = sum(len(t) for t in stored.values())
        started = time.perf_counter()
        turns_of = seed(caller, corpus, stored, echo)
        seed_seconds = time.perf_counter() - started
        echo(f"seeded {turns - found} turns in {seed_seconds:.1f}s "
             f"({len(turns_of)} memories)")
        stray = stray_memories(conn, instance_key, corpus, turns_of)
        if stray:
            echo(f"note: {stray} other memories of these users compete in the answers "
                 "(a kept run of another corpus? run without reuse to start clean)")
        reports = []
        for variant in variants:
            report = ask(caller, settings, corpus, turns_of, variant)
            overrides = f" {variant.overrides}" if variant.overrides else ""
            echo(f"\n{variant.name}{overrides} ({report.seconds_per_query * 1000:.1f} ms/query)"
                 f"\n{markdown_table(report)}")
            reports.append(report)
    finally:
        if not keep:
            echo(f"deleted {cleanup(conn, instance_key)} benchmark memories")
    return RunResult(provider.provider, provider.model, via, instance_key,
                     {"conversations": len(corpus), "turns": turns,
                      "questions": sum(len(c.questions) for c in corpus),
                      "memories": len(turns_of)},
                     turns - found, seed_seconds, reports)
