"""Questions that ask for a count or a list (retrieval/several.py). What search does with them
(``retrieval_turn_list_spread``) is tested in test_turn_sessions.py."""

from __future__ import annotations

import pytest

from memory_platform.features.retrieval.several import asks_for_several


@pytest.mark.parametrize("question", [
    "How many tournaments has Nate won?",
    "how often did we go swimming",
    "Which cities has Jon visited?",
    "What are Dave's hobbies other than fixing cars?",
    "What were the reasons she gave?",
    "What kinds of classes has James joined?",
    "What kind of healthy meals did Sam start eating?",
    "What items has Melanie bought?",
    "Wie viele Hunde hat Andrew?",
    "Was sind Annas Lieblingsbücher?",
])
def test_a_question_asking_for_a_count_or_a_list(question):
    assert asks_for_several(question)


@pytest.mark.parametrize("question", [
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "What is Caroline's relationship status?",
    "What class does James take on Mondays?",  # a singular noun ending in -ss
    "Where did Audrey get Pixie from?",
    "What does Jon's dance studio offer?",  # "Jon's": no plural
    "Was hat Anna gestern gekocht?",
    "",
    "?",
    "How",
])
def test_a_question_asking_for_one_thing(question):
    assert not asks_for_several(question)


def test_only_the_first_words_are_read():
    # A question's kind is in its first words: what follows them is never read (a hostile
    # megabyte costs what its first 200 characters cost).
    assert not asks_for_several("What " + "cities " * 200_000 + "has he seen?")
    assert not asks_for_several("x " * 500_000 + "how many")
    assert asks_for_several("How many " + "x " * 500_000)
