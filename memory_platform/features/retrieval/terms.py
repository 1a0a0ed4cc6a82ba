"""The words of a text, the terms of a question, and the full-text query over them.

A word is a run of letters and digits (``[^\\W_]+``): punctuation, white space and ``_``
separate words. Chunk search, assertion search, the context facade and the ``cited`` sensor
all split text with :func:`words` (``memory_platform.foundation.language.words``, imported here).

The full-text columns index German and English lexemes, so a question's terms are OR-ed over
both configurations: AND semantics matched nothing for most natural questions.
"""

from __future__ import annotations

from psycopg import sql

from memory_platform.features.retrieval.stopwords import ALL as STOPWORDS
from memory_platform.foundation.language import words

MAX_TERMS = 24
# PostgreSQL's limit of a lexeme is 2,047 bytes, checked before it lower-cases a word (which
# can grow it: "Ⱥ" is 2 bytes, "ⱥ" 3); some minor versions then fail the query or store a
# malformed tsvector. No real word is longer than this: a longer one is a blob, never a term.
MAX_TERM_BYTES = 255
_TSQUERY = "(to_tsquery('english', {t}) || to_tsquery('german', {t}))"


def query_terms(query: str) -> list[str]:
    """Content words of a question: lowercased, stopwords and question words dropped, single
    letters dropped (single digits kept), words longer than :data:`MAX_TERM_BYTES` in UTF-8
    dropped, each once, at most :data:`MAX_TERMS`."""
    seen: dict[str, None] = {}
    for word in words(query.lower()):
        if (word not in STOPWORDS and (len(word) > 1 or word.isdigit())
                and len(word.encode()) <= MAX_TERM_BYTES):
            seen.setdefault(word, None)
    return list(seen)[:MAX_TERMS]


def tsquery(alternatives: sql.Composable) -> sql.Composable:
    """The OR query over the German and English lexemes of ``alternatives``: a literal or a
    placeholder holding terms joined by ``" | "``."""
    return sql.SQL(_TSQUERY).format(t=alternatives)


def or_tsquery(terms: list[str]) -> sql.Composable:
    """:func:`tsquery` over ``terms`` as a literal."""
    return tsquery(sql.Literal(" | ".join(terms)))
