"""How common each word of a question is in the caller's instance: which words generate
keyword candidates, and how much each weighs in the keyword score.

A word that occurs in a large share of all chunks ("gmbh" in a tax-advisory workspace)
matches thousands of rows: its GIN posting list alone costs milliseconds to read, and the
first few hundred matches the keyword arm may rank are an arbitrary sample, not the best.
Such words still count in every candidate's keyword score; they only stop generating
candidates (the idea of Lucene's "common terms" query). The vector arm and the selective
words find the candidates. A word is common when it is in more than
``retrieval_keyword_common_share`` of the instance's chunks *and* in more than the
``retrieval_keyword_match_cap`` the keyword arm ranks: below that the arm ranks every match,
so a small instance keeps all its words. When every word of a question is common, the arms
that have no other source of candidates let the least common few generate them
(:func:`generating_terms`); every lexical arm reads a bounded number of matches
(``retrieval_lexical_scan_cap``) before it filters them by audience. The rarity weight is
``log(1 + rows / documents)`` (:func:`term_weights`).

The counts are exact and the same for every process: migration 0033 keeps, per instance and
corpus (:data:`CHUNKS`, :data:`CLAIMS`), how many rows hold each lexeme and how many rows
there are, in the writing transaction (statement triggers). A question reads them with one
index probe per lexeme (:func:`rarity`), in its own snapshot, and nothing of them is cached:
a fresh process and one that has been up for an hour rank the same rows the same way, before
and after any write or ANALYZE. They count the caller's instance only, so one tenant's
vocabulary neither moves another's ranking nor shows through its scores; within an instance
they count every row, whoever may read it (as the old planner statistics did). Only a word's
stems (English and German, as the columns are indexed) are cached per process, until
evicted: they depend on the text search configuration alone.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import psycopg

from memory_platform.foundation.settings import Settings

_STEM_CACHE_SIZE = 20_000

# Whose words: the rows whose counts say how common a word is. Chunk search asks the chunks
# (agent_memory_chunks.content_tsv); graph search the claim texts
# (agent_knowledge_claims.claim_tsv): a word common in conversation may be rare among claims,
# and the other way round.
CHUNKS = "chunks"
CLAIMS = "claims"
_ROWS = ""  # the lexeme under which migration 0033 counts the corpus' rows

_COUNTS = """
    SELECT lexeme, documents
      FROM agent_memory_lexemes
     WHERE instance_key = %s AND corpus = %s AND lexeme = ANY(%s::text[])
"""
_STEMS = """
    SELECT w, tsvector_to_array(to_tsvector('english', w) || to_tsvector('german', w))
      FROM unnest(%s::text[]) AS w
"""

_lock = threading.Lock()
_stems: OrderedDict[str, tuple[str, ...]] = OrderedDict()


@dataclass(frozen=True)
class Rarity:
    """How common the terms of one question are in one instance's corpus."""

    terms: tuple[str, ...]  # the question's terms, in its order
    rows: int  # the corpus' rows in the instance
    documents: dict[str, int]  # term -> rows holding its most common lexeme; a term that
    # stems to nothing (a stopword in both languages) is missing


def rarity(conn: psycopg.Connection, instance_key: str, terms: list[str],
           corpus: str = CHUNKS) -> Rarity:
    """The exact counts of ``terms`` in ``corpus`` of ``instance_key`` (one round trip; none
    without terms)."""
    if not terms:
        return Rarity((), 0, {})
    lexemes = stems(conn, terms)
    wanted = sorted({x for t in terms for x in lexemes.get(t, ())} | {_ROWS})
    counts = dict(conn.execute(_COUNTS, (instance_key, corpus, wanted)).fetchall())
    return Rarity(tuple(terms), counts.get(_ROWS, 0),
                  {t: max(counts.get(x, 0) for x in lexemes[t])
                   for t in terms if lexemes.get(t)})


def _common(counts: Rarity, term: str, settings: Settings) -> bool:
    documents = counts.documents[term]
    return (documents > settings.retrieval_keyword_match_cap
            and documents > settings.retrieval_keyword_common_share * counts.rows)


def selective_terms(counts: Rarity, settings: Settings) -> list[str]:
    """The terms that are not common (module docstring), in the question's order; a term
    that stems to nothing is dropped."""
    return [t for t in counts.terms
            if t in counts.documents and not _common(counts, t, settings)]


def generating_terms(counts: Rarity, settings: Settings) -> list[str]:
    """The terms that generate lexical candidates where no other arm would: the selective
    ones (:func:`selective_terms`); when none is, the
    ``retrieval_common_terms_fallback`` least common terms (in the question's order), so a
    question of common words only still finds its matches. A term that stems to nothing
    never generates."""
    selective = selective_terms(counts, settings)
    if selective:
        return selective
    ranked = sorted((t for t in counts.terms if t in counts.documents),
                    key=counts.documents.__getitem__)  # stable: ties in question order
    rarest = set(ranked[:settings.retrieval_common_terms_fallback])
    return [t for t in counts.terms if t in rarest]


def term_weights(counts: Rarity) -> dict[str, float]:
    """A rarity weight per term, ``log(1 + rows / documents)`` (an inverse document
    frequency; ``documents`` of the term's most common lexeme, half a row for a term found
    nowhere or stemming to nothing): ``ts_rank`` itself weighs every word of a question
    alike, so the speaker's name that opens half of a conversation's turns would count as
    much as the one rare word that matters. In an instance without rows every weight is 1."""
    if not counts.rows:
        return dict.fromkeys(counts.terms, 1.0)
    return {t: math.log1p(counts.rows / max(counts.documents.get(t, 0), 0.5))
            for t in counts.terms}


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


def forget() -> None:
    """Drop the cached stems (tests). The counts are never cached."""
    with _lock:
        _stems.clear()
