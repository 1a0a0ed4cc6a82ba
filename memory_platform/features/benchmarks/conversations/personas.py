"""Who the two speakers are and what each will tell: a persona is a list of facts drawn from
a language's value banks (job, city, siblings, pets, trips, ...), including facts that change
later (a new job, a move, a replaced car, a dropped sport, a new partner).

Values are drawn without repeating within a conversation, so the two speakers' similar facts
(two pets, two trips) differ, which is what makes them useful distractors.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date

from memory_platform.features.benchmarks.conversations.language import Entry, Language

# Kinds a persona may have beyond the ones everybody has (job, home, sibling, and being
# single or partnered).
OPTIONAL_KINDS = ("pet", "pet", "instrument", "sport", "craft", "trip", "trip", "car", "bike",
                  "course", "book", "series", "concert", "volunteer", "diet", "project",
                  "injury", "illness", "wedding", "birth")


@dataclass(eq=False)
class Fact:
    """Something a speaker tells. ``slots`` fill the phrasings; ``key`` names what the other
    speaker must not have for an adversarial question about it ("" = never ask one).
    Rendering fills ``session``, ``day``, ``when_answer`` and ``evidence`` (detail tag -> id
    of the turn that states it)."""

    kind: str
    owner: int
    slots: dict[str, str]
    key: str = ""
    after: list[Fact] = field(default_factory=list)  # must be told in a later session
    replaces: Fact | None = None  # the earlier state this fact changes
    replaced_by: Fact | None = None
    session: int = 0
    day: date | None = None
    when_answer: str = ""
    evidence: dict[str, str] = field(default_factory=dict)


@dataclass
class Persona:
    name: str
    gender: str  # "f" or "m", for pronouns and German word forms
    facts: list[Fact] = field(default_factory=list)


class Drawer:
    """Picks bank values without repeating one within a conversation (until a bank runs
    out), and resolves entries: lists pick one, dicts merge, ``_f``/``_m`` keys choose the
    form for a gender."""

    def __init__(self, rng: random.Random, lang: Language) -> None:
        self.rng = rng
        self.lang = lang
        self.used: set[str] = set()
        self.names: list[str] = []

    def pick(self, options: list | tuple):
        fresh = [option for option in options if repr(option) not in self.used]
        choice = self.rng.choice(fresh or list(options))
        self.used.add(repr(choice))
        return choice

    def resolve(self, entry: Entry, gender: str, prefix: str = "") -> dict[str, str]:
        slots: dict[str, str] = {}
        for key, value in entry.items():
            if isinstance(value, list | tuple):
                value = self.pick(value)
            if isinstance(value, dict):
                slots.update(self.resolve(value, gender, prefix))
            elif key[-2:] in ("_f", "_m"):
                if key[-1] == gender:
                    slots[prefix + key[:-2]] = str(value)
            else:
                slots[prefix + key] = str(value)
        return slots

    def entry(self, bank: str, gender: str = "f", prefix: str = "") -> dict[str, str]:
        return self.resolve(self.pick(self.lang.values[bank]), gender, prefix)

    def name(self, gender: str) -> str:
        """A first name unlike every other in the conversation: not "Svenja" beside "Sven"."""
        names = [name for name in self.lang.names[gender]
                 if not any(name[:4] == taken[:4] for taken in self.names)]
        name = self.rng.choice(names or list(self.lang.names[gender]))
        self.names.append(name)
        return name

    def pronouns(self, gender: str, prefix: str) -> dict[str, str]:
        return {prefix + key: value for key, value in self.lang.pronouns[gender].items()}

    def person(self, prefix: str, gender: str | None = None) -> dict[str, str]:
        """A named third person (partner, friend, baby): name, gender and pronoun slots."""
        gender = gender or self.rng.choice("fm")
        return {prefix: self.name(gender), prefix + "_g": gender,
                **self.pronouns(gender, prefix + "_")}


def draw_cast(rng: random.Random, lang: Language) -> tuple[Persona, Persona]:
    drawer = Drawer(rng, lang)
    genders = [rng.choice("fm"), rng.choice("fm")]
    personas = (Persona(drawer.name(genders[0]), genders[0]),
                Persona(drawer.name(genders[1]), genders[1]))
    # Every conversation has a job change and a move: questions about the current versus
    # the earlier state need them.
    changer, mover = rng.randrange(2), rng.randrange(2)
    for owner, persona in enumerate(personas):
        persona.facts = _facts(drawer, owner, persona.gender,
                               changes_job=owner == changer or rng.random() < 0.35,
                               moves=owner == mover or rng.random() < 0.3)
    return personas


def _facts(drawer: Drawer, owner: int, gender: str, changes_job: bool, moves: bool
           ) -> list[Fact]:
    rng = drawer.rng
    facts: list[Fact] = []

    def add(kind: str, slots: dict[str, str], key: str = "", after: list[Fact] | None = None,
            replaces: Fact | None = None) -> Fact:
        fact = Fact(kind, owner, slots, key, after or [], replaces)
        if replaces:
            replaces.replaced_by = fact
            fact.after.append(replaces)
        facts.append(fact)
        return fact

    job_entry = drawer.pick(drawer.lang.values["job"])
    first, second = rng.sample(list(job_entry["employers"]), 2)
    job_slots = drawer.resolve({k: v for k, v in job_entry.items() if k != "employers"}, gender)
    job = add("job", {**job_slots, **drawer.resolve(first, gender),
                      **drawer.entry("years")}, "employer:" + first["employer"])
    home = add("home", {**drawer.entry("city"), **drawer.entry("home_detail")})
    home.key = "city:" + home.slots["city"]
    siblings = [add("sibling", _sibling(drawer)) for _ in range(rng.choice((1, 1, 2)))]
    single = rng.random() < 0.5
    couple = add("single", {}) if single else add(
        "partnered", {**drawer.person("partner"), **drawer.entry("years")})

    kinds = rng.sample(OPTIONAL_KINDS, rng.randint(12, 15))
    partner_fact = None if single else couple
    if single and rng.random() < 0.65:
        partner_fact = add("partner_new", {**drawer.person("partner"),
                                           **drawer.entry("where_met")}, "partner_new",
                           replaces=couple)
    if partner_fact and rng.random() < 0.45:
        add("engaged", {**_partner_slots(partner_fact), **drawer.entry("proposal")}, "engaged",
            after=[partner_fact])
    if changes_job:
        new = drawer.resolve(second, gender, "new_")
        add("job_change", new, "employer:" + second["employer"], replaces=job)
    if moves:
        move = add("move", {**drawer.entry("city", prefix="new_"),
                            **drawer.entry("move_reason")}, replaces=home)
        move.key = "city:" + move.slots["new_city"]
    wedded: Fact | None = None
    for kind in kinds:
        if kind == "wedding":
            sibling = rng.choice(siblings)
            wedded = add("wedding", {**sibling.slots, **drawer.person("spouse"),
                                     **drawer.entry("venue")}, "wedding", after=[sibling])
        elif kind == "birth":
            sibling = rng.choice(siblings)
            after = [sibling] + ([wedded] if wedded and wedded.slots["sib"] == sibling.slots[
                "sib"] else [])
            baby_g = rng.choice("fm")
            add("birth", {**sibling.slots, **drawer.person("baby", baby_g),
                          **drawer.entry("baby", baby_g), **drawer.entry("weight")}, "birth",
                after=after)
        elif kind == "trip":
            add(*_trip(drawer, siblings, partner_fact))
        elif kind == "car":
            car = add("car", {**drawer.entry("car"), **drawer.entry("colour")}, "car")
            if rng.random() < 0.55:
                add("car_replace", {**drawer.entry("car", prefix="new_"),
                                    **drawer.entry("colour", prefix="new_"),
                                    **drawer.entry("car_reason")},
                    "car", replaces=car)
        elif kind == "sport":
            sport = add("sport", drawer.entry("sport", gender), "sport")
            if rng.random() < 0.5:
                add("sport_drop", {**sport.slots, **drawer.entry("drop_reason")},
                    replaces=sport)
        elif kind == "illness":
            relative = drawer.pick(drawer.lang.values["relative"])
            par_g = str(relative["par_g"])
            add("illness", {**drawer.resolve(relative, par_g), **drawer.pronouns(par_g, "par_"),
                            **drawer.entry("condition", par_g)}, "illness")
        elif kind == "pet":
            pet = drawer.entry("pet", gender)
            add("pet", {**pet, **drawer.pronouns(pet["pet_g"], "pet_")}, "pet:" + pet["species"])
        else:
            entry = drawer.entry(kind, gender)
            add(kind, entry, _KEYS.get(kind, kind).format(**entry))
    return facts


_KEYS = {"book": "book:{title}", "series": "series:{series}", "concert": "concert:{band}"}


def _sibling(drawer: Drawer) -> dict[str, str]:
    relation = drawer.pick(drawer.lang.values["sibling"])
    g = str(relation["sib_g"])
    return {**drawer.resolve(relation, g), "sib": drawer.name(g), **drawer.pronouns(g, "sib_"),
            **drawer.entry("sib_job", g), **drawer.entry("city", prefix="sib_")}


def _partner_slots(fact: Fact) -> dict[str, str]:
    return {key: value for key, value in fact.slots.items() if key.startswith("partner")}


def _trip(drawer: Drawer, siblings: list[Fact], partner: Fact | None
          ) -> tuple[str, dict[str, str], str, list[Fact]]:
    """A trip and who came along: a sibling or the partner (then told after them), a
    friend, or the parents."""
    rng = drawer.rng
    kind = rng.choice(("sibling", "sibling", "partner", "friend", "parents"))
    if kind == "partner" and partner is None:
        kind = "friend"
    slots = {**drawer.entry("trip"), **drawer.entry("duration")}
    after: list[Fact] = []
    if kind == "sibling":
        sibling = rng.choice(siblings)
        slots.update(sibling.slots)
        after.append(sibling)
    elif kind == "partner" and partner is not None:
        slots.update(_partner_slots(partner))
        after.append(partner)
    elif kind == "friend":
        slots.update(drawer.person("friend"))
    companion = next(entry for entry in drawer.lang.values["companion"]
                     if entry["type"] == kind)
    gender = slots.get("sib_g") or slots.get("partner_g") or slots.get("friend_g") or "f"
    slots.update(drawer.resolve(companion, gender))
    slots["companion_type"] = kind
    return "trip", slots, "trip:" + slots["dest"], after
