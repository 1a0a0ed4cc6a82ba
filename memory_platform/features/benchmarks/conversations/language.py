"""What one language contributes to the corpus: value banks, phrasings and question wordings.

The generator's logic (who says what when, which turn is evidence) is the same for English
and German; everything that is words lives in a :class:`Language` so the two stay parallel.

Phrasings are *scripts*: tuples of lines ``"T: text #tag,tag"`` where ``T`` is the speaker
who tells the fact and ``L`` the one listening (for small talk: whoever starts and the
other). ``{slots}`` are filled from the fact and the speakers; a capitalised slot
(``{When}``) is the same value with a capital first letter. ``#tags`` name the facts' details
the line states; the line becomes the evidence turn for them.

The words themselves are data: ``banks/<language>.json``, read by :func:`load`. Only what is
a rule (a possessive, how a date or a span is written) stays code, in ``english.py`` and
``german.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from importlib.resources import files
from typing import Any, Literal

Script = tuple[str, ...]
# One entry of a value bank: str values are used as they are, a list means "pick one", a
# dict is merged in; keys ending in _f/_m hold the female/male form of the key before it.
Entry = Mapping[str, object]


@dataclass(frozen=True)
class Ask:
    """A question wording. ``tags`` are the fact details whose turns are the evidence
    (``"a:tag"``/``"b:tag"`` for questions over two facts); ``state`` limits it to facts
    that still hold (``"current"``), or to the speaker's only fact of its kind (``"only"``:
    "What pet did Ben get?" has one answer only if Ben got one pet)."""

    text: str
    tags: tuple[str, ...]
    answer: str
    state: Literal["", "current", "only"] = ""


@dataclass(frozen=True)
class TimeWords:
    """Relative time phrases ("last weekend") and how a dated answer is written."""

    weekdays: tuple[str, ...]  # Monday first, as said after ``on_weekday``
    phrases: Mapping[str, str]  # rule -> phrase, e.g. "yesterday" -> "gestern"
    answers: Mapping[str, str]  # rule -> answer template over {date}, the session's date
    date_text: Callable[[date], str]
    elapsed: Callable[[int], str]  # days -> "about three weeks"
    months: tuple[str, ...] = ()  # January first, for a date_text that names them


@dataclass(frozen=True)
class Language:
    code: Literal["en", "de"]
    timezone: str  # IANA name: session times are local
    names: Mapping[str, Sequence[str]]  # "f"/"m" -> first names
    values: Mapping[str, Sequence[Entry]]  # fact kind (or helper bank) -> entries
    pronouns: Mapping[str, Mapping[str, str]]  # "f"/"m" -> {"he": "she", "his": "her", ...}
    possessive: Callable[[str], str]  # "Anna" -> "Anna's" / "Annas"
    time: TimeWords
    reactions: Mapping[str, Sequence[str]]  # fill-in slot -> values ({wow}, {dinner}, ...)
    scripts: Mapping[str, Sequence[Script]]  # fact kind -> ways of telling it
    callbacks: Mapping[str, Sequence[Script]]  # fact kind -> later mentions (no asked detail)
    topics: Mapping[str, Sequence[Script]]  # fact kind -> general chat on the same subject
    openers: Mapping[str, Sequence[Script]]  # "soon"/"later" after the last session, "evening"
    closers: Mapping[str, Sequence[Script]]  # "any", "evening" (good night)
    filler: Sequence[Script]
    seasons: Mapping[str, Sequence[tuple[str, str]]]  # season -> ({weather}, {weather_reply})
    hints: Mapping[str, Sequence[Script]]  # change kind -> a mention sessions before it
    single_hop: Mapping[str, Sequence[Ask]]
    temporal: Mapping[str, Sequence[Ask]]
    open_domain: Mapping[str, Sequence[Ask]]
    adversarial: Mapping[str, Sequence[Ask]]
    multi_hop: Mapping[str, Sequence[Ask]]  # link name (see questions.py) -> wordings
    how_long: Sequence[Ask]  # over {a_event}, {b_event}, {b_clause} and {elapsed}
    events: Mapping[str, tuple[str, str]]  # kind -> (noun phrase, question clause)


# How the JSON of a bank maps onto the fields of a Language: scripts are arrays of lines
# (tuples here), question wordings are objects of Ask's fields; everything else is as read.
_SCRIPT_BANKS = ("scripts", "callbacks", "topics", "openers", "closers", "seasons", "hints")
_ASK_BANKS = ("single_hop", "temporal", "open_domain", "adversarial", "multi_hop")


def _ask(item: dict[str, Any]) -> Ask:
    return Ask(item["text"], tuple(item["tags"]), item["answer"], item.get("state", ""))


def load(bank: str, *, possessive: Callable[[str], str], date_text: Callable[[date], str],
         elapsed: Callable[[int], str]) -> Language:
    """The :class:`Language` of ``banks/<bank>.json`` with its rules (the callables)."""
    data = json.loads(files(__package__).joinpath("banks", f"{bank}.json").read_text("utf-8"))
    time = data.pop("time")
    fields: dict[str, Any] = dict(data)
    for name in _SCRIPT_BANKS:
        fields[name] = {kind: [tuple(lines) for lines in scripts]
                        for kind, scripts in data[name].items()}
    for name in _ASK_BANKS:
        fields[name] = {kind: [_ask(item) for item in asks] for kind, asks in data[name].items()}
    fields["filler"] = [tuple(lines) for lines in data["filler"]]
    fields["how_long"] = [_ask(item) for item in data["how_long"]]
    fields["events"] = {kind: tuple(pair) for kind, pair in data["events"].items()}
    words = TimeWords(weekdays=tuple(time["weekdays"]), phrases=time["phrases"],
                      answers=time["answers"], date_text=date_text, elapsed=elapsed,
                      months=tuple(time.get("months", ())))
    return Language(**fields, possessive=possessive, time=words)
