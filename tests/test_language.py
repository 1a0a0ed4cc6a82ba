"""memory_platform.foundation.language: the text rules every extractor and retrieval share, each
stated
once. One language guess (the extractive model and the offline graph extractor used two that
had drifted apart), one list of the words that are never a name (three copies had drifted:
the extractive model, the offline graph and the summaries' anchors each skipped different
ones), one word tokenizer and one sentence splitter. Retrieval's stopwords and words are the
same objects as before, re-exported (its behaviour does not move); the hashing embedding keeps
its own frozen list."""

from __future__ import annotations

import pytest

from memory_platform.features.dreaming import extractive
from memory_platform.features.graph import offline
from memory_platform.features.retrieval import stopwords, terms
from memory_platform.features.sessions import facts_offline, summarise
from memory_platform.foundation import language
from memory_platform.shared.embeddings import hashing


def test_one_language_guess_serves_every_extractor():
    assert extractive.is_german is offline.is_german is language.is_german


@pytest.mark.parametrize(("text", "german"), [
    # German by its modal verbs, prepositions and the verbs of statements about people: the
    # extractive model's own guess (23 hints) took these for English.
    ("Sensoren dürfen keine Partitionen doppelt anlegen.", True),
    ("Jonas mag keine Meetings vor zehn Uhr.", True),
    ("Support antwortet immer in der Sprache des Mandanten.", True),
    ("The staging server has 32 GB RAM.", False),
    ("Bürogebäude Köln", True),        # no hint either way: the umlauts decide
    ("Release 2.3", False),
])
def test_the_language_guess(text, german):
    assert language.is_german(language.words(text)) is german


def test_a_function_word_is_no_name_for_the_extractive_model():
    sentence = "Note that the API is versioned."
    kind, _, _, cue = extractive.classify(sentence)
    assert kind == "fact" and extractive.subject_of(sentence, cue) == "API"  # not "Note"


def test_a_greeting_is_no_part_of_a_name_in_the_offline_graph():
    assert [n.label for n in offline.find_names("Hey Mel! I went to a pottery workshop.")] \
        == ["Mel"]                                                          # not "Hey Mel"


def test_a_function_word_in_capitals_is_no_summary_anchor():
    assert summarise.anchors("Run INSERT INTO the events table first.") == ["INSERT"]


def test_the_extractors_skip_one_list_of_non_names():
    assert extractive.NAME_STOPWORDS is offline.NAME_STOPWORDS is summarise.NAME_STOPWORDS \
        is language.NAME_STOPWORDS


def test_retrieval_reads_the_same_stopwords_and_words():
    assert stopwords.ALL is language.STOPWORDS
    assert (stopwords.ENGLISH, stopwords.GERMAN) == (language.ENGLISH, language.GERMAN)
    assert terms.words is language.words
    assert terms.query_terms("Was hat Ada über die Rechnungen gesagt?") == [
        "ada", "rechnungen", "gesagt"]


def test_one_sentence_splitter_and_word_cut():
    assert extractive.split_sentences is facts_offline.split_sentences \
        is summarise.split_sentences is language.split_sentences
    assert offline.cut_at_word is extractive.cut_at_word is language.cut_at_word
    assert language.split_sentences("Dr. Lee kam z. B. um 9 Uhr. Then: 2 tests!\n- Done") \
        == ["Dr. Lee kam z. B. um 9 Uhr.", "Then: 2 tests!", "Done"]


def test_the_hashing_model_keeps_its_frozen_list():
    assert hashing.STOPWORDS is not language.STOPWORDS
    assert hashing.STOPWORDS != language.STOPWORDS
