"""Scores a caller can trust (retrieval/scores.py): a search's scores are its ranking scores
times its confidence, so a question the memories cannot answer scores below the default
``minScore`` while the order of every search stays its ranking's. Real PostgreSQL, hash
embeddings with a similarity scale given in the settings (the hash model has none of its
own: its scores stay relative), a small hand-made conversation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.scores import (
    CONFIDENT_AT,
    CONFIDENT_FROM,
    calibrated_similarity,
    confidence,
    evidence,
)
from memory_platform.features.retrieval.search import search_memories
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
TURNS = ["Anna: Guess what, we adopted a puppy from the shelter on Saturday!",
         "Ben: Congrats! What did you end up naming the puppy?",
         "Anna: Rex, after my grandpa's old companion.",
         "Ben: Anna, does Rex sleep in your bed already?",
         "Anna: Every night, he snores like a tractor."]
SCALE = (0.1, 0.5)  # hash vectors: word overlap; unrelated texts score about 0


def test_the_scale_and_the_confidence():
    assert calibrated_similarity(0.78, (0.78, 0.85)) == 0.0
    assert calibrated_similarity(0.85, (0.78, 0.85)) == 1.0
    assert calibrated_similarity(0.815, (0.78, 0.85)) == pytest.approx(0.5)
    assert evidence(0.815, 0.5, 0.6, 0.4, (0.78, 0.85)) == pytest.approx(0.5)
    assert evidence(None, 1.0, 0.8, 0.2, (0.78, 0.85)) == pytest.approx(0.2)
    assert confidence(CONFIDENT_FROM) == 0.0 and confidence(CONFIDENT_AT) == 1.0
    assert confidence((CONFIDENT_FROM + CONFIDENT_AT) / 2) == pytest.approx(0.5)
    assert confidence(0.1) == 0.0 and confidence(0.9) == 1.0


@pytest.fixture
def conversation(db, module_database_url: str, tmp_path: Path):
    settings = hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")
    instance = f"scores-{uuid.uuid4().hex[:10]}"
    ctx = AccessContext(instance, user_id="anna", session_key="chat-1")
    for minute, text in enumerate(TURNS):
        store_memory(db, settings, ctx, MemoryWrite(
            text, occurred_at=DAY + timedelta(minutes=minute)))
    def ask(query: str, **overrides):
        tuned = settings.model_copy(update=overrides)
        return search_memories(db, tuned, AccessContext(instance, user_id="anna"), query,
                               limit=5, stamp=False)
    return ask


def test_an_off_topic_question_gets_nothing_above_the_default_min_score(conversation):
    """It names Anna (who is in every other turn) and nothing the conversation is about.
    Scored relative to its best hit it gets results at full score; measured on the scale it
    gets none, while the on-topic question keeps its order and its best hit."""
    off_topic = "What did Anna cook for the dinner party with her colleagues?"
    relative = conversation(off_topic)
    assert relative and relative[0].score >= 0.5
    assert conversation(off_topic, retrieval_similarity_scale=SCALE) == []
    on_topic = "What did Anna name the puppy from the shelter?"
    plain, scaled = conversation(on_topic), conversation(
        on_topic, retrieval_similarity_scale=SCALE)
    assert [h.memory_id for h in scaled] == [h.memory_id for h in plain][:len(scaled)]
    assert scaled and scaled[0].score >= 0.12


def test_min_score_per_search(conversation):
    on_topic = "What did Anna name the puppy from the shelter?"
    every = conversation(on_topic, retrieval_min_score=0.0)
    strict = conversation(on_topic, retrieval_min_score=0.5)
    assert len(strict) < len(every)
    assert all(h.score >= 0.5 for h in strict)
