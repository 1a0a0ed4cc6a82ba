"""Chunk boundaries: about ``target`` characters, on sentence/paragraph boundaries, with the
previous chunk's last sentences repeated, every chunk a verbatim slice of the memory."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memory_platform.features.memories.chunking import Chunk, chunk_text

ENGLISH = " ".join(
    f"Sentence {i} says that the billing service number {i * 7} was deployed on day {i}."
    for i in range(60)
)
GERMAN = "\n\n".join(
    " ".join(
        f"Die Rechnung Nr. {p * 10 + s} für Kunde Müller wurde am Montag geprüft und "
        f"freigegeben; die Umsatzsteuer-Voranmeldung folgt „nächste Woche“."
        for s in range(4)
    )
    for p in range(12)
)
_SENTENCE_END = re.compile(r"[.!?…][\"'»«“”)\]]*$")


def _assert_verbatim(text: str, chunks: list[Chunk]) -> None:
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert chunk.content == text[chunk.start:chunk.end]


def test_short_text_is_one_chunk_equal_to_the_text():
    text = "The VAT filing for Mandant Nord is due on the tenth."
    assert chunk_text(text) == [Chunk(0, 0, len(text), text)]


def test_whitespace_only_text_has_no_chunks():
    assert chunk_text(" \n\t ") == []


def test_every_chunk_is_the_verbatim_slice_of_its_offsets():
    _assert_verbatim(ENGLISH, chunk_text(ENGLISH))
    _assert_verbatim(GERMAN, chunk_text(GERMAN))


def test_long_text_chunks_are_about_the_target_size():
    chunks = chunk_text(ENGLISH, target=1000, overlap=150)
    assert len(chunks) > 3
    assert all(len(c.content) <= 1000 for c in chunks)
    assert all(len(c.content) >= 800 for c in chunks[:-1])


def test_chunks_end_at_sentence_boundaries_in_english():
    chunks = chunk_text(ENGLISH, target=1000, overlap=150)
    for chunk in chunks:
        assert _SENTENCE_END.search(chunk.content), chunk.content[-40:]
        assert chunk.end == len(ENGLISH) or ENGLISH[chunk.end].isspace()


def test_chunks_end_at_sentence_boundaries_in_german():
    chunks = chunk_text(GERMAN, target=600, overlap=150)
    assert len(chunks) > 3
    for chunk in chunks:
        assert _SENTENCE_END.search(chunk.content), chunk.content[-40:]


def test_chunks_end_at_paragraph_boundaries_without_punctuation():
    text = "\n\n".join(f"Heading {i}\nline with the notes of section {i} " * 6 for i in range(10))
    chunks = chunk_text(text, target=500, overlap=0)
    assert len(chunks) > 2
    for chunk in chunks[:-1]:
        assert text[chunk.end:chunk.end + 2] == "\n\n"


def test_overlap_repeats_the_last_sentences_of_the_previous_chunk():
    chunks = chunk_text(ENGLISH, target=1000, overlap=150)
    starts = {m.start() for m in re.finditer(r"Sentence \d+", ENGLISH)}
    for previous, chunk in zip(chunks, chunks[1:], strict=False):
        assert chunk.start < previous.end
        repeated = ENGLISH[chunk.start:previous.end]
        assert chunk.start in starts  # whole sentences, not a fragment
        assert len(repeated) <= 150
        assert previous.content.endswith(repeated)


def test_no_overlap_when_overlap_is_zero():
    chunks = chunk_text(ENGLISH, target=1000, overlap=0)
    for previous, chunk in zip(chunks, chunks[1:], strict=False):
        assert chunk.start > previous.end


def test_a_single_very_long_sentence_is_cut_at_whitespace():
    words = [f"wort{i:04d}" for i in range(400)]
    text = " ".join(words)  # one 3600-character sentence, no punctuation
    chunks = chunk_text(text, target=1000, overlap=150)
    assert len(chunks) >= 4
    _assert_verbatim(text, chunks)
    for chunk in chunks:
        assert len(chunk.content) <= 1000
        assert set(chunk.content.split()) <= set(words)  # no word cut in two


def test_a_long_line_of_newline_separated_words_is_cut_at_whitespace():
    words = [f"posten{i:05d}" for i in range(300)]
    text = "\n".join(words)  # a list without sentence punctuation or blank lines
    chunks = chunk_text(text, target=1000, overlap=0)
    for chunk in chunks:
        assert set(chunk.content.split()) <= set(words), "a word was cut in two"


def test_a_word_longer_than_the_target_is_hard_cut():
    text = "x" * 2500
    chunks = chunk_text(text, target=1000, overlap=150)
    assert [len(c.content) for c in chunks] == [1000, 1000, 500]
    assert "".join(c.content for c in chunks) == text


_ALPHABET = st.sampled_from(list("abcdeäöüß ") * 3 + [".", "!", "?", "…", "\n", "\n\n", "»", "“"])
_TEXTS = st.lists(_ALPHABET, min_size=1, max_size=1500).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS, target=st.integers(100, 400), overlap=st.integers(0, 200))
def test_chunks_cover_the_text_in_order_within_the_target(text, target, overlap):
    chunks = chunk_text(text, target=target, overlap=overlap)
    _assert_verbatim(text, chunks)
    covered = [False] * len(text)
    for chunk in chunks:
        assert 0 < len(chunk.content) <= target
        for i in range(chunk.start, chunk.end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())
    assert all(a.start < b.start and a.end < b.end
               for a, b in zip(chunks, chunks[1:], strict=False))
