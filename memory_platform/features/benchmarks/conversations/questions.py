"""Labelled questions over what was told: every evidence id is a turn recorded while writing
(never searched for afterwards), so a question is only asked when its turns exist.

Categories follow LoCoMo: ``single_hop`` (one turn answers), ``multi_hop`` (turns from two
sessions), ``temporal`` (when, or how long between two events, from the session dates),
``open_domain`` (an inference from what was said) and ``adversarial`` (about something the
named person never said; the evidence is the turn where the other speaker said it).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from memory_platform.features.benchmarks.conversations.corpus import CATEGORIES, Category, Question
from memory_platform.features.benchmarks.conversations.language import Ask, Language
from memory_platform.features.benchmarks.conversations.personas import Fact, Persona
from memory_platform.features.benchmarks.conversations.script import Slots, fill

SHARES: dict[Category, float] = {"single_hop": 0.35, "multi_hop": 0.2, "temporal": 0.2,
                                 "open_domain": 0.1, "adversarial": 0.15}
HOBBY_KINDS = ("instrument", "sport", "craft", "course")


@dataclass(frozen=True)
class Candidate:
    category: Category
    text: str
    evidence: tuple[str, ...]
    answer: str
    about: tuple[int, ...]  # ids of the facts asked about, to spread questions over facts


def build_questions(key: str, lang: Language, personas: tuple[Persona, Persona],
                    facts: list[Fact], rng: random.Random) -> tuple[Question, ...]:
    pools: dict[Category, list[Candidate]] = {category: [] for category in CATEGORIES}
    for candidate in _candidates(lang, personas, facts):
        pools[candidate.category].append(candidate)
    total = rng.randint(50, 64)
    chosen: list[Candidate] = []
    for category in CATEGORIES[1:]:
        wanted, pool = round(total * SHARES[category]), pools[category]
        if category == "temporal":  # mostly "when", some "how long between", as in LoCoMo
            whens = _spread([c for c in pool if len(c.about) == 1], round(wanted * 0.6), rng)
            chosen += whens
            wanted -= len(whens)
            pool = [c for c in pool if len(c.about) == 2]
        chosen += _spread(pool, wanted, rng)
    chosen += _spread(pools["single_hop"], total - len(chosen), rng)
    rng.shuffle(chosen)
    return tuple(Question(f"{key}:q{number:02d}", key, c.category, c.text, c.evidence, c.answer)
                 for number, c in enumerate(chosen, 1))


def _spread(pool: list[Candidate], count: int, rng: random.Random) -> list[Candidate]:
    """``count`` candidates with different texts, covering as many facts as possible."""
    shuffled = pool[:]
    rng.shuffle(shuffled)
    chosen: list[Candidate] = []
    asked: set[int] = set()
    texts: set[str] = set()
    for fresh_only in (True, False):
        for candidate in shuffled:
            if len(chosen) == count:
                return chosen
            if candidate.text in texts or (fresh_only and asked & set(candidate.about)):
                continue
            chosen.append(candidate)
            texts.add(candidate.text)
            asked.update(candidate.about)
    return chosen


def _candidates(lang: Language, personas: tuple[Persona, Persona],
                facts: list[Fact]) -> Iterator[Candidate]:
    for fact in facts:
        slots = _context(lang, personas, fact)
        for category, bank in (("single_hop", lang.single_hop), ("temporal", lang.temporal),
                               ("open_domain", lang.open_domain)):
            asks = list(bank.get(fact.kind, ()))
            if category == "temporal":  # "*": the "When did ...?" every dated kind has
                asks += bank.get("*", ())
            for ask in asks:
                if _usable(ask, fact, slots, facts):
                    yield _single(category, ask, fact, slots)
        if _never_said_by_other(fact, facts):
            for ask in lang.adversarial.get(fact.kind, ()):
                if _usable(ask, fact, slots, facts):
                    yield _single("adversarial", ask, fact, slots)
    for name, a, b in _links(facts):
        for ask in lang.multi_hop.get(name, ()):
            candidate = _pair("multi_hop", lang, personas, ask, a, b)
            if candidate:
                yield candidate
    for a, b in _dated_pairs(lang, facts):
        for ask in lang.how_long:
            a_slots, b_slots = _context(lang, personas, a), _context(lang, personas, b)
            slots = {"a_event": a_slots["event"], "b_event": b_slots["event"],
                     "b_clause": b_slots["event_clause"],
                     "elapsed": lang.time.elapsed(_days_between(a, b))}
            candidate = _pair("temporal", lang, personas, ask, a, b, slots)
            if candidate:
                yield candidate


def _context(lang: Language, personas: tuple[Persona, Persona], fact: Fact) -> Slots:
    owner, other = personas[fact.owner], personas[1 - fact.owner]
    values = {**fact.slots, **lang.pronouns[owner.gender], "X": owner.name,
              "Xs": lang.possessive(owner.name), "Y": other.name,
              "Ys": lang.possessive(other.name), "when_answer": fact.when_answer}
    slots = Slots(values, random.Random(0), lang)  # questions use no random fill-ins
    if fact.kind in lang.events:
        slots["event"], slots["event_clause"] = (fill(part, slots)
                                                 for part in lang.events[fact.kind])
    return slots


def _usable(ask: Ask, fact: Fact, slots: Slots, facts: list[Fact]) -> bool:
    if not all(tag in fact.evidence for tag in ask.tags):
        return False
    if ask.state == "current" and fact.replaced_by is not None:
        return False
    if ask.state == "only" and any(other is not fact and other.owner == fact.owner
                                   and other.kind == fact.kind for other in facts):
        return False
    try:
        fill(ask.text + ask.answer, slots)
    except KeyError:  # a wording for a variant of the fact this one is not (e.g. partnered)
        return False
    return True


def _single(category: Category, ask: Ask, fact: Fact, slots: Slots) -> Candidate:
    evidence = tuple(dict.fromkeys(fact.evidence[tag] for tag in ask.tags))
    return Candidate(category, fill(ask.text, slots), evidence, fill(ask.answer, slots),
                     (id(fact),))


def _pair(category: Category, lang: Language, personas: tuple[Persona, Persona], ask: Ask,
          a: Fact, b: Fact, extra: dict[str, str] | None = None) -> Candidate | None:
    facts = {"a": a, "b": b}
    evidence = []
    for tag in ask.tags:
        which, _, detail = tag.partition(":")
        if detail not in facts[which].evidence:
            return None
        evidence.append(facts[which].evidence[detail])
    evidence = list(dict.fromkeys(evidence))
    if len({turn.split(":")[1] for turn in evidence}) < 2:
        return None
    slots = _context(lang, personas, a)
    slots.update(extra or {})
    slots.update({"a": _context(lang, personas, a), "b": _context(lang, personas, b),
                  "Y": personas[b.owner].name, "Ys": lang.possessive(personas[b.owner].name)})
    return Candidate(category, fill(ask.text, slots), tuple(evidence), fill(ask.answer, slots),
                     (id(a), id(b)))


def _never_said_by_other(fact: Fact, facts: list[Fact]) -> bool:
    return bool(fact.key) and not any(other.key == fact.key and other.owner != fact.owner
                                      for other in facts)


def _links(facts: list[Fact]) -> Iterator[tuple[str, Fact, Fact]]:
    """Pairs of facts a multi-hop question can join, named for the language's wordings."""
    for fact in facts:
        if fact.replaces is not None and fact.replaces.session:
            yield {"job_change": "job_before", "move": "city_before",
                   "car_replace": "car_before", "sport_drop": "sport_dropped",
                   "partner_new": "single_before"}[fact.kind], fact.replaces, fact
        for parent in fact.after:
            if parent.kind == "sibling":
                yield "sibling_" + fact.kind, parent, fact
            if fact.kind == "trip" and parent.kind == "partner_new":
                yield "partner_trip", parent, fact
            if fact.kind == "engaged" and parent.kind == "partner_new":
                yield "partner_engaged", parent, fact
    by_owner = [[fact for fact in facts if fact.owner == owner] for owner in (0, 1)]
    for mine in by_owner:
        pets = [fact for fact in mine if fact.kind == "pet"]
        yield from (("two_pets", a, b) for a, b in zip(pets, pets[1:], strict=False))
        hobbies = [fact for fact in mine if fact.kind in HOBBY_KINDS]
        yield from (("hobbies", a, b) for a, b in zip(hobbies, hobbies[1:], strict=False))
        homes = [fact for fact in mine if fact.kind in ("home", "move")]
        for pet in pets:
            lived = [home for home in homes if home.session < pet.session]
            if lived:
                yield "pet_" + lived[-1].kind, lived[-1], pet
        changes = [fact for fact in mine if fact.kind == "job_change"]
        moves = [fact for fact in mine if fact.kind == "move"]
        for change in changes:
            for move in moves:
                if change.session < move.session:
                    yield "job_then_move", change, move
    for kind in ("pet", "trip", "instrument", "sport"):
        theirs = [[fact for fact in mine if fact.kind == kind] for mine in by_owner]
        if len(theirs[0]) == len(theirs[1]) == 1:
            first, second = sorted((theirs[0][0], theirs[1][0]), key=lambda f: f.session)
            yield "both_" + kind, first, second


def _dated_pairs(lang: Language, facts: list[Fact]) -> Iterator[tuple[Fact, Fact]]:
    dated = sorted((fact for fact in facts if fact.day and fact.kind in lang.events),
                   key=lambda f: f.session)
    for position, a in enumerate(dated):
        for b in dated[position + 1:]:
            if a.owner == b.owner and a.session < b.session and _days_between(a, b) >= 14:
                yield a, b


def _days_between(a: Fact, b: Fact) -> int:
    return (b.day - a.day).days if a.day and b.day else 0
