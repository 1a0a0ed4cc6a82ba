"""A conversation turn's context vector (memories/turns.py, retrieval/search.py): the turn
embedded together with the turn before it, written by every path that writes a turn's vector
(a synchronous write, a deferred one, the re-embedding backlog), gone with the turn before it,
and mixed into the turn's similarity so a reply is found by the question it answers. Small
hand-made conversations, real PostgreSQL, hash embeddings (a vector reflects the words of its
text)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.memories.turns import context_passage
from memory_platform.features.projection.memory_vectors import drain
from memory_platform.features.projection.reembed import reembed_until_done
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider
from tests.support.settings import hash_embedding_settings

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
FILLER = ["Anna: The weather was grey all week.", "Ben: My train was late again today.",
          "Anna: I bought new running shoes.", "Ben: The kids painted the fence blue.",
          "Anna: We watched a film about whales.", "Ben: Coffee tastes better in the morning."]
QUESTION = "Ben: What did you end up naming the puppy from the shelter?"
ANSWER = "Anna: Rex, after my grandpa's old companion."


@pytest.fixture
def make_settings(module_database_url: str, tmp_path: Path):
    def make(**overrides) -> Settings:
        return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                       retrieval_min_score=0.0, **overrides)
    return make


def _write(db, settings, instance: str, texts: list[str], session: str = "chat-1",
           user: str = "anna") -> dict[str, uuid.UUID]:
    ctx = AccessContext(instance, user_id=user, session_key=session)
    ids = {}
    for minute, text in enumerate(texts, 1):
        ids[text] = store_memory(db, settings, ctx, MemoryWrite(
            text, occurred_at=DAY + timedelta(minutes=minute))).id
    return ids


def _context_vector(db, memory_id: uuid.UUID) -> np.ndarray | None:
    row = db.execute("SELECT context_embedding FROM agent_memory_chunks"
                     " WHERE memory_id = %s AND chunk_index = 0", (memory_id,)).fetchone()
    return None if row[0] is None else np.asarray(row[0].to_numpy(), dtype=np.float32)


def _instance() -> str:
    return f"context-vectors-{uuid.uuid4().hex[:10]}"


def test_a_turn_is_embedded_with_the_turn_before_it(db, make_settings):
    settings = make_settings()
    ids = _write(db, settings, _instance(), [FILLER[0], QUESTION, ANSWER])
    assert _context_vector(db, ids[FILLER[0]]) is None  # a session's first turn: none before
    expected = get_provider(settings).embed_documents([context_passage(QUESTION, ANSWER)])[0]
    assert np.allclose(_context_vector(db, ids[ANSWER]), expected, atol=1e-6)
    # A memory outside a session is no turn: no context, no context vector.
    plain = store_memory(db, settings, AccessContext("plain-" + _instance(), user_id="anna"),
                         MemoryWrite(ANSWER)).id
    assert _context_vector(db, plain) is None


def test_every_path_writes_the_same_context_vector(db, make_settings):
    """Synchronous, deferred (the outbox job carries it) and the re-embedding backlog (a turn
    written with ``turn_context_vectors`` off, or before migration 0032) agree."""
    texts = [FILLER[0], QUESTION, ANSWER]
    sync = _write(db, make_settings(), _instance(), texts)
    deferred_settings = make_settings(write_vectors="deferred")
    deferred = _write(db, deferred_settings, _instance(), texts)
    assert _context_vector(db, deferred[ANSWER]) is None  # until the job ran
    while drain(db, deferred_settings):
        pass
    later_instance = _instance()
    later = _write(db, make_settings(turn_context_vectors=False), later_instance, texts)
    assert _context_vector(db, later[ANSWER]) is None
    result = reembed_until_done(db, make_settings(), instance_key=later_instance)
    assert result.error is None and result.remaining == 0
    expected = _context_vector(db, sync[ANSWER])
    for ids in (deferred, later):
        assert np.allclose(_context_vector(db, ids[ANSWER]), expected, atol=1e-6)
        assert _context_vector(db, ids[FILLER[0]]) is None
    # The backlog is empty afterwards: a session's first turn does not wait for a vector.
    assert reembed_until_done(db, make_settings(), instance_key=later_instance).converted == 0


def test_deleting_the_turn_before_deletes_the_context_vector(db, make_settings):
    """The vector embeds the turn before: it goes with that turn, like the copied text."""
    settings = make_settings()
    ids = _write(db, settings, _instance(), [FILLER[0], QUESTION, ANSWER])
    assert _context_vector(db, ids[ANSWER]) is not None
    db.execute("DELETE FROM agent_memories WHERE id = %s", (ids[QUESTION],))
    row = db.execute("SELECT context, context_embedding FROM agent_memory_chunks"
                     " WHERE memory_id = %s AND chunk_index = 0", (ids[ANSWER],)).fetchone()
    assert row == (None, None)


def _ask(db, settings, instance: str, query: str) -> list[uuid.UUID]:
    ctx = AccessContext(instance, user_id="anna")
    return [h.memory_id for h in search_memories(db, settings, ctx, query, limit=3,
                                                 stamp=False)]


def test_a_reply_is_found_by_the_question_it_answers(db, make_settings):
    """Vectors only (no keyword score, no smoothing): the reply shares no word with the query,
    so alone it is no evidence; its context vector holds the question's words."""
    vectors_only = {"retrieval_turn_vector_weight": 1.0, "retrieval_turn_keyword_weight": 0.0,
                    "retrieval_context_keyword_weight": 0.0, "retrieval_neighbour_weight": 0.0,
                    "retrieval_turn_content_prior": 0.0,
                    "retrieval_turn_neighbour_vector_weight": 0.0}
    instance = _instance()
    ids = _write(db, make_settings(), instance, [*FILLER[:3], QUESTION, ANSWER, *FILLER[3:]])
    query = "naming the puppy from the shelter"
    without = _ask(db, make_settings(retrieval_turn_context_vector_weight=0.0, **vectors_only),
                   instance, query)
    assert without[0] == ids[QUESTION] and ids[ANSWER] not in without
    found = _ask(db, make_settings(retrieval_turn_context_vector_weight=0.7, **vectors_only),
                 instance, query)
    assert ids[ANSWER] in found[:2]
