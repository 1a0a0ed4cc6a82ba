"""Shared helpers of the benchmarks: a fresh database, a synthetic bilingual corpus, timing,
machine facts and JSON results under bench/results/<name>.json.

Benchmarks print numbers and assert nothing timed; the JSON is what gets compared across runs
and machines, so it always carries the machine it was measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql

from memory_platform.features.benchmarks.conversations.variants import Variant, parse_variant
from memory_platform.foundation.db import embedded, migrations
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import PROJECT_ROOT

RESULTS_DIR = PROJECT_ROOT / "bench" / "results"


# --- database ---------------------------------------------------------------------------------


@contextmanager
def fresh_database(database_url: str | None = None, *, keep: bool = False) -> Iterator[str]:
    """URL of a new, migrated database: on the server of ``database_url`` (its role needs
    CREATEDB), or on an embedded server in a temporary directory that is destroyed after."""
    tmp: tempfile.TemporaryDirectory[str] | None = None
    pgdata: Path | None = None
    if database_url:
        admin = with_database(database_url, "postgres")
    else:
        tmp = tempfile.TemporaryDirectory(prefix="memory-bench-")
        pgdata = Path(tmp.name) / "pgdata"
        admin = embedded.ensure_server(pgdata).uri("postgres")
    name = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url = with_database(admin, name)
        with psycopg.connect(url, autocommit=True) as conn:
            migrations.migrate(conn, PROJECT_ROOT / "migrations")
        yield url
    finally:
        if not keep and pgdata is None:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(name)))
        if pgdata is not None and tmp is not None:
            embedded.release_server(pgdata)
            embedded.destroy(pgdata)
            tmp.cleanup()


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (None without values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


# --- machine ----------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(conn: psycopg.Connection | None = None) -> dict[str, Any]:
    """Cores, RAM, CPU, Python and (given a connection) PostgreSQL and pgvector versions."""
    info: dict[str, Any] = {
        "cores": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        # Other processes share the machine: a busy one slows every number down.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if conn is not None:
        info["postgresql"] = conn.execute("SHOW server_version").fetchone()[0]
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'"
                           ).fetchone()
        info["pgvector"] = row[0] if row else None
    return info


# --- timing and results -----------------------------------------------------------------------


@dataclass
class Timer:
    """Named phases in seconds: ``with timer.phase("load"): ...``."""

    phases: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - started


def write_result(name: str, payload: dict[str, Any], directory: Path = RESULTS_DIR) -> Path:
    """Write ``payload`` (plus a timestamp) to ``<directory>/<name>.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"{name}.json"
    body = {"benchmark": name, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **payload}
    target.write_text(json.dumps(body, indent=2, ensure_ascii=False, default=str) + "\n")
    return target


# --- corpus -----------------------------------------------------------------------------------

_FIRST = ("Anna", "Jonas", "Lea", "Felix", "Marie", "Paul", "Sophie", "Lukas", "Emma", "Ben",
          "Hannah", "Noah", "Laura", "Elias", "Julia", "Tim", "Sarah", "David", "Lisa", "Jan")
_LAST = ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Meyer", "Wagner", "Becker",
         "Schulz", "Hoffmann", "Koch", "Richter", "Klein", "Wolf", "Schröder", "Neumann",
         "Braun", "Zimmermann", "Krüger", "Hartmann")
_CITIES = ("Berlin", "Hamburg", "München", "Köln", "Frankfurt", "Stuttgart", "Düsseldorf",
           "Leipzig", "Dresden", "Hannover", "Nürnberg", "Bremen")
_COMPANIES = ("Nordlicht GmbH", "Bergmann & Söhne KG", "Alpen Logistik AG", "Rheinwerk Bau",
              "Havel Consulting", "Elbtal Software", "Sonnenhof Gastro", "Mainfeld Praxis",
              "Spree Medien", "Isar Energie", "Ostsee Reisen", "Brandt Steuerberatung")
_PRODUCTS = ("billing service", "customer portal", "mobile app", "reporting pipeline",
             "search API", "payment gateway", "onboarding flow", "data warehouse")
_WEEKDAYS_DE = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag")
_WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_MONTHS_DE = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August",
              "September", "Oktober", "November", "Dezember")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August",
              "September", "October", "November", "December")

_DE = (
    "Die Umsatzsteuervoranmeldung für {company} ist bis zum {day}. {month_de} fällig.",
    "{person} bevorzugt Rückrufe am {weekday_de} zwischen 9 und 11 Uhr.",
    "Der Mandant {company} hat die Rechnung Nr. {number} über {amount} Euro am {day}. "
    "{month_de} bezahlt.",
    "Für {company} gilt ein abweichendes Wirtschaftsjahr, Beginn am 1. {month_de}.",
    "{person} aus {city} möchte Unterlagen nur noch digital per Upload erhalten.",
    "Die Lohnabrechnung von {company} wird ab {month_de} von {person} betreut.",
    "Im Jahresabschluss {year} fehlen noch die Belege zur Position {number}.",
    "Besprechung mit {person} am {weekday_de}: Einspruch gegen den Bescheid {year} prüfen.",
    "Die Bankverbindung von {company} hat sich geändert, neue Filiale in {city}.",
    "{person} hat im Portal um eine Fristverlängerung bis {month_de} {year} gebeten.",
    "Bei {company} ist die Inventur für den {day}. {month_de} in {city} geplant.",
    "Das Team hat beschlossen, Reisekosten von {company} quartalsweise abzurechnen.",
)
_EN = (
    "{person} prefers email over phone calls and wants invoices as PDF.",
    "We deployed the {product} to production on {weekday_en}, ticket {number}.",
    "The quarterly review with {company} is scheduled for {month_en} {day} in {city}.",
    "{person} is on parental leave until {month_en} {year}; {person2} covers the account.",
    "The {product} outage on {weekday_en} was caused by an expired certificate.",
    "{company} asked for a discount of {percent} percent on the renewal in {month_en}.",
    "Invoice {number} for {company} was disputed because of a wrong VAT rate.",
    "{person} owns the migration of the {product}; the deadline is {month_en} {day}.",
    "The onboarding call with {company} went well, next step is the contract draft.",
    "Customer {company} uses the {product} mainly from the office in {city}.",
    "Retro note: the {product} release slipped by {percent} days because of reviews.",
    "{person2} confirmed that {company} pays by SEPA direct debit from {month_en}.",
)


def _slots(rng: random.Random, people: list[str]) -> dict[str, Any]:
    return {
        "person": rng.choice(people), "person2": rng.choice(people),
        "company": rng.choice(_COMPANIES), "city": rng.choice(_CITIES),
        "product": rng.choice(_PRODUCTS), "weekday_de": rng.choice(_WEEKDAYS_DE),
        "weekday_en": rng.choice(_WEEKDAYS_EN), "month_de": rng.choice(_MONTHS_DE),
        "month_en": rng.choice(_MONTHS_EN), "day": rng.randint(1, 28),
        "year": rng.randint(2019, 2026), "number": f"{rng.randint(1000, 99999)}",
        "amount": f"{rng.randint(50, 25000):,}".replace(",", "."),
        "percent": rng.randint(2, 30),
    }


def _memory_text(rng: random.Random, people: list[str], low: int, high: int) -> str:
    target = rng.randint(low, high)
    templates = _DE if rng.random() < 0.5 else _EN
    sentences: list[str] = []
    while sum(len(s) + 1 for s in sentences) < target:
        sentences.append(rng.choice(templates).format(**_slots(rng, people)))
    text = " ".join(sentences)
    if len(text) > high:
        cut = text.rfind(" ", 0, high)
        text = text[: cut if cut > low else high].rstrip(" ,;") + "."
    return text


def synthetic_corpus(n: int, *, seed: int = 7, users: int = 50, low: int = 100,
                     high: int = 600, duplicate_share: float = 0.01,
                     invalid_share: float = 0.001) -> Iterator[dict[str, Any]]:
    """``n`` import rows (the JSONL row format): German/English workspace memories of about
    ``low``..``high`` characters, spread over users, visibilities (private, team, workspace,
    channel, or derived from the context), source types and subject refs; a small share are
    exact repeats (dedup) and a smaller share carry a credential (rejected)."""
    rng = random.Random(seed)
    people = [f"{f} {la}" for f in _FIRST for la in _LAST]
    user_ids = [f"user-{i:03d}" for i in range(users)]
    threads = [f"C{rng.randint(100, 999)}/{1700000000 + i}.0001" for i in range(40)]
    recent: list[dict[str, Any]] = []
    for i in range(n):
        if recent and rng.random() < duplicate_share:
            yield dict(rng.choice(recent))
            continue
        row: dict[str, Any] = {"content": _memory_text(rng, people, low, high)}
        if rng.random() < invalid_share:
            row["content"] += f" Passwort: Sommer{rng.randint(10, 99)}!x"
        pick = rng.random()
        user = rng.choice(user_ids)
        if pick < 0.30:
            row["user_id"] = user  # derived: private or team by the user's preference
        elif pick < 0.50:
            row.update(user_id=user, visibility="team")
        elif pick < 0.70:
            row["visibility"] = "workspace"
        elif pick < 0.85:
            row.update(user_id=user, visibility="private")
        else:
            row.update(channel_thread_key=rng.choice(threads), channel_type="slack",
                       visibility="channel")
        kind = rng.random()
        if kind < 0.20:
            row["source_type"] = "fact"
            row["trust_class"] = "human_direct" if rng.random() < 0.5 else "imported"
            if rng.random() < 0.2:
                row["assertion_type"] = "preference"
        elif kind < 0.25:
            row.update(source_type="summary", session_key=f"session-{rng.randint(1, 500)}")
        elif kind < 0.30:
            row.update(source_type="flush", session_key=f"session-{rng.randint(1, 500)}")
        if rng.random() < 0.6:
            refs: dict[str, Any] = {"mandantId": f"M-{rng.randint(1, 400):04d}"}
            if rng.random() < 0.3:
                refs["documentId"] = f"DOC-{rng.randint(1, 100000)}"
            if rng.random() < 0.1:
                refs["taskId"] = rng.randint(1, 5000)
            row["subject_refs"] = refs
        if rng.random() < 0.1:
            row["title"] = row["content"][:40].rsplit(" ", 1)[0]
        if rng.random() < 0.2:
            row["metadata"] = {"origin": "crm-export", "batch": i // 1000}
        recent.append(row)
        if len(recent) > 200:
            recent.pop(0)
        yield row


def variant_argument(text: str) -> Variant:
    """``--variant NAME=KEY:VALUE,...`` for argparse: a settings variant, or a usage error."""
    try:
        return parse_variant(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
