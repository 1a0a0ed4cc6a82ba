"""Hybrid chunk search: the score formula, the minScore gate, topK, one hit per memory,
retrieval stamping, subject-ref and feedback reordering after the gate, OR keyword semantics
with German and English stemming, and the HNSW path against exact search."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.features.retrieval.stamping import stamp_retrieved
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.generations import index_name
from tests.memories.support import OutageEmbedder
from tests.support.settings import hash_embedding_settings

HASH_KEY = "hash:feature-hash-v1:1536:v1"


@pytest.fixture
def make_settings(module_database_url: str, tmp_path: Path):
    def make(**overrides) -> Settings:
        return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state",
                                       **overrides)
    return make


@pytest.fixture
def settings(make_settings) -> Settings:
    return make_settings()


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"search-{uuid.uuid4().hex[:12]}", user_id="ada")


def _store(db, settings, ctx, content, **kwargs):
    kwargs.setdefault("source_type", "manual")
    return store_memory(db, settings, ctx, MemoryWrite(content, **kwargs)).id


def _keyword_only(db, settings, ctx, query, **kwargs):
    """Search without a query vector (the provider is down): the keyword arm alone."""
    return search_memories(db, settings, ctx, query, embedder=OutageEmbedder(), **kwargs)


CORPUS = [
    "The VAT filing for Mandant Nord is due on the tenth of each month.",
    "Mandant Nord pays its invoices by bank transfer within fourteen days.",
    "The quarterly VAT return of Mandant Sued is prepared by Bob.",
    "Lunch is served at noon in the cafeteria on the second floor.",
    "Die Rechnung für Kunde Müller wurde am Montag bezahlt.",
    "We deployed the billing service to production on Friday.",
]


@pytest.fixture
def corpus(db, settings, ctx) -> dict[uuid.UUID, str]:
    return {_store(db, settings, ctx, text): text for text in CORPUS}


# --- scores ------------------------------------------------------------------------------


def test_final_score_is_the_weighted_sum_of_vector_and_keyword_scores(db, settings, ctx,
                                                                     corpus):
    hits = search_memories(db, settings, ctx, "When is the VAT filing of Mandant Nord due?")
    assert len(hits) >= 2
    for hit in hits:
        assert hit.vector_score is not None and 0.0 <= hit.vector_score <= 1.0
        assert 0.0 <= hit.keyword_score <= 1.0
        assert hit.score == pytest.approx(0.8 * hit.vector_score + 0.2 * hit.keyword_score,
                                          abs=2e-6)
    assert hits[0].memory_id == next(i for i, t in corpus.items() if "tenth" in t)


def test_the_best_keyword_match_has_keyword_score_one(db, settings, ctx, corpus):
    hits = search_memories(db, settings, ctx, "VAT filing Mandant Nord")
    assert max(h.keyword_score for h in hits) == pytest.approx(1.0)


def test_hits_are_ordered_by_score(db, settings, ctx, corpus):
    hits = search_memories(db, settings, ctx, "Mandant Nord invoices VAT")
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_min_score_gates_exactly_the_hits_below_it(db, make_settings, ctx, corpus):
    query = "Mandant Nord VAT invoices"
    everything = search_memories(db, make_settings(retrieval_min_score=0.0), ctx, query,
                                 stamp=False)
    scores = sorted({h.score for h in everything}, reverse=True)
    assert len(scores) >= 3
    middle = len(scores) // 2
    threshold = (scores[middle - 1] + scores[middle]) / 2  # between two hits
    gated = search_memories(db, make_settings(retrieval_min_score=threshold), ctx, query,
                            stamp=False)
    assert [h.memory_id for h in gated] == [h.memory_id for h in everything
                                            if h.score >= threshold]
    assert 0 < len(gated) < len(everything)


def test_a_query_unrelated_to_every_memory_returns_nothing(db, settings, ctx, corpus):
    assert search_memories(db, settings, ctx, "Xylophone quartz zebra glacier") == []


# --- topK and one hit per memory ---------------------------------------------------------


@pytest.fixture
def falcon_notes(db, settings, ctx) -> list[uuid.UUID]:
    return [_store(db, settings, ctx, f"Project Falcon note {i}: the falcon budget review.")
            for i in range(10)]


def test_search_returns_at_most_top_k_hits_by_default(db, settings, ctx, falcon_notes):
    assert len(search_memories(db, settings, ctx, "falcon budget")) == 6


def test_a_smaller_limit_or_top_k_returns_fewer_hits(db, make_settings, settings, ctx,
                                                     falcon_notes):
    assert len(search_memories(db, settings, ctx, "falcon budget", limit=3)) == 3
    assert len(search_memories(db, make_settings(retrieval_top_k=2), ctx,
                               "falcon budget")) == 2


def test_a_memory_with_many_matching_chunks_is_one_hit(db, make_settings, ctx):
    small_chunks = make_settings(chunk_target_chars=200, chunk_overlap_chars=0)
    long_id = _store(db, small_chunks, ctx, " ".join(
        f"Section {i} of the falcon handbook covers the falcon budget in detail."
        for i in range(12)))
    other = _store(db, small_chunks, ctx, "The falcon budget is reviewed every quarter.")
    chunks = db.execute("SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s",
                        (long_id,)).fetchone()[0]
    assert chunks > 3

    hits = search_memories(db, small_chunks, ctx, "falcon budget")
    assert sorted(str(h.memory_id) for h in hits) == sorted([str(long_id), str(other)])


# --- stamping ----------------------------------------------------------------------------


def _stamps(db, memory_id):
    return db.execute("SELECT retrieval_count, last_retrieved_at IS NOT NULL FROM agent_memories"
                      " WHERE id = %s", (memory_id,)).fetchone()


def test_search_stamps_the_returned_memories_only(db, settings, ctx):
    found = _store(db, settings, ctx, "The falcon budget is reviewed every quarter.")
    missed = _store(db, settings, ctx, "Lunch is served at noon in the cafeteria.")
    search_memories(db, settings, ctx, "falcon budget")
    search_memories(db, settings, ctx, "falcon budget")
    assert _stamps(db, found) == (2, True)
    assert _stamps(db, missed) == (0, False)


def test_a_recall_stamp_is_a_heap_only_update(db, settings, ctx):
    # Pages keep room (0012, fillfactor 80) so a stamp writes no index entries.
    assert "fillfactor=80" in db.execute(
        "SELECT array_to_string(reloptions, ',') FROM pg_class"
        " WHERE relname = 'agent_memories'").fetchone()[0]
    memory_id = _store(db, settings, ctx, "The falcon budget is reviewed every quarter.")
    db.commit()
    with db.transaction():
        hot_before = db.execute("SELECT pg_stat_get_xact_tuples_hot_updated("
                                "'agent_memories'::regclass)").fetchone()[0]
        stamp_retrieved(db, ctx, [memory_id])
        hot_after = db.execute("SELECT pg_stat_get_xact_tuples_hot_updated("
                               "'agent_memories'::regclass)").fetchone()[0]
    assert hot_after == hot_before + 1
    assert _stamps(db, memory_id) == (1, True)


def test_search_without_stamping_leaves_the_counters_alone(db, settings, ctx):
    found = _store(db, settings, ctx, "The falcon budget is reviewed every quarter.")
    assert search_memories(db, settings, ctx, "falcon budget", stamp=False)
    assert _stamps(db, found) == (0, False)


# --- reordering after the gate -----------------------------------------------------------


def test_subject_refs_boost_reorders_equal_matches(db, settings, ctx):
    text = "The VAT filing for the client is due on the tenth of each month."
    nord = _store(db, settings, ctx, text, subject_refs={"mandantId": "nord"})
    sued = _store(db, settings, ctx, text, subject_refs={"mandantId": "sued"})
    for wanted, first, second in (("nord", nord, sued), ("sued", sued, nord)):
        hits = search_memories(db, settings, ctx, "VAT filing due",
                               subject_refs={"mandantId": wanted}, stamp=False)
        assert [h.memory_id for h in hits] == [first, second]
        assert hits[0].score == pytest.approx(1.1 * hits[1].score, abs=2e-6)


def _set_feedback(db, memory_id, injected=0, cited=0, corrected=0):
    db.execute(
        """
        UPDATE agent_memory_assertions a
           SET injected_count = %s, cited_count = %s, corrected_count = %s
          FROM agent_memories m
         WHERE m.id = %s AND a.id = m.assertion_id
        """, (injected, cited, corrected, memory_id))


def test_feedback_multiplier_reorders_assertion_backed_hits(db, settings, ctx):
    text = "Ada reviews the payroll export every Friday afternoon."
    private = _store(db, settings, ctx, text, source_type="fact", visibility="private")
    team = _store(db, settings, ctx, text, source_type="fact", visibility="team")
    _set_feedback(db, private, corrected=3)
    hits = search_memories(db, settings, ctx, "payroll export Friday", stamp=False)
    assert [h.memory_id for h in hits] == [team, private]

    _set_feedback(db, private, injected=3, cited=3)
    _set_feedback(db, team, corrected=1)
    hits = search_memories(db, settings, ctx, "payroll export Friday", stamp=False)
    assert [h.memory_id for h in hits] == [private, team]
    assert hits[0].score == pytest.approx(hits[1].score * 1.3 / 0.7, abs=2e-6)


@pytest.fixture
def weak_fact(db, settings, ctx, corpus) -> tuple[uuid.UUID, float]:
    """A fact that matches the query weakly, and its score before any feedback."""
    fact = _store(db, settings, ctx, "Bob archives the old invoices in the basement.",
                  source_type="fact")
    hits = search_memories(db, settings.model_copy(update={"retrieval_min_score": 0.0}), ctx,
                           "Mandant Nord invoices", stamp=False)
    score = next(h.score for h in hits if h.memory_id == fact)
    assert 0.15 < score < 0.85
    return fact, score


def test_a_boost_does_not_lift_a_hit_over_the_gate(db, make_settings, ctx, weak_fact):
    fact, score = weak_fact
    _set_feedback(db, fact, injected=3, cited=3)  # x1.3
    gate = make_settings(retrieval_min_score=score * 1.1)
    hits = search_memories(db, gate, ctx, "Mandant Nord invoices", stamp=False)
    assert fact not in [h.memory_id for h in hits]


def test_a_penalty_does_not_push_a_hit_under_the_gate(db, make_settings, ctx, weak_fact):
    fact, score = weak_fact
    _set_feedback(db, fact, corrected=3)  # x0.4
    gate = make_settings(retrieval_min_score=score * 0.9)
    hits = {h.memory_id: h for h in search_memories(db, gate, ctx, "Mandant Nord invoices",
                                                     stamp=False)}
    assert fact in hits
    assert hits[fact].score == pytest.approx(score * 0.4, abs=2e-6)


# --- keyword arm: OR semantics, stemming, question words ---------------------------------


def test_a_natural_question_finds_a_memory_through_the_words_it_shares(db, settings, ctx):
    vat = _store(db, settings, ctx, "The VAT filing for Mandant Nord is due on the tenth.")
    _store(db, settings, ctx, "Lunch is served at noon in the cafeteria.")
    hits = _keyword_only(db, settings, ctx,
                         "Could you remind me about the deadline for Nord's VAT paperwork?")
    assert [h.memory_id for h in hits] == [vat]
    assert hits[0].vector_score is None


def test_german_inflections_meet(db, settings, ctx):
    rechnung = _store(db, settings, ctx, "Die Rechnung für Kunde Müller wurde bezahlt.")
    mahnungen = _store(db, settings, ctx, "Alle Mahnungen gehen per Post an die Kunden.")
    assert [h.memory_id for h in _keyword_only(db, settings, ctx, "Rechnungen")] == [rechnung]
    assert [h.memory_id for h in _keyword_only(db, settings, ctx, "Mahnung")] == [mahnungen]


def test_english_inflections_meet(db, settings, ctx):
    deployed = _store(db, settings, ctx, "We deployed the billing services on Friday.")
    assert [h.memory_id for h in _keyword_only(db, settings, ctx, "deploying service")] == [
        deployed]


def test_a_memory_sharing_only_question_words_is_not_found(db, settings, ctx):
    _store(db, settings, ctx, "Wer, wie, was: wieso, weshalb, warum? Who, what, when, why?")
    wanted = _store(db, settings, ctx, "The falcon budget is reviewed every quarter.")
    hits = _keyword_only(db, settings, ctx, "Who, what, when and why: wer, wie, was, falcon?")
    assert [h.memory_id for h in hits] == [wanted]


def test_an_empty_query_is_invalid_input(db, settings, ctx):
    with pytest.raises(InvalidInput):
        search_memories(db, settings, ctx, "  \n ")


@hypothesis_settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(min_size=1, max_size=80))
def test_any_query_text_returns_hits_or_invalid_input(db, settings, ctx, corpus, query):
    try:
        hits = search_memories(db, settings, ctx, query, stamp=False)
    except InvalidInput:
        assert not query.strip()
    else:
        assert len(hits) <= settings.retrieval_top_k


# --- exact scan vs HNSW ------------------------------------------------------------------

_WORDS = [
    "invoice", "payroll", "falcon", "budget", "audit", "server", "deploy", "client", "tax",
    "contract", "meeting", "report", "backup", "license", "travel", "hiring", "vendor",
    "refund", "pricing", "roadmap", "Rechnung", "Steuer", "Kunde", "Vertrag", "Urlaub",
    "Lieferant", "Angebot", "Mahnung", "Quartal", "Bilanz",
]


def _hnsw_scans(db) -> int:
    db.execute("SELECT pg_stat_force_next_flush()")
    return db.execute("SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
                      " WHERE indexrelname = %s",
                      (index_name("agent_memory_chunks", HASH_KEY),)).fetchone()[0]


def test_hnsw_path_finds_what_the_exact_scan_finds(db, make_settings, ctx):
    rng = random.Random(20240611)
    settings = make_settings()
    for i in range(200):
        words = rng.sample(_WORDS, 4)
        _store(db, settings, ctx, f"Note {i}: {' '.join(words)} follow-up for team {i % 7}.")
    hnsw = make_settings(retrieval_exact_scan_max=0)
    queries = [" ".join(rng.sample(_WORDS, 2)) for _ in range(12)]

    recalls = []
    # At 200 rows the planner rightly prefers sorting an index range over the HNSW index;
    # taking the sort away makes it walk the index, which is what this test is about.
    db.execute("SET enable_sort = off")
    try:
        for query in queries:
            before = _hnsw_scans(db)
            exact = {h.memory_id for h in search_memories(db, settings, ctx, query, stamp=False)}
            assert _hnsw_scans(db) == before
            approximate = {h.memory_id
                           for h in search_memories(db, hnsw, ctx, query, stamp=False)}
            assert _hnsw_scans(db) > before
            assert len(exact) == 6
            recalls.append(len(exact & approximate) / len(exact))
    finally:
        db.execute("RESET enable_sort")
    assert sum(recalls) / len(recalls) >= 0.9


def test_search_leaves_the_callers_transaction_settings_alone(db, settings, ctx, corpus):
    # Inside a caller's transaction the search settings must not leak into what it runs next.
    with db.transaction():
        before = db.execute("SELECT current_setting('enable_seqscan'),"
                            " current_setting('plan_cache_mode')").fetchone()
        hits = search_memories(db, settings, ctx, "VAT filing Mandant Nord", stamp=False)
        after = db.execute("SELECT current_setting('enable_seqscan'),"
                           " current_setting('plan_cache_mode')").fetchone()
    assert hits and after == before == ("on", "auto")
    # and the prepared statement still serves the next search of the same shape
    again = search_memories(db, settings, ctx, "VAT filing Mandant Nord", stamp=False)
    assert [h.memory_id for h in again] == [h.memory_id for h in hits]
