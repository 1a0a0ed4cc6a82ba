"""Conversation turns ranked by what they hold of the question and by their session
(retrieval/ranking.py): the share of the question's words a turn contains
(``retrieval_turn_coverage_weight``), the best score of its session among the candidates
(``retrieval_turn_session_weight``), and the last hits spread over sessions the others miss
(``retrieval_turn_session_spread``, on a near tie only: ``retrieval_turn_spread_margin``).
Pure ranking over candidate rows as the search statement returns them, and one small
hand-made conversation through the real statement (PostgreSQL, hash embeddings)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.ranking import Candidate, rank
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings

FLOOR = 0.1
OFF = {"retrieval_turn_coverage_weight": 0.0, "retrieval_turn_session_weight": 0.0,
       "retrieval_turn_session_spread": 0, "retrieval_turn_spread_margin": 0.0,
       "retrieval_neighbour_weight": 0.0}


def _row(similarity: float, keyword: float, *, matched: float = 0.0,
         session: str | None = "chat-1") -> Candidate:
    return Candidate(
        chunk_id=1, memory_id=uuid.uuid4(), content="Anna: something worth saying here",
        similarity=similarity, keyword_rank=keyword, visibility_scope="private",
        audience_key="anna", memory_scope="user", source_type="fact", subject_refs="{}",
        assertion_id=None, provenance=None, created_at=datetime(2026, 1, 1, tzinfo=UTC),
        occurred_at=None, previous_memory_id=None, turn=True, lexemes=20, injected=0,
        cited=0, corrected=0, matched=matched, session_key=session)


def _settings(**overrides) -> Settings:
    return Settings(_env_file=None, retrieval_min_score=0.0,  # type: ignore[call-arg]
                    **{**OFF, **overrides})


def _order(rows: list[Candidate], settings: Settings, limit: int = 10) -> list[uuid.UUID]:
    return [hit.memory_id for hit in rank(rows, settings, limit, {}, FLOOR)]


def test_a_turn_holding_most_of_the_question_beats_one_sharing_a_rare_word():
    rare = _row(0.80, 0.30, matched=0.25, session="chat-1")   # "Rex" only
    most = _row(0.78, 0.20, matched=0.90, session="chat-2")   # "named", "puppy", "Rex"
    far = _row(0.50, 0.00, session="chat-3")
    assert _order([rare, most, far], _settings())[:2] == [rare.memory_id, most.memory_id]
    covered = _settings(retrieval_turn_coverage_weight=0.3)
    assert _order([rare, most, far], covered)[:2] == [most.memory_id, rare.memory_id]
    # Notes keep their fusion: the share of words only enters a turn's score.
    notes = [row._replace(turn=False) for row in (rare, most, far)]
    assert _order(notes, covered)[0] == rare.memory_id


def test_a_turn_rises_with_the_best_turn_of_its_session_never_down():
    best = _row(0.95, 0.10, session="chat-1")     # the turn that matched
    reply = _row(0.70, 0.00, session="chat-1")    # a turn of the same session
    rival = _row(0.74, 0.00, session="chat-2")    # a look-alike elsewhere
    alone = _settings()
    assert _order([best, reply, rival], alone) == [best.memory_id, rival.memory_id,
                                                   reply.memory_id]
    mixed = _settings(retrieval_turn_session_weight=0.3)
    scores = {h.memory_id: h.score for h in rank([best, reply, rival], mixed, 10, {}, FLOOR)}
    before = {h.memory_id: h.score for h in rank([best, reply, rival], alone, 10, {}, FLOOR)}
    assert scores[best.memory_id] == before[best.memory_id]  # its own session's best
    assert scores[rival.memory_id] == before[rival.memory_id]  # alone in its session
    expected = 0.7 * before[reply.memory_id] + 0.3 * before[best.memory_id]
    assert scores[reply.memory_id] == pytest.approx(expected, abs=1e-6)
    assert _order([best, reply, rival], mixed) == [best.memory_id, reply.memory_id,
                                                   rival.memory_id]
    # Turns without a session, and notes, keep their own score.
    loose = [row._replace(session_key=None) for row in (best, reply, rival)]
    assert _order(loose, mixed) == [loose[0].memory_id, loose[2].memory_id,
                                    loose[1].memory_id]


def test_the_last_hit_goes_to_a_session_the_others_miss():
    first = [_row(0.95 - i * 0.02, 0.1, session="chat-1") for i in range(10)]
    other = _row(0.60, 0.05, session="chat-2")
    rows = [*first, other]
    assert other.memory_id not in _order(rows, _settings())
    spread = _settings(retrieval_turn_session_spread=1)
    hits = rank(rows, spread, 10, {}, FLOOR)
    assert [h.memory_id for h in hits[:9]] == [r.memory_id for r in first[:9]]
    assert hits[-1].memory_id == other.memory_id
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # A short answer keeps its best hits; a session already among them takes no slot.
    assert other.memory_id not in _order(rows, spread, limit=3)
    present = [*first, other._replace(similarity=0.94)]  # among the best already
    assert _order(present, spread) == _order(present, _settings())
    # More slots than a short answer has: the best hit keeps its place, the others spread.
    wide = rank([*first, other], _settings(retrieval_turn_session_spread=10), 4, {}, FLOOR)
    assert [h.memory_id for h in wide] == [first[0].memory_id, *(r.memory_id for r in first[1:3]),
                                           other.memory_id]
    # No turn of another session among the candidates: the next best, as without it.
    assert _order(first + [first[0]._replace(memory_id=uuid.uuid4(), similarity=0.1)],
                  spread) == [r.memory_id for r in first]



def test_a_slot_goes_to_another_session_on_a_near_tie_only():
    first = [_row(0.95 - i * 0.02, 0.1, session="chat-1") for i in range(10)]
    near = _row(0.768, 0.1, session="chat-2")  # just behind the tenth of chat-1
    far = _row(0.40, 0.1, session="chat-3")
    rows = [*first, near, far]
    plain = {h.memory_id: h.score for h in rank(rows, _settings(), 12, {}, FLOOR)}
    tenth = plain[first[9].memory_id]
    assert 0.98 * tenth <= plain[near.memory_id] < tenth
    assert plain[far.memory_id] < 0.98 * tenth
    tie = _settings(retrieval_turn_session_spread=1, retrieval_turn_spread_margin=0.98)
    assert _order(rows, tie) == [*(r.memory_id for r in first[:9]), near.memory_id]
    # Nothing near the best turn left: that turn keeps the slot, as without the spread.
    assert _order([*first, far], tie) == [r.memory_id for r in first]
    # Margin 0: the slot goes to another session whatever its score.
    anyway = _settings(retrieval_turn_session_spread=1)
    assert _order([*first, far], anyway)[-1] == far.memory_id
    # A question asking for a list spreads its items whatever their scores.
    listing = _settings(retrieval_turn_list_spread=1, retrieval_turn_session_spread=0,
                        retrieval_turn_spread_margin=0.98)
    assert [h.memory_id for h in rank([*first, far], listing, 10, {}, FLOOR,
                                      several=True)][-1] == far.memory_id

# --- through the statement ---------------------------------------------------------------------

DAY = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
# Session 1 talks about the garden at length; session 2 mentions it once.
GARDEN = [f"Anna: The garden needs work, the roses in the garden bed number {i} wilted."
          for i in range(6)]
LATER = "Ben: My garden shed finally has a roof, I finished it yesterday."
FILLER = ["Ben: The train was late again today.", "Anna: We watched a film about whales."]


@pytest.fixture
def make_settings(module_database_url: str, tmp_path: Path):
    def make(**overrides) -> Settings:
        return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                       retrieval_min_score=0.0, **{**OFF, **overrides})
    return make


def _two_sessions(db, settings: Settings) -> tuple[dict[str, uuid.UUID], AccessContext]:
    """Anna's two sessions (the garden at length, then once) in a fresh instance: the memory id
    of each text, and Anna asking."""
    instance = f"sessions-{uuid.uuid4().hex[:10]}"
    ids: dict[str, uuid.UUID] = {}
    for number, texts in enumerate([[*GARDEN, *FILLER], [LATER, *FILLER]], 1):
        ctx = AccessContext(instance, user_id="anna", session_key=f"chat-{number}")
        for minute, text in enumerate(texts):
            stored = store_memory(db, settings, ctx, MemoryWrite(
                text, occurred_at=DAY + timedelta(days=number, minutes=minute)))
            ids.setdefault(text, stored.id)
    ask = AccessContext(instance, user_id="anna")
    return ids, ask


def test_a_search_spreads_its_last_hit_over_another_session(db, make_settings):
    ids, ask = _two_sessions(db, make_settings())

    def hits(**overrides) -> list[uuid.UUID]:
        return [h.memory_id for h in search_memories(
            db, make_settings(**overrides), ask, "What happened in the garden?", limit=4,
            stamp=False)]

    plain = hits()
    assert len(plain) == 4 and ids[LATER] not in plain
    assert set(plain) <= {ids[text] for text in GARDEN}
    spread = hits(retrieval_turn_session_spread=1)
    assert spread[:3] == plain[:3] and spread[3] == ids[LATER]


def test_a_question_asking_for_a_list_spreads_more_of_its_hits():
    first = [_row(0.95 - i * 0.02, 0.1, session="chat-1") for i in range(10)]
    others = [_row(0.60 - i * 0.01, 0.05, session=f"chat-{i + 2}") for i in range(3)]
    rows = [*first, *others]
    listing = _settings(retrieval_turn_list_spread=3)
    asked = [h.memory_id for h in rank(rows, listing, 10, {}, FLOOR, several=True)]
    assert asked[:7] == [r.memory_id for r in first[:7]]
    assert asked[7:] == [r.memory_id for r in others]
    # A question asking for one thing keeps the plain order (session spread 0 here).
    assert _order(rows, listing) == [r.memory_id for r in first]
    # The list spread never takes fewer slots than the session spread.
    both = _settings(retrieval_turn_list_spread=1, retrieval_turn_session_spread=2)
    assert [h.memory_id for h in rank(rows, both, 10, {}, FLOOR, several=True)][8:] == [
        r.memory_id for r in others[:2]]


def test_a_search_asking_how_many_answers_from_another_session(db, make_settings):
    ids, ask = _two_sessions(db, make_settings())

    def hits(question: str, **overrides) -> list[uuid.UUID]:
        return [h.memory_id for h in search_memories(
            db, make_settings(**overrides), ask, question, limit=4, stamp=False)]

    counting = "How many things happened in the garden?"
    assert ids[LATER] not in hits(counting, retrieval_turn_list_spread=0)
    assert hits(counting, retrieval_turn_list_spread=1)[3] == ids[LATER]
    # The same words asked about one thing: no spread.
    assert ids[LATER] not in hits("What happened in the garden?", retrieval_turn_list_spread=1)
