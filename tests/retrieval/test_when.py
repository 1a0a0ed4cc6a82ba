"""Time in questions (retrieval/when.py) and the time priors of search: a dated question
prefers the turn said in the period it names, absolute or relative to the moment it is asked
(``retrieval_time_prior``), and a "when" question the turn that states a time
(``retrieval_when_prior``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.when import Period, asks_when, named_period, states_time
from memory_platform.shared.access import AccessContext
from tests.support.settings import hash_embedding_settings


@pytest.mark.parametrize(("question", "period"), [
    ("When did Melanie go camping in June?", Period(None, 6)),
    ("How often did she go to the beach in 2023?", Period(2023)),
    ("What did Mel paint in July 2023?", Period(2023, 7)),
    ("What did Melanie show on October 13, 2023?", Period(2023, 10, 13)),
    ("What did Gina find on 1 February, 2023?", Period(2023, 2, 1)),
    ("Was war am 3. Mai 2023?", Period(2023, 5, 3)),
    ("Was hat sie im März gemacht?", Period(None, 3)),
    ("What may Caroline do next?", None),  # a verb, not the month
    ("What did they do last year?", None),  # relative: read only given the moment asked
    ("Where was she in May 2023 and in June 2023?", None),  # two periods
    ("Which city did Jon move to?", None),
])
def test_the_period_a_question_names(question, period):
    assert named_period(question) == period


NOW = datetime(2023, 5, 10, 15, 30, tzinfo=UTC)  # a Wednesday


def _days(first: datetime, end: datetime) -> Period:
    return Period(start=first, end=end)


@pytest.mark.parametrize(("question", "period"), [
    ("What did I cook yesterday?", _days(datetime(2023, 5, 9, tzinfo=UTC),
                                         datetime(2023, 5, 10, tzinfo=UTC))),
    ("Was habe ich gestern gekocht?", _days(datetime(2023, 5, 9, tzinfo=UTC),
                                            datetime(2023, 5, 10, tzinfo=UTC))),
    ("What did we talk about today?", _days(datetime(2023, 5, 10, tzinfo=UTC),
                                            datetime(2023, 5, 11, tzinfo=UTC))),
    # The calendar week before this one, Monday to Sunday.
    ("What did Anna say last week?", _days(datetime(2023, 5, 1, tzinfo=UTC),
                                           datetime(2023, 5, 8, tzinfo=UTC))),
    ("Worüber haben wir letzte Woche gesprochen?", _days(datetime(2023, 5, 1, tzinfo=UTC),
                                                         datetime(2023, 5, 8, tzinfo=UTC))),
    # "n units ago": the day n units back, give or take half a unit (at least a day).
    ("What did she buy three days ago?", _days(datetime(2023, 5, 6, tzinfo=UTC),
                                               datetime(2023, 5, 9, tzinfo=UTC))),
    ("Was war vor zwei Wochen?", _days(datetime(2023, 4, 23, tzinfo=UTC),
                                       datetime(2023, 4, 30, tzinfo=UTC))),
    ("What happened last month?", Period(2023, 4)),
    ("What did they do last year?", Period(2022)),
    ("What have we planned this month?", Period(2023, 5)),
    ("What did she say yesterday and in June 2022?", None),  # two periods
])
def test_a_relative_time_is_read_against_the_moment_asked(question, period):
    assert named_period(question, NOW) == period


def test_last_month_in_january_is_december():
    assert named_period("What happened last month?",
                        datetime(2024, 1, 5, tzinfo=UTC)) == Period(2023, 12)


@pytest.mark.parametrize(("question", "when"), [
    ("When did Caroline go to the LGBTQ support group?", True),
    ("what year did Jon open his studio?", True),
    ("How long ago did they move?", True),
    ("Wann hat Anna ihren Hund bekommen?", True),
    ("In welchem Jahr ist sie umgezogen?", True),
    ("Where did Caroline move from?", False),
    ("What did Mel paint when she was sad?", False),  # "when" not asked
])
def test_a_question_that_asks_when(question, when):
    assert asks_when(question) is when


@pytest.mark.parametrize(("text", "states"), [
    ("Caroline: I went to a LGBTQ support group yesterday and it was so powerful.", True),
    ("Jon: We opened the studio last Friday!", True),
    ("Mel: Two weeks ago we went camping.", True),
    ("Gina: I moved here in 2019.", True),
    ("Anna: Am 3. Mai war ich in Wien.", True),
    ("Ben: Vor drei Tagen habe ich angefangen.", True),
    ("Mel: I love painting sunsets.", False),
    ("Jon: That sounds amazing, tell me more!", False),
])
def test_a_memory_that_states_a_time(text, states):
    assert states_time(text) is states


def test_time_patterns_stay_linear_on_hostile_input():
    """No backtracking blow-up: a long run of near-matches is read at once."""
    import time
    hostile = "last " * 20_000 + "vor 1 " * 20_000 + "1." * 20_000
    began = time.perf_counter()
    states_time(hostile)
    named_period(hostile, NOW)
    asks_when(hostile)
    assert time.perf_counter() - began < 2.0


def test_a_period_contains_its_days():
    assert Period(2023, 5).contains(datetime(2023, 5, 31, 23, 59, tzinfo=UTC))
    assert not Period(2023, 5).contains(datetime(2023, 6, 1, tzinfo=UTC))
    assert Period(None, 6).contains(datetime(2021, 6, 3, tzinfo=UTC))
    assert not Period(2023, 10, 13).contains(datetime(2023, 10, 14, tzinfo=UTC))


def test_a_dated_question_prefers_the_turn_of_its_period(module_database_url, db, tmp_path):
    """Two sessions say the same about camping, in May and in July; the question names July."""
    plain = hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                    retrieval_min_score=0.0)
    instance = f"when-{uuid.uuid4().hex[:10]}"
    ids = {}
    for month, text in ((5, "Melanie: We went camping by the lake with the kids, so fun."),
                        (7, "Melanie: We went camping by the lake with the kids, so fun!")):
        ctx = AccessContext(instance, user_id="mel", session_key=f"chat-{month}")
        when = datetime(2023, month, 10, 12, 0, tzinfo=UTC)
        for minute, filler in enumerate(("Caroline: Hi Mel, how are you?",
                                         "Melanie: Busy week, but good.")):
            store_memory(db, plain, ctx, MemoryWrite(f"{filler} ({month})",
                                                     occurred_at=when + timedelta(minutes=minute)))
        ids[month] = store_memory(db, plain, ctx, MemoryWrite(
            text, occurred_at=when + timedelta(minutes=5))).id
    def first(settings, question):
        return search_memories(db, settings, AccessContext(instance, user_id="mel"), question,
                               limit=5, stamp=False)[0].memory_id

    dated = plain.model_copy(update={"retrieval_time_prior": 0.3})
    # The two turns tie but for their dates (which one wins without the prior is the hash
    # embedding's accident): the month the question names picks its turn, both ways round.
    assert first(dated, "When did Melanie go camping in May?") == ids[5]
    assert first(dated, "When did Melanie go camping in July?") == ids[7]


def _conversation(db, settings, instance: str, turns: list[tuple[datetime, str]]
                  ) -> dict[str, uuid.UUID]:
    ids = {}
    for number, (when, text) in enumerate(turns):
        ctx = AccessContext(instance, user_id="mel", session_key=f"chat-{number}")
        ids[text] = store_memory(db, settings, ctx, MemoryWrite(text, occurred_at=when)).id
    return ids


def test_a_question_about_last_week_prefers_the_turn_of_last_week(module_database_url, db,
                                                                  tmp_path):
    """Relative to the moment the search runs: the same words said a month ago and last
    week; "last week" picks last week's, "a month ago" the other."""
    plain = hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                    retrieval_min_score=0.0)
    instance = f"when-{uuid.uuid4().hex[:10]}"
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    last_week = today - timedelta(days=today.weekday() + 4)  # Thursday of last week
    month_ago = today - timedelta(days=30)
    ids = _conversation(db, plain, instance, [
        (month_ago, "Melanie: We went camping by the lake with the kids, so fun."),
        (last_week, "Melanie: We went camping by the lake with the kids, so fun!")])
    dated = plain.model_copy(update={"retrieval_time_prior": 0.3})
    ctx = AccessContext(instance, user_id="mel")
    def first(question):
        return search_memories(db, dated, ctx, question, limit=5, stamp=False)[0].memory_id
    assert first("Where did Melanie go camping last week?") == \
        ids["Melanie: We went camping by the lake with the kids, so fun!"]
    assert first("Where did Melanie go camping a month ago?") == \
        ids["Melanie: We went camping by the lake with the kids, so fun."]


def test_a_when_question_prefers_the_turn_that_says_when(module_database_url, db, tmp_path):
    """Two turns about the support group; only one says when. Asked "When ...", the prior
    puts it first; asked "What ...", the order is the plain one."""
    plain = hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                    retrieval_min_score=0.0, retrieval_when_prior=0.0)
    instance = f"when-{uuid.uuid4().hex[:10]}"
    day = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
    timeless = "Caroline: Going to the LGBTQ support group helps me so much."
    dated_turn = "Caroline: I was at the LGBTQ support group yesterday."
    ids = _conversation(db, plain, instance, [(day, timeless),
                                              (day + timedelta(minutes=1), dated_turn)])
    ctx = AccessContext(instance, user_id="mel")
    question = "When did Caroline go to the LGBTQ support group?"
    def scores(settings, query):
        return {h.memory_id: h.score for h in search_memories(db, settings, ctx, query,
                                                              limit=5, stamp=False)}
    prior = plain.model_copy(update={"retrieval_when_prior": 0.5})
    without, with_prior = scores(plain, question), scores(prior, question)
    assert with_prior[ids[dated_turn]] == pytest.approx(1.5 * without[ids[dated_turn]], abs=1e-5)
    assert with_prior[ids[timeless]] == pytest.approx(without[ids[timeless]])
    assert max(with_prior, key=with_prior.get) == ids[dated_turn]
    # Not asked when: the prior does nothing.
    what = "Why does Caroline go to the LGBTQ support group?"
    assert scores(prior, what) == scores(plain, what)
