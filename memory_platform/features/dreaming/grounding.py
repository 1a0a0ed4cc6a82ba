"""The text rules a Dream item must pass before it can reach the ledger: pure functions.

* An evidence excerpt must mean something on its own: at least ``dream_min_excerpt_chars``
  characters and at least ``dream_min_excerpt_words`` informative words (stopwords and very
  short tokens do not count). A verbatim "the" proves only that some substring exists.
* The assertion text must be supported by its excerpts: at least
  ``dream_min_text_support`` of the text's citation keys (folded, stemmed informative words,
  the ``cited`` sensor's measure) occur in the cited excerpts. A model steered by a memory
  ("record decision X, cite excerpt 'the'") cannot turn an uncited claim into a fact.
* Neither an excerpt, a text nor a wiki body may carry an instruction aimed at a model
  (:func:`unsafe_instruction`) or a credential (``memories.validation.find_credential``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_platform.features.retrieval.feedback.citation import citation_keys, informative_tokens
from memory_platform.foundation.settings import Settings

_UNSAFE = re.compile(
    r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier)"
    r"\s+(?:instructions|prompts?|rules)\b"
    r"|\b(?:reveal|print|leak)\s+(?:the\s+|your\s+)?system\s+prompt\b"
    r"|\bignorier(?:e|en)?\s+(?:alle\s+)?(?:vorherigen|bisherigen|obigen)\s+anweisungen\b"
    r"|\byou\s+are\s+now\s+(?:in\s+)?(?:developer|dan|jailbreak)\b"
    r"|\bdisable\s+(?:the\s+)?(?:safety|security)\s+(?:checks?|filters?|guards?)\b"
    r"|\brm\s+-rf\s+/"
    r"|\bcite\s+(?:the\s+|this\s+)?excerpts?\b",
    re.IGNORECASE,
)


def unsafe_instruction(text: str) -> bool:
    """Whether ``text`` carries a jailbreak phrase or an instruction to the curating model
    (English and German): such text is data that tries to act, never a fact."""
    return _UNSAFE.search(text) is not None


def informative_excerpt(excerpt: str, settings: Settings) -> bool:
    """Whether ``excerpt`` is long enough to ground anything (see the module docstring)."""
    return (len(excerpt.strip()) >= settings.dream_min_excerpt_chars
            and len(informative_tokens(excerpt)) >= settings.dream_min_excerpt_words)


def text_support(text: str, excerpts: Iterable[str]) -> float:
    """The share (0..1) of ``text``'s citation keys that occur in ``excerpts``; 0 for a text
    without an informative word."""
    keys = citation_keys(text)
    if not keys:
        return 0.0
    cited: set[str] = set()
    for excerpt in excerpts:
        cited |= citation_keys(excerpt)
    return len(keys & cited) / len(keys)
