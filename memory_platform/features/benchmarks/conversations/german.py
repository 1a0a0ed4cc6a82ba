"""Deutsch: zwei befreundete Menschen in Deutschland schreiben sich über ein Jahr. Die Wörter
(Wertebänke, Arten, jede Sorte Fakt zu erzählen, Smalltalk und Fragen, die umschreiben statt
zu zitieren) sind Daten, ``banks/german.json``; hier stehen nur die Regeln, die Code sind.

German needs word forms the English bank does not: slots carry the case a phrasing needs
(``a_breed`` "ein Beagle", ``a_breed_acc`` "einen Beagle"; ``bei`` "bei Siemens" / "an der
Charité"), and gendered nouns come as ``_f``/``_m`` pairs resolved for the person they
describe.
"""

from __future__ import annotations

from datetime import date

from memory_platform.features.benchmarks.conversations.language import load


def _possessive(name: str) -> str:
    """Annas, Jonas', Max'."""
    return f"{name}'" if name[-1] in "sßxz" else f"{name}s"


def _date_text(day: date) -> str:
    return f"{day.day}. {GERMAN.time.months[day.month - 1]} {day.year}"


def _elapsed(days: int) -> str:
    if days < 70:
        weeks = round(days / 7)
        return f"etwa {weeks} Wochen" if weeks != 1 else "etwa eine Woche"
    return f"etwa {round(days / 30.4)} Monate"


GERMAN = load("german", possessive=_possessive, date_text=_date_text, elapsed=_elapsed)
