"""Common words score candidates but do not generate them (retrieval/lexicon.py).

Real planner statistics: the test writes chunks where one word is in every row, runs
ANALYZE, and checks which words still generate keyword candidates, and that search keeps
finding what the selective words and the vectors find.
"""

from __future__ import annotations

import math
import uuid

import pytest

from memory_platform.access import AccessContext
from memory_platform.memories.store import MemoryWrite, store_memory
from memory_platform.retrieval import lexicon
from memory_platform.retrieval.search import search_memories
from memory_platform.settings import Settings
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

COMMON = "quarterly"


@pytest.fixture
def settings(database_url: str, tmp_path) -> Settings:
    return hash_embedding_settings(database_url, data_dir=tmp_path / "state")


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"lexicon-{uuid.uuid4().hex[:10]}", user_id="ada")


@pytest.fixture
def corpus(conn, settings, ctx) -> dict[int, uuid.UUID]:
    """60 memories that all say COMMON; each also names its own ticket number."""
    ids = {}
    for n in range(60):
        text = f"The {COMMON} report of team {n % 7} mentions ticket T{4000 + n} once."
        ids[n] = store_memory(conn, settings, ctx, MemoryWrite(text, source_type="manual",
                                                               visibility="team")).id
    conn.execute("ANALYZE agent_memory_chunks")
    lexicon.forget()
    return ids


def test_without_statistics_every_word_is_selective(conn):
    # A fresh database has no statistics for the chunk tsvector yet.
    lexicon.forget()
    assert lexicon.lexeme_frequencies(conn) == {}
    assert lexicon.selective_terms(conn, ["quarterly", "t4007"], 0.05) == [
        "quarterly", "t4007"]


def test_a_word_in_every_chunk_does_not_generate_candidates(conn, corpus):
    frequencies = lexicon.lexeme_frequencies(conn)
    assert frequencies.get("quarter", 0) > 0.9  # the English stem, in every chunk
    assert lexicon.selective_terms(conn, [COMMON, "t4007", "report"], 0.05) == ["t4007"]
    assert lexicon.selective_terms(conn, [COMMON, "t4007"], 1.0) == [COMMON, "t4007"]


def test_the_selective_word_finds_its_memory_and_common_words_still_score(
        conn, settings, ctx, corpus):
    hits = search_memories(conn, settings, ctx, f"{COMMON} report ticket T4007", stamp=False)
    assert hits and hits[0].memory_id == corpus[7]
    assert hits[0].keyword_score == 1.0  # the best keyword score among the candidates


def test_without_a_query_vector_common_words_still_generate_candidates(
        conn, settings, ctx, corpus):
    # Keyword-only search (the embedding service is down): every word counts.
    hits = search_memories(conn, settings, ctx, f"{COMMON} report", stamp=False,
                           embedder=OutageEmbedder())
    assert len(hits) == settings.retrieval_top_k
    assert {h.memory_id for h in hits} <= set(corpus.values())


@pytest.mark.parametrize("word", ["48213", "t4007", "covid19", "3rd", "2024er"])
def test_a_word_with_a_digit_is_its_own_lexeme_as_the_server_says(conn, word):
    # The shortcut that saves the round trip must agree with the server's parsers.
    server = conn.execute(
        "SELECT tsvector_to_array(to_tsvector('english', %s) || to_tsvector('german', %s))",
        (word, word)).fetchone()[0]
    assert lexicon.stems(conn, [word]) == {word: tuple(server)}


def test_f9_when_every_word_is_common_only_the_least_common_few_generate(conn, corpus):
    """Keyword-only mode and the arms without vectors: a selective word alone generates;
    when none is, the `fallback` least common words do (never all 24)."""
    assert lexicon.generating_terms(conn, [COMMON, "t4007", "report"], 0.05, 1) == ["t4007"]
    frequencies = lexicon.lexeme_frequencies(conn)
    assert frequencies["quarter"] > frequencies["3"] > 0.05  # "team 3": a seventh of them
    assert lexicon.generating_terms(conn, [COMMON, "3", "report"], 0.05, 1) == ["3"]
    assert lexicon.generating_terms(conn, [COMMON, "3", "report"], 0.05, 0) == []


def test_a_rare_word_weighs_more_than_a_common_one(conn, corpus):
    weights = lexicon.term_weights(conn, [COMMON, "team", "t4007", "unseen"])
    # "quarterly" is in every chunk, "team" too; the ticket number in one, "unseen" in none
    # (an unlisted lexeme counts as half as frequent as the rarest listed one).
    assert weights["unseen"] > weights["t4007"] > 2 * weights[COMMON]
    assert weights["t4007"] == pytest.approx(math.log(61), rel=0.05)
    assert weights[COMMON] == pytest.approx(math.log(2), rel=0.05)


def test_without_statistics_every_word_weighs_the_same(conn):
    lexicon.forget()
    assert lexicon.term_weights(conn, ["quarterly", "t4007"]) == {"quarterly": 1.0,
                                                                  "t4007": 1.0}


def test_the_rare_word_outranks_common_words(conn, settings, ctx, corpus):
    """Keyword only, every word generating: the one memory with the rare word beats the 60
    that match the two common words (ts_rank alone counts every word alike, so without the
    weights two common words beat one rare word)."""
    rare = store_memory(conn, settings, ctx, MemoryWrite(
        "Ticket T9999 was closed on Friday.", source_type="manual", visibility="team")).id
    keyword_only = settings.model_copy(update={
        "retrieval_vector_weight": 0.0, "retrieval_keyword_weight": 1.0,
        "retrieval_keyword_common_share": 1.0})

    def first(tuned: Settings) -> uuid.UUID:
        return search_memories(conn, tuned, ctx, f"{COMMON} report T9999", stamp=False,
                               embedder=OutageEmbedder())[0].memory_id

    assert first(keyword_only) == rare
    assert first(keyword_only.model_copy(update={"retrieval_keyword_idf": False})) != rare
