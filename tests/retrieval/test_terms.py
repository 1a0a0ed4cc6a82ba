"""The terms of a question: content words only, each once."""

from __future__ import annotations

import pytest

from memory_platform.features.retrieval.terms import query_terms


@pytest.mark.parametrize(("question", "terms"), [
    ("What, when and where is the VAT deadline?", ["vat", "deadline"]),
    ("Who knows how and why the invoice was paid?", ["knows", "invoice", "paid"]),
    ("Wer weiß, wann und wo die Frist ist?", ["weiß", "frist"]),
    ("Warum und wie wurde die Rechnung bezahlt?", ["rechnung", "bezahlt"]),
])
def test_question_words_and_stopwords_are_dropped_from_the_query(question, terms):
    assert query_terms(question) == terms


def test_f11_words_longer_than_255_bytes_lowercased_are_dropped():
    """Review A9: 700 x "Ⱥ" is 1,400 bytes as sent and 2,100 lower-cased (past PostgreSQL's
    2,047-byte lexeme limit); no such word reaches a tsquery."""
    grows = "\u023a" * 700
    assert len(grows.encode()) < 2047 < len(grows.lower().encode())
    assert query_terms(f"{grows} invoice") == ["invoice"]
    assert query_terms("a" * 255 + " " + "b" * 256) == ["a" * 255]
    assert query_terms("\u00e4" * 128) == []  # 256 bytes in UTF-8
