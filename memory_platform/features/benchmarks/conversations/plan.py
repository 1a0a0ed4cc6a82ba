"""Which session each fact is told in.

What people say early in a friendship (job, home, family, partner or none) comes in the first
quarter; everything else spreads over the months; a fact that depends on another (a new job
after the old one, a wedding after the sibling was introduced) comes in a later session, so
questions over both span sessions. A session holds at most three facts, and never two of
the same kind from one speaker (two trips in one evening read like a template).
"""

from __future__ import annotations

import random

from memory_platform.features.benchmarks.conversations.personas import Fact

EARLY_KINDS = frozenset({"job", "home", "sibling", "single", "partnered"})
PER_SESSION = 3


def place(facts: list[Fact], sessions: int, rng: random.Random) -> list[Fact]:
    """Set ``fact.session`` for every fact that fits and return those, in telling order.

    A dependent fact that would land after the last session is left untold (rare: a chain of
    three late facts); the fact it would have changed then simply stays current.
    """
    free = [fact for fact in facts if not fact.after and fact.kind not in EARLY_KINDS]
    rng.shuffle(free)
    # Free facts on a jittered grid, so that sessions without any news are rare.
    position = {id(fact): 0.04 + 0.88 * (rank + rng.random()) / len(free)
                for rank, fact in enumerate(free)}
    for fact in _parents_first(facts):
        if fact.after:
            start = max(position[id(parent)] for parent in fact.after)
            position[id(fact)] = start + (1 - start) * rng.uniform(0.15, 0.75)
        elif fact.kind in EARLY_KINDS:
            position[id(fact)] = rng.uniform(0.0, 0.22)
    load = dict.fromkeys(range(1, sessions + 1), 0)
    told_in: dict[int, set[tuple[int, str]]] = {s: set() for s in range(1, sessions + 1)}
    placed: list[Fact] = []
    for fact in sorted(facts, key=lambda f: position[id(f)]):
        earliest = max([1 + int(position[id(fact)] * sessions)]
                       + [parent.session + 1 for parent in fact.after])
        session = next((s for s in range(earliest, sessions + 1) if load[s] < PER_SESSION
                        and (fact.owner, fact.kind) not in told_in[s]), 0)
        if session == 0 or any(parent.session == 0 for parent in fact.after):
            if fact.replaces is not None:
                fact.replaces.replaced_by = None
            continue
        fact.session = session
        load[session] += 1
        told_in[session].add((fact.owner, fact.kind))
        placed.append(fact)
    return placed


def _parents_first(facts: list[Fact]) -> list[Fact]:
    ordered: list[Fact] = []
    seen: set[int] = set()

    def visit(fact: Fact) -> None:
        if id(fact) in seen:
            return
        seen.add(id(fact))
        for parent in fact.after:
            visit(parent)
        ordered.append(fact)

    for fact in facts:
        visit(fact)
    return ordered
