"""What the generator sends and what it records: the requests of a run (reads, writes and
health checks over the corpus vocabulary), their send times, and one sample per request."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from bench.common import (
    _CITIES,
    _COMPANIES,
    _FIRST,
    _LAST,
    _MONTHS_DE,
    _MONTHS_EN,
    _PRODUCTS,
    _memory_text,
)
from bench.load import CORPUS_SEED

READ, WRITE, HEALTH = "GET /api/v1/memory", "POST /api/v1/memory", "GET /healthz"

QUESTIONS = (
    "Wann ist die Umsatzsteuervoranmeldung für {company} fällig?",
    "Wer betreut die Lohnabrechnung von {company}?",
    "Welche Bankverbindung hat {company} jetzt?",
    "Wie möchte {person} Unterlagen erhalten?",
    "Wann ist die Inventur bei {company} in {city} geplant?",
    "Hat {company} die Rechnung im {month_de} bezahlt?",
    "Wann möchte {person} zurückgerufen werden?",
    "Welche Belege fehlen im Jahresabschluss von {company}?",
    "Um welche Fristverlängerung hat {person} gebeten?",
    "Who covers the account while {person} is on parental leave?",
    "What caused the {product} outage?",
    "When is the quarterly review with {company}?",
    "Why was the invoice for {company} disputed?",
    "Who owns the migration of the {product}?",
    "How does {person} prefer to be contacted?",
    "Which discount did {company} ask for in {month_en}?",
    "Why was invoice {number} disputed?",
    "Welche Belege fehlen zur Position {number}?",
    "How does {company} pay?",
    "Where does {company} use the {product}?",
)
SCOPES = ("workspace", "team", "private", "channel")


@dataclass(frozen=True)
class Req:
    """One request as sent: ``route`` names it in the results (READ, WRITE or HEALTH)."""

    route: str
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None

    def answered_ok(self, status: int) -> bool:
        """Whether ``status`` is a success for this route (a write may answer 201 or 200)."""
        return status in (200, 201) if self.route == WRITE else status == 200


def channel_threads() -> list[str]:
    """The channel threads of the synthetic corpus (its seed draws them first)."""
    corpus_rng = random.Random(CORPUS_SEED)
    return [f"C{corpus_rng.randint(100, 999)}/{1700000000 + i}.0001" for i in range(40)]


class Workload:
    """Endless, reproducible streams of read and write requests over the corpus vocabulary."""

    def __init__(self, tokens: list[str], seed: int, tag: str) -> None:
        self.rng = random.Random(seed)
        self.tokens = tokens
        self.tag = tag
        self.people = [f"{f} {la}" for f in _FIRST for la in _LAST]
        self.threads = channel_threads()
        self.writes = 0

    def _auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.rng.choice(self.tokens)}"}

    def read(self) -> Req:
        rng = self.rng
        question = rng.choice(QUESTIONS).format(
            company=rng.choice(_COMPANIES), person=rng.choice(self.people),
            product=rng.choice(_PRODUCTS), city=rng.choice(_CITIES),
            month_de=rng.choice(_MONTHS_DE), month_en=rng.choice(_MONTHS_EN),
            number=rng.randint(1000, 99999))
        params: dict[str, Any] = {"query": question}
        if rng.random() < 0.3:
            params["scope"] = rng.choice(SCOPES)
        if rng.random() < 0.15:
            params.update(channelThreadKey=rng.choice(self.threads), channelType="slack")
        if rng.random() < 0.2:
            params["limit"] = rng.choice((3, 10, 20))
        return Req(READ, "GET", f"/api/v1/memory?{urlencode(params)}", self._auth())

    def write(self) -> Req:
        rng = self.rng
        self.writes += 1
        # A unique reference keeps every write new (never deduplicated).
        content = (f"Notiz {self.tag}-{self.writes}: "
                   + _memory_text(rng, self.people, 80, 400))
        body: dict[str, Any] = {"content": content, "visibility": "team"}
        if rng.random() < 0.5:
            body["subjectRefs"] = {"mandantId": f"M-{rng.randint(1, 400):04d}"}
        headers = {**self._auth(), "content-type": "application/json"}
        return Req(WRITE, "POST", "/api/v1/memory", headers,
                   json.dumps(body, ensure_ascii=False).encode())

    def health(self) -> Req:
        return Req(HEALTH, "GET", "/healthz", {})


def arrivals(rate: float, seconds: float, rng: random.Random, kind: str) -> list[float]:
    """Send offsets in [0, seconds) for ``rate`` requests per second."""
    if rate <= 0:
        return []
    if kind == "uniform":
        step, phase = 1 / rate, rng.random() / rate
        return [phase + i * step for i in range(int(seconds * rate))
                if phase + i * step < seconds]
    times, t = [], rng.expovariate(rate)
    while t < seconds:
        times.append(t)
        t += rng.expovariate(rate)
    return times


@dataclass
class Sample:
    """What the generator saw of one request; offsets are from the run's start."""

    route: str
    scheduled: float  # offset from the run's start (s)
    lag: float  # request actually started minus scheduled (s): the generator's own delay
    latency: float  # completion minus scheduled (open loop) or minus send (closed loop), s
    service: float  # completion minus send, after any wait for a free connection (s)
    done: float  # completion offset (s)
    status: str  # HTTP status code or an error name
    ok: bool
    measured: bool  # scheduled after the warmup
