"""Which words of a question are selective enough to generate keyword candidates.

A word that occurs in a large share of all chunks ("gmbh" in a tax-advisory workspace)
matches thousands of rows: its GIN posting list alone costs milliseconds to read, and the
first few hundred matches the keyword arm may rank are an arbitrary sample, not the best.
Such words still count in every candidate's keyword score; they only stop generating
candidates (the idea of Lucene's "common terms" query). The vector arm and the selective
words find the candidates.

Document frequencies come from the planner statistics PostgreSQL keeps for the chunk
tsvector column (``pg_stats.most_common_elems``, refreshed by ANALYZE/autovacuum): lexemes
not in that list are rarer than all of it. Without statistics every word is selective.
When every word of a question is common, the arms that have no other source of candidates
let the least common few generate them (:func:`generating_terms`); every lexical arm reads a
bounded number of matches (``retrieval_lexical_scan_cap``) before it filters them by audience.
Both lookups are cached per process: the statistics for a few minutes, a word's stems
(English and German, as the column is indexed) until evicted.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

import psycopg

from memory_platform.db.connection import database_identity

STATS_TTL_SECONDS = 300.0
_STEM_CACHE_SIZE = 20_000

_STATS = """
    SELECT most_common_elems::text::text[], most_common_elem_freqs
      FROM pg_stats
     WHERE schemaname = current_schema() AND tablename = %s AND attname = %s
"""
# Whose words: the text column whose planner statistics say how common a word is. Chunk
# search asks the chunks; graph search the claim texts (a word common in conversation may be
# rare among claims, and the other way round).
CHUNK_TEXT = ("agent_memory_chunks", "content_tsv")
CLAIM_TEXT = ("agent_knowledge_claims", "claim_tsv")
_STEMS = """
    SELECT w, tsvector_to_array(to_tsvector('english', w) || to_tsvector('german', w))
      FROM unnest(%s::text[]) AS w
"""

_lock = threading.Lock()
_frequencies: dict[tuple, tuple[float, dict[str, float]]] = {}
_stems: OrderedDict[str, tuple[str, ...]] = OrderedDict()


def lexeme_frequencies(conn: psycopg.Connection,
                       column: tuple[str, str] = CHUNK_TEXT) -> dict[str, float]:
    """Share of rows of ``column`` (table, tsvector column) containing each common lexeme
    (empty without statistics)."""
    key = (*database_identity(conn), *column)
    now = time.monotonic()
    with _lock:
        cached = _frequencies.get(key)
    if cached and now - cached[0] < STATS_TTL_SECONDS:
        return cached[1]
    row = conn.execute(_STATS, column).fetchone()
    frequencies: dict[str, float] = {}
    if row and row[0] and row[1]:
        frequencies = dict(zip(row[0], row[1], strict=False))  # freqs end with min/max/null
    with _lock:
        _frequencies[key] = (now, frequencies)
    return frequencies


def stems(conn: psycopg.Connection, words: list[str]) -> dict[str, tuple[str, ...]]:
    """The lexemes each word becomes in the English and German configurations.

    A word with a digit in it (an invoice number, "t4007", "covid19") is its own lexeme in
    both: identifiers are mostly new words, and asking the server for each would cost a
    round trip per query."""
    with _lock:
        known = {w: _stems[w] for w in words if w in _stems}
        for w in known:
            _stems.move_to_end(w)
    known.update({w: (w,) for w in words if w not in known and _has_digit(w)})
    missing = [w for w in words if w not in known]
    if missing:
        fetched = {w: tuple(lexemes) for w, lexemes in conn.execute(_STEMS, (missing,))}
        with _lock:
            _stems.update(fetched)
            while len(_stems) > _STEM_CACHE_SIZE:
                _stems.popitem(last=False)
        known.update(fetched)
    return known


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def selective_terms(conn: psycopg.Connection, terms: list[str], common_share: float
                    ) -> list[str]:
    """The terms none of whose lexemes occurs in more than ``common_share`` of all chunks
    (a term that stems to nothing, e.g. a stopword in both languages, is dropped)."""
    return generating_terms(conn, terms, common_share, fallback=0)


def generating_terms(conn: psycopg.Connection, terms: list[str], common_share: float,
                     fallback: int, column: tuple[str, str] = CHUNK_TEXT) -> list[str]:
    """The terms that generate lexical candidates: the selective ones (see
    :func:`selective_terms`); when none is, the ``fallback`` least common terms (in the
    question's order), so a question of common words only still finds its matches where no
    other arm would. A term that stems to nothing never generates. ``column`` is the text
    whose statistics count (chunks by default)."""
    if not terms:
        return []
    frequencies = lexeme_frequencies(conn, column)
    if not frequencies:
        return terms
    lexemes = stems(conn, terms)
    share = {t: max(frequencies.get(x, 0.0) for x in lexemes[t])
             for t in terms if lexemes.get(t)}
    selective = [t for t in share if share[t] <= common_share]
    if selective or not fallback:
        return selective
    rarest = set(sorted(share, key=share.__getitem__)[:fallback])
    return [t for t in share if t in rarest]


def term_weights(conn: psycopg.Connection, terms: list[str]) -> dict[str, float]:
    """A rarity weight per term, ``log(1 + 1 / share)`` (an inverse document frequency):
    ``share`` is the largest share of chunks one of the term's lexemes occurs in, and a
    lexeme missing from the statistics' common list counts as half as frequent as the
    rarest listed one. ``ts_rank`` itself weighs every word of a question alike, so the
    speaker's name that opens half of a conversation's turns would count as much as the one
    rare word that matters. Without statistics every weight is 1."""
    frequencies = lexeme_frequencies(conn)
    if not frequencies or not terms:
        return dict.fromkeys(terms, 1.0)
    unlisted = min(frequencies.values()) / 2
    lexemes = stems(conn, terms)
    weights = {}
    for term in terms:
        share = max((frequencies.get(x, unlisted) for x in lexemes.get(term, ())),
                    default=unlisted)
        weights[term] = math.log1p(1.0 / max(share, 1e-6))
    return weights


def forget() -> None:
    """Drop the cached statistics (tests, or after a large import)."""
    with _lock:
        _frequencies.clear()
