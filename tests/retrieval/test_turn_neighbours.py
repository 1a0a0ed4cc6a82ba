"""Conversation turns ranked with the turns around them (retrieval/search.py): the turns
before and after a candidate turn join the candidates and lend it their vectors
(``retrieval_turn_neighbour_vector_weight``), and the speaker a question names counts a little
more (``retrieval_turn_speaker_prior``). Small hand-made conversations, real PostgreSQL, hash
embeddings (deterministic: a vector reflects the words of its text)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import search
from memory_platform.features.retrieval.ranking import Candidate, _names_speaker, _similarity, rank
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.factory import get_provider
from tests.support.settings import hash_embedding_settings

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
# Small talk that shares no word with the question below.
FILLER = ["Anna: The weather was grey all week.", "Ben: My train was late again today.",
          "Anna: I bought new running shoes.", "Ben: The kids painted the fence blue.",
          "Anna: We watched a film about whales.", "Ben: Coffee tastes better in the morning.",
          "Anna: My sister moved to Porto.", "Ben: The library opens at nine now.",
          "Anna: I planted tomatoes and basil.", "Ben: Our neighbour plays the trumpet.",
          "Anna: The bakery sells great pretzels.", "Ben: I fixed the bike's brakes.",
          "Anna: We hiked up the hill on Sunday.", "Ben: The concert got cancelled.",
          "Anna: I am learning to knit socks.", "Ben: The office has a new printer."]
NEWS = "Anna: Guess what, we adopted a puppy from the shelter on Saturday!"
QUESTION = "Ben: Congrats! What did you end up naming him?"
ANSWER = "Anna: Rex, after my grandpa's old companion."


@pytest.fixture
def make_settings(module_database_url: str, tmp_path: Path):
    def make(**overrides) -> Settings:
        # This file's mechanisms one at a time: the others off unless a test turns them on.
        return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                       retrieval_min_score=0.0, **{
                                           "retrieval_turn_neighbour_vector_weight": 0.0,
                                           "retrieval_turn_context_vector_weight": 0.0,
                                           **overrides})
    return make


def _conversation(db, settings, user: str) -> dict[str, uuid.UUID]:
    """Filler sessions, then the session of the puppy: news, question, answer, filler."""
    instance = f"neighbours-{uuid.uuid4().hex[:10]}"
    ids: dict[str, uuid.UUID] = {}
    minute = 0
    sessions = [FILLER[:8], [NEWS, QUESTION, ANSWER, *FILLER[8:12]], FILLER[12:]]
    for number, texts in enumerate(sessions, 1):
        ctx = AccessContext(instance, user_id=user, session_key=f"chat-{number}")
        for text in texts:
            minute += 1
            stored = store_memory(db, settings, ctx, MemoryWrite(
                text, occurred_at=DAY + timedelta(days=number, minutes=minute)))
            ids[text] = stored.id
    ids["instance"] = instance  # type: ignore[assignment]
    return ids


def _ask(db, settings, ids, query: str, limit: int) -> list[uuid.UUID]:
    ctx = AccessContext(ids["instance"], user_id="anna")
    return [h.memory_id for h in search_memories(db, settings, ctx, query, limit=limit,
                                                 stamp=False)]


def test_a_turn_is_found_through_its_neighbours_words(db, make_settings):
    """Only the answer says "Rex"; the question before it shares no word with the query and
    is no evidence by itself (no keyword match, a similarity at the noise floor). With the
    neighbour vectors it joins the candidates (the turn before a candidate) and scores with
    the answer's words."""
    plain = make_settings(retrieval_neighbour_weight=0.0)
    ids = _conversation(db, plain, "anna")
    query = "Rex grandpa companion"
    without = _ask(db, plain, ids, query, limit=10)
    assert without[0] == ids[ANSWER] and ids[QUESTION] not in without
    around = make_settings(retrieval_neighbour_weight=0.0,
                           retrieval_turn_neighbour_vector_weight=0.5)
    found = _ask(db, around, ids, query, limit=10)
    assert found[0] == ids[ANSWER] and ids[QUESTION] in found
    # The turn two before the answer is no neighbour of it: it is lent nothing.
    assert ids[NEWS] not in found


def test_the_neighbour_similarity_is_the_direction_of_the_turns_together(db, make_settings,
                                                                          monkeypatch):
    """The statement's ``around``: the cosine of the question with the sum of the turn's
    vector and those of the turns before and after it in its session (none before a
    session's first turn)."""
    settings = make_settings(retrieval_turn_neighbour_vector_weight=0.5)
    ids = _conversation(db, settings, "anna")
    seen: list[Candidate] = []
    real_rank = search.rank

    def capture(rows, *args, **kwargs):
        seen.extend(rows)
        return real_rank(rows, *args, **kwargs)

    monkeypatch.setattr(search, "rank", capture)
    query = "naming the puppy from the shelter"
    search_memories(db, settings, AccessContext(ids["instance"], user_id="anna"), query,
                    limit=10, stamp=False)
    provider = get_provider(settings)
    q = np.asarray(provider.embed_query(query), dtype=np.float64)
    vector = dict(zip((NEWS, QUESTION, ANSWER, FILLER[8]), np.asarray(
        provider.embed_documents([NEWS, QUESTION, ANSWER, FILLER[8]]), dtype=np.float64),
        strict=True))

    def cosine(total):
        return float(q @ total / np.linalg.norm(total) / np.linalg.norm(q))

    around = {row.memory_id: row.around for row in seen}
    assert around[ids[QUESTION]] == pytest.approx(
        cosine(vector[NEWS] + vector[QUESTION] + vector[ANSWER]), abs=1e-4)
    assert around[ids[NEWS]] == pytest.approx(cosine(vector[NEWS] + vector[QUESTION]),
                                              abs=1e-4)  # the session's first turn
    assert around[ids[ANSWER]] == pytest.approx(
        cosine(vector[QUESTION] + vector[ANSWER] + vector[FILLER[8]]), abs=1e-4)


def _row(similarity: float = 0.5, keyword: float = 0.0, *, around: float | None = None,
         content: str = "Anna: x", turn: bool = True) -> Candidate:
    return Candidate(
        chunk_id=1, memory_id=uuid.uuid4(), content=content, similarity=similarity,
        keyword_rank=keyword, visibility_scope="private", audience_key="anna",
        memory_scope="user", source_type="fact", subject_refs="{}", assertion_id=None,
        provenance=None, created_at=DAY, occurred_at=None, previous_memory_id=None, turn=turn,
        lexemes=20, injected=0, cited=0, corrected=0, matched=0.0, around=around)


def test_the_mix_of_own_and_neighbour_similarity():
    row = _row(similarity=0.6, around=0.8)
    assert _similarity(row, 0.0, 0.0) == pytest.approx(0.6)
    assert _similarity(row, 0.25, 0.0) == pytest.approx(0.65)
    assert _similarity(_row(similarity=0.6, around=None), 0.5, 0.0) == pytest.approx(0.6)
    assert _similarity(row._replace(turn=False), 0.5, 0.0) == pytest.approx(0.6)  # notes
    assert _similarity(row._replace(similarity=None), 0.5, 0.0) is None
    # The context vector's similarity mixes in first (0.3 * 0.6 + 0.7 * 0.9 = 0.81).
    context = row._replace(context_similarity=0.9)
    assert _similarity(context, 0.0, 0.7) == pytest.approx(0.81)
    assert _similarity(context._replace(turn=False), 0.0, 0.7) == pytest.approx(0.6)


def test_the_speaker_a_question_names_counts_more():
    settings = Settings(_env_file=None, retrieval_min_score=0.0)  # type: ignore[call-arg]
    caroline = _row(0.80, content="Caroline: I went to a support group yesterday.")
    melanie = _row(0.81, content="Melanie: I went to a support group yesterday.")
    far = _row(0.1, content="Melanie: Bye!")
    named = frozenset({"when", "did", "caroline", "go"})
    off = settings.model_copy(update={"retrieval_turn_speaker_prior": 0.0})
    order = [h.memory_id for h in rank([caroline, melanie, far], off, 3, {}, 0.0, named)]
    assert order[0] == melanie.memory_id
    order = [h.memory_id for h in rank([caroline, melanie, far], settings, 3, {}, 0.0, named)]
    assert order[0] == caroline.memory_id  # the default prior (0.1) puts the named speaker first
    unnamed = frozenset({"when", "did", "someone", "go"})
    order = [h.memory_id for h in rank([caroline, melanie, far], settings, 3, {}, 0.0, unnamed)]
    assert order[0] == melanie.memory_id  # a question naming neither keeps the plain order


@pytest.mark.parametrize(("content", "named", "expected"), [
    ("Caroline: hi", {"caroline"}, True),
    ("Dr. Ada Lee: the results are in", {"ada"}, True),
    ("caroline said hi", {"caroline"}, False),  # no speaker prefix
    ("Melanie: Caroline is great", {"caroline"}, False),  # named in the text, not speaking
    ("Time: 10:30 Caroline", {"caroline"}, False),
])
def test_which_turn_names_a_speaker(content, named, expected):
    assert _names_speaker(_row(content=content), frozenset(named)) is expected
    assert _names_speaker(_row(content=content, turn=False), frozenset(named)) is False
