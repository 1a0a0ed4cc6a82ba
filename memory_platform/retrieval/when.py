"""The time a question names ("in May 2023", "on 13 October 2023", "in June", "in 2022"),
for search to prefer memories whose event time (``occurred_at``) falls in it.

Only absolute names are read (a day, a month with or without its year, a year), in English
and German: a relative one ("last week") needs the time the question is asked about, which a
search does not know. A question naming no time, or more than one, names none here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

_MONTHS = {name: number for number, names in enumerate((
    ("january", "jan", "januar", "jänner"), ("february", "feb", "februar"),
    ("march", "mar", "märz", "maerz"), ("april", "apr"), ("may", "mai"),
    ("june", "jun", "juni"), ("july", "jul", "juli"), ("august", "aug"),
    ("september", "sep", "sept"), ("october", "oct", "oktober", "okt"),
    ("november", "nov"), ("december", "dec", "dezember", "dez")), 1) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_YEAR = r"(19\d\d|20\d\d)"
# "13 October 2023", "13. Oktober 2023", "October 13, 2023", "October 2023", "October", "2023".
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})\.?\s+({_MONTH})\.?,?\s+{_YEAR}\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+{_YEAR}\b",
                             re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|im|during|of)\s+({_MONTH})\b(?!\s+\d)", re.I)
_IN_YEAR = re.compile(rf"\b(?:in|im|during|of|since)\s+{_YEAR}\b", re.I)


@dataclass(frozen=True)
class Period:
    """A named day, month or year; ``year`` None: that month of any year."""

    year: int | None
    month: int | None = None
    day: int | None = None

    def contains(self, moment: datetime) -> bool:
        return ((self.year is None or moment.year == self.year)
                and (self.month is None or moment.month == self.month)
                and (self.day is None or moment.day == self.day))


def named_period(question: str) -> Period | None:
    """The one period ``question`` names, or None (none, or several)."""
    found: list[Period] = []
    rest = question
    for pattern, build in (
            (_DAY_MONTH_YEAR, lambda m: Period(int(m[3]), _MONTHS[m[2].lower()], int(m[1]))),
            (_MONTH_DAY_YEAR, lambda m: Period(int(m[3]), _MONTHS[m[1].lower()], int(m[2]))),
            (_MONTH_YEAR, lambda m: Period(int(m[2]), _MONTHS[m[1].lower()])),
            (_IN_MONTH, lambda m: Period(None, _MONTHS[m[1].lower()])),
            (_IN_YEAR, lambda m: Period(int(m[1])))):
        for match in pattern.finditer(rest):
            period = build(match)
            if period.day is not None and not 1 <= period.day <= 31:
                continue
            found.append(period)
        rest = pattern.sub(" ", rest)  # a longer name is not read again as a shorter one
    distinct = set(found)
    return found[0] if len(distinct) == 1 else None
