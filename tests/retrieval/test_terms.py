"""The terms of a question: content words only, each once."""

from __future__ import annotations

import pytest

from memory_platform.retrieval.terms import query_terms


@pytest.mark.parametrize(("question", "terms"), [
    ("What, when and where is the VAT deadline?", ["vat", "deadline"]),
    ("Who knows how and why the invoice was paid?", ["knows", "invoice", "paid"]),
    ("Wer weiß, wann und wo die Frist ist?", ["weiß", "frist"]),
    ("Warum und wie wurde die Rechnung bezahlt?", ["rechnung", "bezahlt"]),
])
def test_question_words_and_stopwords_are_dropped_from_the_query(question, terms):
    assert query_terms(question) == terms
