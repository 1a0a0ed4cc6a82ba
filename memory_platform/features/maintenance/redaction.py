"""Redacting an erased person out of a JSON document that stays (a Dream's proposals, stats and
diagnostics): the pure part of erasure's ``redact`` rule (``erasure.py``).

A Dream row is the audit of one run over a whole audience: it must stay for the others'
sake, but its JSON quotes its inputs (proposal texts and excerpts, the graph's new claims,
consolidation pairs with both texts, rejected proposals, diagnostics). An *item* (a JSON
object below the document's root) is the person's when one of its own values names a
removed row (a string equal to a removed id, or a list of ids holding one), names the
person (contains their user id), or quotes them (a string of at least
:data:`MIN_QUOTE_CHARS` that occurs in one of their removed texts, or contains one). Such an
item is replaced by ``{"redacted": "erasure"}`` as a whole: its other fields (scores,
reasons, the ids of kept rows) describe the same statement. Any other string, the root's
own included, is replaced by ``"[erased]"`` under the same test. Everything else, the other
people's items and every count, stays as it was.

A key that names the person (a per-user count) is dropped with its value. Texts are
compared exactly, without normalisation: a Dream quotes verbatim (excerpts are verbatim by
contract); a paraphrase is not detected by its text, it is by the removed row's id it cites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REDACTED_ITEM = {"redacted": "erasure"}
REDACTED_TEXT = "[erased]"
MIN_QUOTE_CHARS = 16      # shorter strings (codes, types, short labels) are not quotes


@dataclass
class Erased:
    """What identifies the person in a document: removed row ids, their user id, the texts
    they said (removed memories, sources, assertions, excerpts, turns)."""

    ids: set[str]
    user_id: str
    texts: list[str] = field(default_factory=list)
    _joined: str = field(default="", init=False, repr=False)

    def __post_init__(self) -> None:
        self.texts = [t for t in dict.fromkeys(self.texts) if len(t) >= MIN_QUOTE_CHARS]
        self._joined = "\0".join(self.texts)

    def names(self, value: str) -> bool:
        """Whether one string value is the person's (an id, their user id, a quote)."""
        if value in self.ids or self.user_id in value:
            return True
        if len(value) < MIN_QUOTE_CHARS:
            return False
        return value in self._joined or any(text in value for text in self.texts)


def _cites(item: dict[str, Any], erased: Erased) -> bool:
    """Whether one of the item's own values names the person: a string value, or a removed
    row's id in a list of ids."""
    for value in item.values():
        if isinstance(value, str) and erased.names(value):
            return True
        if isinstance(value, list) and any(isinstance(v, str) and v in erased.ids
                                           for v in value):
            return True
    return False


def redact(document: Any, erased: Erased) -> tuple[Any, int]:
    """``document`` with the person's items replaced (module docstring), and how many items
    and strings were replaced. The document itself (the root) is never replaced whole: its
    own strings are, one by one. The input is not changed."""
    return _redact(document, erased, root=True)


def _redact(document: Any, erased: Erased, *, root: bool = False) -> tuple[Any, int]:
    if isinstance(document, dict):
        if not root and _cites(document, erased):
            return dict(REDACTED_ITEM), 1
        out, count = {}, 0
        for key, value in document.items():
            if erased.names(key):
                count += 1
                continue
            out[key], n = _redact(value, erased)
            count += n
        return out, count
    if isinstance(document, list):
        items, count = [], 0
        for value in document:
            value, n = _redact(value, erased)
            items.append(value)
            count += n
        return items, count
    if isinstance(document, str) and erased.names(document):
        return REDACTED_TEXT, 1
    return document, 0
