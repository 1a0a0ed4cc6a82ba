"""Whether a response cites an assertion: pure text, no database.

Both texts are reduced to citation keys (:func:`citation_keys`): Markdown removed, folded
(case, umlauts, diacritics), German and English stopwords and very short tokens dropped, each
token stemmed. A response cites an assertion when the keys they share are at least
``cited_min_overlap_tokens`` and at least ``cited_containment_threshold`` of the assertion's
keys (:func:`cites`).
"""

from __future__ import annotations

import re
import unicodedata

from memory_platform.features.retrieval import stopwords
from memory_platform.features.retrieval.terms import words
from memory_platform.foundation.settings import Settings

# Every pattern runs in time linear in the text (the sensor reads request text): a bracket
# or parenthesis class excludes its own opening delimiter and line breaks, so the scans
# started at different brackets never overlap, and it is capped in length.
_LINK_TEXT = r"[^\[\]\n]{0,500}"
_LINK_TARGET = r"[^()\n]{0,2000}"
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,}).*$", re.MULTILINE)
_IMAGE = re.compile(rf"!\[({_LINK_TEXT})\]\({_LINK_TARGET}\)")
_INLINE_LINK = re.compile(rf"\[({_LINK_TEXT})\]\({_LINK_TARGET}\)")
_REFERENCE_LINK = re.compile(rf"\[({_LINK_TEXT})\]\[{_LINK_TEXT}\]")
_LINK_DEFINITION = re.compile(r"^[ \t]*\[[^\[\]\n]{1,500}\]:[ \t]*\S.*$", re.MULTILINE)
_HTML_TAG = re.compile(r"<[^<>\n]+>")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]*", re.MULTILINE)
_SETEXT_UNDERLINE = re.compile(r"^[ \t]*(?:=+|-+)[ \t]*$", re.MULTILINE)
_BLOCKQUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.MULTILINE)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.MULTILINE)
_MARKUP_CHARS = re.compile(r"[`*_~|]+")
_APOSTROPHE_IN_WORD = re.compile(r"(?<=\w)['\u2019](?=\w)")

_UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})

# Inflection endings stripped (repeatedly, longest first) before tokens are compared, so
# "Rechnungen"/"Rechnung" and "deployed"/"deploys"/"deploy" meet. A stem keeps at least
# _MIN_STEM characters. Crude on purpose: both sides get the same treatment, which is all an
# overlap measure needs, and it stays deterministic without a language guess.
_SUFFIXES = ("ing", "ern", "en", "er", "em", "es", "ed", "e", "n", "s")
_MIN_STEM = 4
_MIN_TOKEN = 3  # shorter tokens are dropped, except numbers of two or more digits


def strip_markdown(text: str) -> str:
    """The prose of a Markdown text: fence lines, backticks, emphasis, heading, quote and list
    markers and link targets removed; link and image texts and code contents kept (an agent
    quoting a fact inside code or a link still cites it)."""
    text = _FENCE_LINE.sub(" ", text)
    text = _IMAGE.sub(r"\1", text)
    text = _INLINE_LINK.sub(r"\1", text)
    text = _REFERENCE_LINK.sub(r"\1", text)
    text = _LINK_DEFINITION.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = _HEADING.sub("", text)
    text = _SETEXT_UNDERLINE.sub(" ", text)
    text = _BLOCKQUOTE.sub("", text)
    text = _LIST_MARKER.sub("", text)
    return _MARKUP_CHARS.sub(" ", text)


def fold(text: str) -> str:
    """Lowercase, spell umlauts out (ä -> ae, ß -> ss) and drop other diacritics, so "Grüße",
    "Gruesse" and "GRÜSSE" compare equal."""
    folded = text.casefold().translate(_UMLAUTS)
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _words(text: str) -> list[str]:
    """The words of ``text``, an apostrophe inside a word joined ("o'clock" -> "oclock")."""
    return words(_APOSTROPHE_IN_WORD.sub("", text))


_STOPWORDS: frozenset[str] = frozenset(
    word for entry in stopwords.ALL for word in _words(fold(entry))
)


def _informative(token: str) -> bool:
    if token in _STOPWORDS:
        return False
    if token.isdigit():
        return len(token) >= 2
    return len(token) >= _MIN_TOKEN


def informative_tokens(text: str) -> list[str]:
    """The words of ``text`` that can show a citation, in order: Markdown and punctuation
    removed, lowercased and folded (see :func:`fold`), German and English stopwords and very
    short tokens dropped."""
    return [token for token in _words(fold(strip_markdown(text))) if _informative(token)]


def stem(token: str) -> str:
    """A light, deterministic inflection stem of a folded token (see ``_SUFFIXES``), in time
    linear in its length (the token is cut once, at the end)."""
    end = len(token)
    stripped = True
    while stripped:
        stripped = False
        for suffix in _SUFFIXES:
            if token.endswith(suffix, 0, end) and end - len(suffix) >= _MIN_STEM:
                end -= len(suffix)
                stripped = True
                break
    return token[:end]


def citation_keys(text: str) -> frozenset[str]:
    """The distinct stems of the informative tokens of ``text``: what the sensor compares."""
    return frozenset(stem(token) for token in informative_tokens(text))


def cites(assertion_keys: frozenset[str], response_keys: frozenset[str],
          settings: Settings) -> bool:
    """Whether a response cites an assertion, given the :func:`citation_keys` of both: at
    least ``cited_min_overlap_tokens`` of the assertion's keys occur in the response, and they
    make up at least ``cited_containment_threshold`` of the assertion's keys."""
    if not assertion_keys:
        return False
    overlap = len(assertion_keys & response_keys)
    return (overlap >= settings.cited_min_overlap_tokens
            and overlap / len(assertion_keys) >= settings.cited_containment_threshold)
