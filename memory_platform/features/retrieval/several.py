"""Questions that ask for several things, for search to answer them from several sessions.

"How many tournaments has Nate won?", "Which cities has Jon visited?", "What are Dave's
hobbies?", "What kinds of classes has James joined?", "Wie viele Hunde hat Andrew?": the
answer is a list, and in a conversation its items were said on different days. Such a
question gets more of its last hits from sessions the first ones miss
(``retrieval_turn_list_spread``; ranking.py, ``_spread``).

Read from the question's first words only, by word (no regular expression over the text:
linear time on any input). English and German.
"""

from __future__ import annotations

from memory_platform.foundation.language import words

_HEAD_WORDS = 8  # a question's kind is in its first words
# Openings that ask for a count or a list whatever follows them.
_LIST_OPENINGS = {("how", "many"), ("how", "often"), ("wie", "viele"), ("wie", "oft"),
                  ("wie", "häufig"), ("what", "are"), ("what", "were"), ("which", "are"),
                  ("which", "were"), ("was", "sind"), ("was", "waren"), ("welche", "sind"),
                  ("welche", "waren")}
_KINDS = {"kinds", "types", "sorts", "arten", "sorten"}
_ASKING = {"what", "which", "welche", "welcher", "welches", "was"}
_AUXILIARIES = {"has", "have", "had", "did", "do", "does", "are", "were", "haben", "hatten",
                "sind", "waren"}
# At most this many words between "what/which" and the auxiliary: "which cities has", "what
# kind of healthy meals did".
_NOUN_SPAN = 4
_SINGULAR_ENDINGS = ("ss", "us", "is", "ous")


def _plural(word: str) -> bool:
    """An English plural by its ending ("cities", "hobbies", "meals"; not "class", "bus",
    "this", "famous")."""
    return len(word) >= 4 and word.endswith("s") and not word.endswith(_SINGULAR_ENDINGS)


def asks_for_several(question: str) -> bool:
    """Whether ``question`` asks for a count or a list: "how many / how often", "what are",
    "what kinds of", or "what/which <plural noun> has/did/are ..." (and their German
    forms)."""
    head = [w.lower() for w in words(question[:200])[:_HEAD_WORDS]]
    if len(head) < 2:
        return False
    if (head[0], head[1]) in _LIST_OPENINGS:
        return True
    if head[0] not in _ASKING:
        return False
    if head[1] in _KINDS:
        return True
    span = head[1:1 + _NOUN_SPAN + 1]
    return any(_plural(word) and following in _AUXILIARIES
               for word, following in zip(span, span[1:], strict=False))
