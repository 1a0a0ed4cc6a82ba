"""The time a question names (retrieval/when.py) and the time prior of search: a dated
question prefers the turn said in the period it names (``retrieval_time_prior``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory_platform.access import AccessContext
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.retrieval.search import search_memories
from memory_platform.retrieval.when import Period, named_period
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
    ("What did they do last year?", None),  # relative: not read
    ("Where was she in May 2023 and in June 2023?", None),  # two periods
    ("Which city did Jon move to?", None),
])
def test_the_period_a_question_names(question, period):
    assert named_period(question) == period


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
