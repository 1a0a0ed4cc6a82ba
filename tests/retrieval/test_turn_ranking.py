"""How search ranks conversation turns (retrieval/search.py ``_rank``): their own fusion
weights, the content prior against turns of few words, and neighbour smoothing; plain
memories keep the specification's ranking. Pure ranking over candidate rows as the search
statement returns them (the statement itself is tested against the database in
test_search.py and tests/memories/test_turns.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memory_platform.features.retrieval.ranking import Candidate, rank
from memory_platform.foundation.settings import Settings

FLOOR = 0.1


def _row(similarity: float, keyword: float, *, turn: bool = True, lexemes: int = 20,
         previous: uuid.UUID | None = None, content: str = "x") -> Candidate:
    return Candidate(
        chunk_id=1, memory_id=uuid.uuid4(), content=content, similarity=similarity,
        keyword_rank=keyword, visibility_scope="private", audience_key="anna",
        memory_scope="user", source_type="fact", subject_refs="{}", assertion_id=None,
        provenance=None, created_at=datetime(2026, 1, 1, tzinfo=UTC), occurred_at=None,
        previous_memory_id=previous, turn=turn, lexemes=lexemes, injected=0, cited=0,
        corrected=0, matched=0.0)


@pytest.fixture
def settings() -> Settings:
    return Settings(_env_file=None, retrieval_min_score=0.0)  # type: ignore[call-arg]


def _order(rows: list[Candidate], settings: Settings) -> list[uuid.UUID]:
    return [hit.memory_id for hit in rank(rows, settings, 10, {}, FLOOR)]


def test_turns_weigh_words_more_than_notes_do(settings):
    # Vector-best vs keyword-best: 0.8/0.2 ranks the vector-best first, the turn weights
    # (0.6/0.4) the keyword-best when its keyword lead is larger than its vector gap.
    rows = [_row(0.90, 0.02), _row(0.75, 0.10), _row(0.60, 0.00)]
    vector_best, keyword_best = rows[0].memory_id, rows[1].memory_id
    assert _order(rows, settings)[0] == keyword_best
    plain = [row._replace(turn=False) for row in rows]
    assert _order(plain, settings)[0] == vector_best


def test_a_turn_of_few_words_loses_to_one_that_says_something(settings):
    short = _row(0.9, 0.05, lexemes=2)  # "Owen: Which one?"
    full = _row(0.88, 0.05, lexemes=20)
    far = _row(0.5, 0.0)
    assert _order([short, full, far], settings)[:2] == [full.memory_id, short.memory_id]
    no_prior = settings.model_copy(update={"retrieval_turn_content_prior": 0.0})
    assert _order([short, full, far], no_prior)[:2] == [short.memory_id, full.memory_id]
    # Notes are never judged by their length.
    notes = [row._replace(turn=False) for row in (short, full, far)]
    assert _order(notes, settings)[0] == short.memory_id


def test_a_question_counts_its_words_half(settings):
    question = _row(0.9, 0.05, lexemes=20, content="Owen: And what did you do there?")
    statement = _row(0.88, 0.05, lexemes=20, content="Owen: We swam in the sea there.")
    far = _row(0.5, 0.0)
    assert _order([question, statement, far], settings)[:2] == [statement.memory_id,
                                                                 question.memory_id]
    no_prior = settings.model_copy(update={"retrieval_turn_content_prior": 0.0})
    assert _order([question, statement, far], no_prior)[:2] == [question.memory_id,
                                                                 statement.memory_id]


def test_a_turn_is_pulled_toward_its_best_neighbour_never_down(settings):
    question = _row(0.95, 0.10)                              # the turn that matched
    answer = _row(0.70, 0.00, previous=question.memory_id)   # the reply after it
    rival = _row(0.74, 0.00)                                 # a turn elsewhere
    ranked = rank([question, answer, rival], settings, 10, {}, FLOOR)
    scores = {hit.memory_id: hit.score for hit in ranked}
    assert [hit.memory_id for hit in ranked] == [question.memory_id, answer.memory_id,
                                                 rival.memory_id]
    alone = rank([question, answer, rival],
                  settings.model_copy(update={"retrieval_neighbour_weight": 0.0}), 10, {},
                  FLOOR)
    assert [hit.memory_id for hit in alone][1] == rival.memory_id
    unsmoothed = {hit.memory_id: hit.score for hit in alone}
    assert scores[question.memory_id] == unsmoothed[question.memory_id]  # never pulled down
    pull = unsmoothed[question.memory_id] - unsmoothed[answer.memory_id]
    expected = unsmoothed[answer.memory_id] + settings.retrieval_neighbour_weight * pull
    assert scores[answer.memory_id] == pytest.approx(expected, abs=1e-6)


def test_only_candidates_lend_score_and_only_to_their_own_neighbours(settings):
    absent = uuid.uuid4()  # the turn before is no candidate: nothing to lend
    lonely = _row(0.70, 0.0, previous=absent)
    other = _row(0.95, 0.1)
    ranked = {h.memory_id: h.score for h in rank([lonely, other], settings, 10, {}, FLOOR)}
    alone = {h.memory_id: h.score for h in rank(
        [lonely, other], settings.model_copy(update={"retrieval_neighbour_weight": 0.0}), 10,
        {}, FLOOR)}
    assert ranked == alone
