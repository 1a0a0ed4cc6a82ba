"""When things happen: session dates, turn times, and the relative phrases ("last weekend")
that temporal questions are answered from.

A fact told with "last weekend" in a session dated 14 March happened the weekend before 14
March; the answer is written that way, as in LoCoMo, so the session date is part of the
evidence and a search must surface the right turn, not merely a turn on the subject.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from memory_platform.features.benchmarks.conversations.language import TimeWords

SESSION_HOURS = (11, 13, 17, 18, 19, 19, 20, 20, 21, 21, 22)  # local time
SEASONS = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring",
           6: "summer", 7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}


def session_starts(rng: random.Random, count: int, timezone: str) -> list[datetime]:
    """Dates over 6 to 14 months of 2023-2024: gaps of a few days to several weeks, uneven
    like real chats (a burst of sessions, then a quiet month); mostly evenings, local time."""
    first = datetime(2023, rng.randint(1, 6), rng.randint(1, 28), tzinfo=ZoneInfo(timezone))
    span_days = rng.randint(190, 410)
    weights = [rng.choice((0.3, 0.6, 1.0, 1.0, 1.5, 2.5)) for _ in range(count - 1)]
    scale = span_days / sum(weights)
    day, starts = first, []
    for gap in [0.0, *weights]:
        day += timedelta(days=max(2, round(gap * scale)) if gap else 0)
        starts.append(day.replace(hour=rng.choice(SESSION_HOURS), minute=rng.randint(0, 59)))
    return starts


def turn_times(rng: random.Random, start: datetime, count: int) -> list[datetime]:
    """One to three minutes between turns."""
    times, moment = [], start
    for _ in range(count):
        times.append(moment)
        moment += timedelta(seconds=rng.randint(60, 180))
    return times


def season(day: date) -> str:
    return SEASONS[day.month]


@dataclass(frozen=True)
class Moment:
    phrase: str  # as said in the turn: "last weekend"
    day: date  # the best estimate of when it happened
    answer: str  # "the weekend before 14 March 2023"


def past_moment(rng: random.Random, words: TimeWords, told_on: date) -> Moment:
    """A past moment relative to the session day, with its date and written answer."""
    rule = rng.choice(("yesterday", "weekday", "weekday", "weekend", "last_week",
                       "two_weeks", "today"))
    if rule == "weekday":
        back = rng.randint(2, 6)
        day = told_on - timedelta(days=back)
        phrase = words.phrases["weekday"].format(weekday=words.weekdays[day.weekday()])
        return Moment(phrase, day, words.date_text(day))
    if rule == "weekend":
        day = told_on - timedelta(days=told_on.weekday() + 2)  # that weekend's Saturday
        return Moment(words.phrases[rule], day,
                      words.answers[rule].format(date=words.date_text(told_on)))
    back = {"yesterday": 1, "last_week": 7, "two_weeks": 14, "today": 0}[rule]
    day = told_on - timedelta(days=back)
    answer = (words.date_text(day) if rule in ("yesterday", "today")
              else words.answers[rule].format(date=words.date_text(told_on)))
    return Moment(words.phrases[rule], day, answer)
