"""Writing sessions: greetings, the facts due in the session, mentions of earlier facts,
chat on the same subjects and small talk, turn by turn, recording which turn states which
detail of which fact (the evidence questions point at).

Small talk is drawn from shuffled decks per conversation, so a conversation repeats a
phrasing only after its bank is used up.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime

from memory_platform.features.benchmarks.conversations.corpus import Session, Turn
from memory_platform.features.benchmarks.conversations.language import Language, Script
from memory_platform.features.benchmarks.conversations.personas import Fact, Persona
from memory_platform.features.benchmarks.conversations.timeline import (
    past_moment,
    season,
    turn_times,
)

EVENING = 19  # local hour from which "good night" openers and closers fit


def fill(template: str, slots: dict[str, str]) -> str:
    """Fill ``{slots}``; values may themselves hold slots (one more pass)."""
    text = template.format_map(slots)
    return text.format_map(slots) if "{" in text else text


class Slots(dict):
    """Slot values; ``{Name}`` capitalises ``{name}``; the language's fill-in slots (``{wow}``,
    ``{dinner}``) draw a fresh value each time they are used."""

    def __init__(self, values: dict[str, str], rng: random.Random, lang: Language) -> None:
        super().__init__(values)
        self.rng = rng
        self.lang = lang

    def __missing__(self, key: str) -> str:
        if key in self.lang.reactions:
            return self.rng.choice(self.lang.reactions[key])
        lower = key[0].lower() + key[1:]
        if lower != key:
            value = self[lower]
            return value[:1].upper() + value[1:]
        raise KeyError(key)


@dataclass
class Line:
    speaker: int
    text: str
    fact: Fact | None = None
    tags: tuple[str, ...] = ()


class Deck:
    """Draws scripts in shuffled order, reshuffling only when all were used."""

    def __init__(self, rng: random.Random, scripts: Sequence[Script]) -> None:
        self.rng = rng
        self.scripts = list(scripts)
        self.left: list[Script] = []

    def draw(self) -> Script:
        if not self.left:
            self.left = self.scripts[:]
            self.rng.shuffle(self.left)
        return self.left.pop()


class Writer:
    """Writes the sessions of one conversation in order."""

    def __init__(self, key: str, lang: Language, personas: tuple[Persona, Persona],
                 rng: random.Random) -> None:
        self.key = key
        self.lang = lang
        self.personas = personas
        self.rng = rng
        self.decks: dict[str, Deck] = {}
        self.told: list[Fact] = []
        self.hints: dict[int, list[Fact]] = {}
        self.spent: set[tuple[str, int]] = set()
        self.days_told: set[tuple[int, date]] = set()

    def plan_hints(self, facts: list[Fact]) -> None:
        """Changes are often foreshadowed ("I've been applying for jobs") one to three
        sessions before; the hint names no detail, so it is a distractor, not evidence."""
        for fact in facts:
            if fact.kind in self.lang.hints and self.rng.random() < 0.6:
                earliest = fact.replaces.session + 1 if fact.replaces else 1
                session = fact.session - self.rng.randint(1, 3)
                if session >= earliest:
                    self.hints.setdefault(session, []).append(fact)

    def deck(self, name: str, scripts: Sequence[Script]) -> Deck:
        if name not in self.decks:
            self.decks[name] = Deck(self.rng, scripts)
        return self.decks[name]

    def session(self, index: int, start: datetime, gap_days: int, facts: list[Fact],
                target: int) -> Session:
        rng = self.rng
        evening = start.hour >= EVENING
        segments = [self.tell(fact, start) for fact in facts]
        segments += [self.hint(fact) for fact in self.hints.get(index, [])]
        segments += self.callbacks(index)
        segments += self.topic_chat(start)
        rng.shuffle(segments)
        closing = "evening" if evening and rng.random() < 0.5 else "any"
        closer = self.chat(self.deck("closer-" + closing, self.lang.closers[closing]).draw(),
                           rng.randrange(2), start)
        while 2 + sum(map(len, segments)) + len(closer) < target:
            filler = self.chat(self.deck("filler", self.lang.filler).draw(), rng.randrange(2),
                               start)
            segments.insert(rng.randint(0, len(segments)), filler)
        # Whoever speaks first after the greeting opened the chat: "Got a minute?" - "Sure,
        # what's up?" - and then the news.
        opening = "soon" if gap_days <= 10 else "later"
        if evening and rng.random() < 0.3:
            opening = "evening"
        opener = self.deck("opener-" + opening, self.lang.openers[opening]).draw()
        first = self.chat(opener, segments[0][0].speaker if segments else 0, start)
        lines = first + [line for segment in segments for line in segment] + closer
        self.told.extend(facts)
        return self.write(index, start, lines)

    def write(self, index: int, start: datetime, lines: list[Line]) -> Session:
        turns = []
        for number, (line, moment) in enumerate(zip(lines, turn_times(self.rng, start,
                                                                      len(lines)), strict=True)):
            turn_id = f"{self.key}:s{index}:t{number}"
            if line.fact is not None:
                for tag in line.tags:
                    line.fact.evidence.setdefault(tag, turn_id)
            turns.append(Turn(turn_id, index, number, self.personas[line.speaker].name,
                              line.text, moment))
        return Session(index, start, tuple(turns))

    def slots(self, teller: int, extra: dict[str, str]) -> Slots:
        return Slots({**extra, "tname": self.personas[teller].name,
                      "lname": self.personas[1 - teller].name}, self.rng, self.lang)

    def lines(self, script: Script, teller: int, slots: Slots, fact: Fact | None) -> list[Line]:
        out = []
        for raw in script:
            role, _, text = raw.partition(": ")
            text, _, tags = text.partition(" #")
            speaker = teller if role == "T" else 1 - teller
            out.append(Line(speaker, fill(text, slots), fact,
                            tuple(tag for tag in tags.split(",") if tag)))
        return out

    def tell(self, fact: Fact, start: datetime) -> list[Line]:
        script = self.deck("tell-" + fact.kind, self.lang.scripts[fact.kind]).draw()
        moment = past_moment(self.rng, self.lang.time, start.date())
        while (fact.owner, moment.day) in self.days_told:  # not two events on one day
            moment = past_moment(self.rng, self.lang.time, start.date())
        self.days_told.add((fact.owner, moment.day))
        if any("when" in line.partition(" #")[2].split(",") for line in script):
            fact.day, fact.when_answer = moment.day, moment.answer
        extra = {**fact.slots, "when": moment.phrase}
        return self.lines(script, fact.owner, self.slots(fact.owner, extra), fact)

    def take(self, name: str, scripts: Sequence[Script]) -> Script | None:
        """A script of a bank not used yet in this conversation (None once all were): a
        mention of an earlier fact is not repeated word for word."""
        fresh = [number for number in range(len(scripts)) if (name, number) not in self.spent]
        if not fresh:
            return None
        number = self.rng.choice(fresh)
        self.spent.add((name, number))
        return scripts[number]

    def callbacks(self, index: int) -> list[list[Line]]:
        """Up to two earlier facts that still hold, mentioned again in passing ("Rex chewed
        my shoes"): distractors that share the facts' names but not the asked details."""
        alive = [fact for fact in self.told if fact.kind in self.lang.callbacks
                 and (fact.replaced_by is None or fact.replaced_by.session > index)]
        chosen = self.rng.sample(alive, min(len(alive), self.rng.choice((0, 1, 1, 2, 2))))
        segments = []
        for fact in chosen:
            script = self.take("callback-" + fact.kind, self.lang.callbacks[fact.kind])
            if script is not None:
                segments.append(self.lines(script, fact.owner,
                                           self.slots(fact.owner, fact.slots), None))
        return segments

    def hint(self, fact: Fact) -> list[Line]:
        script = self.deck("hint-" + fact.kind, self.lang.hints[fact.kind]).draw()
        return self.lines(script, fact.owner, self.slots(fact.owner, fact.slots), None)

    def topic_chat(self, start: datetime) -> list[list[Line]]:
        """Now and then general chat about a subject a speaker told about (dogs, travel):
        the same words as the facts, none of their details."""
        kinds = sorted({fact.kind for fact in self.told if fact.kind in self.lang.topics})
        if not kinds or self.rng.random() < 0.5:
            return []
        kind = self.rng.choice(kinds)
        script = self.take("topic-" + kind, self.lang.topics[kind])
        return [self.chat(script, self.rng.randrange(2), start)] if script else []

    def chat(self, script: Script, starter: int, start: datetime) -> list[Line]:
        now = season(start.date())
        weather, reply = self.deck("weather-" + now, self.lang.seasons[now]).draw()
        return self.lines(script, starter,
                          self.slots(starter, {"weather": weather, "weather_reply": reply}), None)
