"""Common words score candidates but do not generate them (retrieval/lexicon.py).

The instance's exact counts (migration 0033): the test writes chunks where one word is in
every row, checks which words still generate keyword candidates, and that search keeps
finding what the selective words and the vectors find.
"""

from __future__ import annotations

import math
import uuid

import pytest

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval import lexicon
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

COMMON = "quarterly"


@pytest.fixture
def settings(database_url: str, tmp_path) -> Settings:
    # A word in at most retrieval_keyword_match_cap chunks always generates: 10 (the least
    # allowed) lets the 60 chunks below hold common words.
    return hash_embedding_settings(database_url, data_dir=tmp_path / "state",
                                   retrieval_keyword_match_cap=10)


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"lexicon-{uuid.uuid4().hex[:10]}", user_id="ada")


@pytest.fixture
def corpus(conn, settings, ctx) -> dict[int, uuid.UUID]:
    """60 memories that all say COMMON, every other one "urgent"; each also names its own
    ticket number."""
    ids = {}
    for n in range(60):
        text = (f"The {COMMON} report of team {n % 7} mentions ticket T{4000 + n} once"
                f"{' (urgent)' if n % 2 else ''}.")
        ids[n] = store_memory(conn, settings, ctx, MemoryWrite(text, source_type="manual",
                                                               visibility="team")).id
    return ids


def test_without_rows_every_word_is_selective(conn, settings, ctx):
    # An instance without chunks has nothing to count yet.
    counts = lexicon.rarity(conn, ctx.instance_key, ["quarterly", "t4007"])
    assert counts.rows == 0
    assert lexicon.selective_terms(counts, settings) == ["quarterly", "t4007"]


def test_a_word_in_every_chunk_does_not_generate_candidates(conn, settings, ctx, corpus):
    counts = lexicon.rarity(conn, ctx.instance_key, [COMMON, "t4007", "report"])
    assert counts.rows == counts.documents[COMMON] == 60  # the stem "quarter", in every chunk
    assert lexicon.selective_terms(counts, settings) == ["t4007"]
    everything = settings.model_copy(update={"retrieval_keyword_common_share": 1.0})
    assert lexicon.selective_terms(counts, everything) == [COMMON, "t4007", "report"]


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


def test_f9_when_every_word_is_common_only_the_least_common_few_generate(
        conn, settings, ctx, corpus):
    """Keyword-only mode and the arms without vectors: a selective word alone generates;
    when none is, the `retrieval_common_terms_fallback` least common words do (never all
    24)."""
    one = settings.model_copy(update={"retrieval_common_terms_fallback": 1})
    counts = lexicon.rarity(conn, ctx.instance_key, [COMMON, "t4007", "report"])
    assert lexicon.generating_terms(counts, one) == ["t4007"]
    counts = lexicon.rarity(conn, ctx.instance_key, [COMMON, "urgent", "report"])
    assert counts.documents[COMMON] > counts.documents["urgent"] == 30  # every other one
    assert lexicon.generating_terms(counts, one) == ["urgent"]
    assert lexicon.selective_terms(counts, one) == []


def test_a_rare_word_weighs_more_than_a_common_one(conn, ctx, corpus):
    weights = lexicon.term_weights(lexicon.rarity(conn, ctx.instance_key,
                                                  [COMMON, "team", "t4007", "unseen"]))
    # "quarterly" is in every chunk, "team" too; the ticket number in one, "unseen" in none
    # (it counts as half a chunk).
    assert weights["unseen"] > weights["t4007"] > 2 * weights[COMMON]
    assert weights["t4007"] == pytest.approx(math.log(61))
    assert weights[COMMON] == pytest.approx(math.log(2))


def test_without_rows_every_word_weighs_the_same(conn, ctx):
    assert lexicon.term_weights(lexicon.rarity(conn, ctx.instance_key, ["quarterly", "t4007"])
                                ) == {"quarterly": 1.0, "t4007": 1.0}


def test_the_rare_word_outranks_common_words(conn, settings, ctx, corpus):
    """Keyword only, every word generating: the one memory with the rare word beats the 60
    that match the two common words (ts_rank alone counts every word alike, so without the
    weights two common words beat one rare word)."""
    rare = store_memory(conn, settings, ctx, MemoryWrite(
        "Ticket T9999 was closed on Friday.", source_type="manual", visibility="team")).id
    keyword_only = settings.model_copy(update={
        "retrieval_vector_weight": 0.0, "retrieval_keyword_weight": 1.0,
        "retrieval_keyword_common_share": 1.0, "retrieval_keyword_match_cap": 100})

    def first(tuned: Settings) -> uuid.UUID:
        return search_memories(conn, tuned, ctx, f"{COMMON} report T9999", stamp=False,
                               embedder=OutageEmbedder())[0].memory_id

    assert first(keyword_only) == rare
    assert first(keyword_only.model_copy(update={"retrieval_keyword_idf": False})) != rare
