"""Time in questions, for search to prefer the memories that answer them.

* The time a question names: absolute ("in May 2023", "on 13 October 2023", "in June", "in
  2022") or relative to the moment it is asked ("yesterday", "last week", "three days ago",
  "letzte Woche", "vor zwei Tagen"); search prefers memories whose event time
  (``occurred_at``) falls in it. A question naming no time, or more than one, names none.
* A question that asks *when* ("When did ...", "What year ...", "Wann ...") prefers memories
  that state a time ("yesterday", "last Friday", "two weeks ago", "in 2022"): the answer to a
  "when" is a turn that says when.

English and German. Every pattern is a regular expression without nested repetition (linear
time on any input); questions are short, memories are checked only as candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

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


_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10, "einem": 1, "einer": 1, "zwei": 2,
            "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
            "zehn": 10}
_COUNT = r"(\d{1,3}|" + "|".join(_NUMBERS) + ")"
_UNIT_DAYS = {"day": 1, "days": 1, "tag": 1, "tagen": 1, "week": 7, "weeks": 7, "woche": 7,
              "wochen": 7, "month": 30, "months": 30, "monat": 30, "monaten": 30}
_UNIT = "|".join(sorted(_UNIT_DAYS, key=len, reverse=True))
_AGO = re.compile(rf"\b{_COUNT}\s+({_UNIT})\s+ago\b|\bvor\s+{_COUNT}\s+({_UNIT})\b", re.I)
_YESTERDAY = re.compile(r"\b(yesterday|gestern)\b", re.I)
_TODAY = re.compile(r"\b(today|heute)\b", re.I)
_LAST = re.compile(r"\b(?:last|letzte[nrs]?|vorige[nrs]?)\s+(week|month|year|woche|monat|jahr)\b",
                   re.I)
_THIS = re.compile(r"\b(?:this|diese[nrs]?)\s+(week|month|year|woche|monat|jahr)\b", re.I)
_PERIOD_UNITS = {"week": "week", "woche": "week", "month": "month", "monat": "month",
                 "year": "year", "jahr": "year"}

# "When did ...", "What year ...", "How long ago ...", "Wann ...", "In welchem Jahr ...".
_ASKS_WHEN = re.compile(r"^\W*(?:when|wann|what\s+(?:year|month|date|day|time)|which\s+"
                        r"(?:year|month|date|day)|how\s+long\s+ago|in\s+welche[mn]\s+"
                        r"(?:jahr|monat)|an\s+welchem\s+tag|seit\s+wann)\b", re.I)
_WEEKDAY = ("monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|montag|dienstag"
            "|mittwoch|donnerstag|freitag|samstag|sonntag|wochenende")
# A time a memory states: a relative day, a weekday, "last/next <unit>", "<n> <units> ago",
# a month name with a day or a year, a year, a date.
_STATES_TIME = re.compile(
    rf"\b(?:yesterday|today|tonight|tomorrow|gestern|heute|morgen|vorgestern|recently|"
    rf"{_WEEKDAY}|(?:last|next|this|past|letzte[nrs]?|nächste[nrs]?|diese[nrs]?|vorige[nrs]?)"
    rf"\s+(?:{_UNIT}|year|years|jahr|{_WEEKDAY})|{_COUNT}\s+(?:{_UNIT}|years?)\s+ago|vor\s+"
    rf"{_COUNT}\s+(?:{_UNIT}|jahren)|(?:{_MONTH})\.?\s+\d{{1,2}}\b|\d{{1,2}}\.?\s+(?:{_MONTH})|"
    rf"(?:19|20)\d\d|\d{{1,2}}[./]\d{{1,2}}[./]\d{{2,4}})\b", re.I)


@dataclass(frozen=True)
class Period:
    """A named day, month or year (``year`` None: that month of any year), or a span of days
    (``start`` inclusive, ``end`` exclusive: a relative name resolved against the moment the
    question is asked)."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    start: datetime | None = None
    end: datetime | None = None

    def contains(self, moment: datetime) -> bool:
        if self.start is not None and self.end is not None:
            return self.start <= moment < self.end
        return ((self.year is None or moment.year == self.year)
                and (self.month is None or moment.month == self.month)
                and (self.day is None or moment.day == self.day))


def _days(now: datetime, first: int, last: int) -> Period:
    """The days from ``first`` to ``last`` days before ``now``'s day (both included)."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return Period(start=midnight - timedelta(days=first), end=midnight - timedelta(days=last - 1))


def _relative(question: str, now: datetime) -> list[Period]:
    """The periods ``question`` names relative to ``now``: a day named "yesterday" or "n days
    ago" is that day (give or take one for "ago"); "n weeks/months ago" the unit around it;
    "last week/month/year" the seven days / calendar month / year before this one; "this
    week/month/year" the days since its start."""
    found = [_days(now, 1, 1)] * len(_YESTERDAY.findall(question))
    found += [_days(now, 0, 0)] * len(_TODAY.findall(question))
    for match in _AGO.finditer(question):
        count, unit = (match[1], match[2]) if match[1] else (match[3], match[4])
        back = (int(count) if count.isdigit() else _NUMBERS[count.lower()]) * _UNIT_DAYS[
            unit.lower()]
        slack = max(1, _UNIT_DAYS[unit.lower()] // 2)
        found.append(_days(now, back + slack, max(0, back - slack)))
    for match in _LAST.finditer(question):
        unit = _PERIOD_UNITS[match[1].lower()]
        if unit == "week":
            found.append(_days(now, 7 + now.weekday(), now.weekday() + 1))
        elif unit == "month":
            year, month = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
            found.append(Period(year, month))
        else:
            found.append(Period(now.year - 1))
    for match in _THIS.finditer(question):
        unit = _PERIOD_UNITS[match[1].lower()]
        found.append(_days(now, now.weekday(), 0) if unit == "week" else
                     Period(now.year, now.month) if unit == "month" else Period(now.year))
    return found


def asks_when(question: str) -> bool:
    """Whether ``question`` asks for a time ("When did ...?", "What year ...?", "Wann ...?")."""
    return bool(_ASKS_WHEN.search(question[:200]))


def states_time(text: str) -> bool:
    """Whether ``text`` says when something happened (a relative day, a weekday, "last week",
    "two years ago", a date, a year): the kind of memory that answers a "when"."""
    return bool(_STATES_TIME.search(text))


def named_period(question: str, now: datetime | None = None) -> Period | None:
    """The one period ``question`` names, or None (none, or several). Relative names
    ("yesterday", "last week") are read only given ``now``, the moment it is asked."""
    found: list[Period] = _relative(question, now) if now is not None else []
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
