"""English: two friends in the US chatting over a year. The words (value banks, ways of telling
each kind of fact, small talk, question wordings that paraphrase rather than quote) are data,
``banks/english.json``; this module adds the rules that are code.

Questions avoid the words the telling turns use ("relocate" for "moved", "employer" for "I'm
at"); callbacks and topic chat reuse the subjects' words but never the asked details.
"""

from __future__ import annotations

from datetime import date

from memory_platform.features.benchmarks.conversations.language import load


def _possessive(name: str) -> str:
    return f"{name}'s"


def _date_text(day: date) -> str:
    return f"{day.day} {day:%B %Y}"


def _elapsed(days: int) -> str:
    if days < 70:
        weeks = round(days / 7)
        return f"about {weeks} weeks" if weeks != 1 else "about a week"
    months = round(days / 30.4)
    return f"about {months} months"


ENGLISH = load("english", possessive=_possessive, date_text=_date_text, elapsed=_elapsed)
