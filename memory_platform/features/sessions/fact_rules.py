"""What session facts are made of (:mod:`.facts`): the limits and the cues (remember,
private, tentative, confirmed), the turn items read from a run, the result types, and the
trust and privacy rules (who said a statement, the trust class of a fact, a private cue
before an excerpt, the item a fact cites)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from memory_platform.features.sessions.runs import SessionRun
from memory_platform.foundation.language import split_sentences
from memory_platform.foundation.text import normalise
from memory_platform.shared.access import history_visibility

SCHEMA_NAME = "session_facts_v1"
ASSERTION_TYPES = ("fact", "preference", "decision", "constraint", "procedure")
FIELDS = ("text", "excerpt", "assertionType", "private")
TEXT_MAX_CHARS = 600
EXCERPT_MAX_CHARS = 300
CONVERSATION_ROLES = ("user", "assistant")
USER_ROLES = ("user",)  # what the offline extraction reads by default: the people's turns
HUMAN_DIRECT = "human_direct"
ASSISTANT_INFERENCE = "assistant_inference"
# A sentence said after a remember intent is kept when it has at least this much to say.
REMEMBERED_MIN_CHARS = 5
REMEMBERED_MIN_WORDS = 2
# Completion tokens one fact may take (text, excerpt and the JSON around them), plus room.
_I = re.IGNORECASE
_APOSTROPHE = "['\u2019]"


def _cue(pattern: str) -> re.Pattern[str]:
    # Word-bounded on both sides: a cue never starts or ends inside a word.
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", _I)


_REMEMBER_WORDS = (
    rf"remember|don{_APOSTROPHE}t forget|do not forget|note that|keep in mind|make a note|"
    r"merk dir|merke dir|merkt euch|merken sie sich|vergiss nicht|vergesst nicht|"
    r"vergessen sie nicht|notier\w*|denk daran|denke daran|denkt daran")
_REMEMBER = _cue(_REMEMBER_WORDS)
_PRIVATE_WORDS = r"privately|in private|only for me|just for me|nur für mich|privat"
PRIVATE_CUE = _cue(_PRIVATE_WORDS)
# A cue that opens a sentence ("Remember that ...", "Merk dir bitte, dass ...",
# "Privately: ..."): the statement is what follows it. Anchored and bounded: linear.
_LEAD = re.compile(
    rf"^(?:(?:please|bitte)[\s,]+)?(?:{_REMEMBER_WORDS}|{_PRIVATE_WORDS})(?![\w-])"
    r"(?:\s+(?:please|bitte))?(?:[\s,:;\u2013\u2014-]+(?:that|this|dass|das)(?![\w-]))?"
    r"[\s,:;\u2013\u2014-]*", _I)
# What an assistant offers, plans or suggests is not settled: of its turns only what it
# states as done or decided is kept (offline extraction).
TENTATIVE_CUE = _cue(
    rf"i will|i{_APOSTROPHE}ll|i can|i could|i would|i{_APOSTROPHE}d|i might|i may|let me|"
    r"shall i|should i|shall we|should we|would you|do you want|you could|you might|"
    r"maybe|perhaps|i suggest|i recommend|i propose|how about|what about|if you like|"
    r"ich werde|ich kann|ich könnte|ich würde|soll ich|sollen wir|möchtest du|möchten sie|"
    r"willst du|wollen sie|wie wäre|vielleicht|ich schlage vor|ich empfehle|falls du|"
    r"falls sie")
# An action the assistant confirms as done: a fact even without one of Dreaming's cues.
CONFIRMED_CUE = _cue(
    r"booked|scheduled|rescheduled|reserved|confirmed|created|set up|registered|added|"
    r"moved|renamed|cancell?ed|assigned|invited|sent|ordered|"
    r"gebucht|eingetragen|reserviert|bestätigt|angelegt|erstellt|eingerichtet|verschoben|"
    r"umbenannt|abgesagt|storniert|zugewiesen|eingeladen|verschickt|gesendet|bestellt")
CONFIRMED_CONFIDENCE = 0.7


def has_remember_intent(text: str) -> bool:
    """Whether ``text`` asks to remember something (English or German), in linear time:
    remember, don't forget, note that, keep in mind / merk dir, merke dir, vergiss nicht,
    notier..., denk daran."""
    return _REMEMBER.search(text) is not None


def has_private_cue(text: str) -> bool:
    """Whether ``text`` asks to keep something private (privately, only for me, nur für
    mich, privat)."""
    return PRIVATE_CUE.search(text) is not None


def strip_cues(sentence: str) -> str:
    """``sentence`` without the remember/private cues that open it: a suffix of it (so still
    verbatim in the item), or the sentence itself when it opens with none."""
    text = sentence
    for _ in range(3):  # "Bitte merk dir, nur für mich: ..." carries two
        match = _LEAD.match(text)
        if match is None or match.end() == 0:
            break
        text = text[match.end():]
    return text.strip()


# --- the input -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnItem:
    """One turn item as extraction sees it: ``user_id`` is who wrote it, ``run_user_id`` the
    acting (human) user of its run."""

    message_id: str
    run_id: str | None
    role: str
    content: str
    user_id: str | None = None
    run_user_id: str | None = None
    seq: int = 0
    run_agent_written: bool = False  # an agent wrote to the run: no turn is a person's own

    @property
    def said_by_run_human(self) -> bool:
        """A user turn of the run's own human, in a run no agent wrote to: what they say is
        ``human_direct``."""
        return (self.role == "user" and not self.run_agent_written
                and self.user_id is not None and self.user_id == self.run_user_id)


_ITEMS = sql.SQL(
    "SELECT m.id::text, m.run_id, m.role, m.content, m.user_id, m.seq"
    "  FROM agent_context_messages m"
    " WHERE m.instance_key = %s AND m.session_key = %s AND m.run_id = %s AND {visible}"
    " ORDER BY m.seq DESC LIMIT %s")


def read_run_items(conn: psycopg.Connection, run: SessionRun, *,
                   limit: int = 500) -> list[TurnItem]:
    """The run's newest ``limit`` items in order, as the run's own context may read them (the
    one history rule, ``access.history_visibility``): background work never learns from an
    item the run's user could not read."""
    visible = history_visibility(run.access(), "m")
    rows = conn.execute(_ITEMS.format(visible=visible),
                        (run.instance_key, run.session_key, run.run_id, limit)).fetchall()
    return [TurnItem(message_id=row[0], run_id=row[1], role=row[2], content=row[3],
                     user_id=row[4], run_user_id=run.user_id, seq=row[5],
                     run_agent_written=run.agent_written)
            for row in reversed(rows)]


def budget_items(items: Sequence[TurnItem], max_chars: int) -> list[TurnItem]:
    """The conversation items (user, assistant) that fit ``max_chars``, newest kept first,
    in order. The newest item alone may exceed it: it is then shown cut
    (:func:`shown_text`)."""
    chosen: list[TurnItem] = []
    used = 0
    for item in reversed(items):
        if item.role not in CONVERSATION_ROLES or not item.content.strip():
            continue
        if used + len(item.content) > max_chars:
            if not chosen:
                chosen.append(item)
            break
        chosen.append(item)
        used += len(item.content)
    return chosen[::-1]


def shown_text(item: TurnItem, max_chars: int) -> str:
    return item.content[:max_chars]


# --- the result ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    text: str
    excerpt: str
    assertion_type: str
    private: bool          # written with explicit_private: stays its author's
    trust_class: str       # human_direct | assistant_inference
    item: TurnItem         # the source item (its run is the fact's context)


@dataclass(frozen=True)
class Rejection:
    index: int             # position in the model's answer (-1: not an answer item)
    reason: str


@dataclass
class FactExtraction:
    model: str
    facts: list[Fact] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    proposed: int = 0      # facts the model proposed (offline: candidates found)
    retries: int = 0       # transport retries of the model call
    input_items: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # offline: sentences left, by why


# --- trust and privacy -----------------------------------------------------------------------


def statement_key(text: str) -> str:
    return normalise(text).rstrip(" .!;\u2026")


def said_by_humans(items: Iterable[TurnItem]) -> dict[str | None, set[str]]:
    """Per run, the statements its own human said in user turns: every sentence, with and
    without the remember/private cue that opens it, and the whole turn."""
    said: dict[str | None, set[str]] = {}
    for item in items:
        if not item.said_by_run_human:
            continue
        forms = said.setdefault(item.run_id, set())
        forms.add(statement_key(item.content))
        for sentence in split_sentences(item.content):
            forms.add(statement_key(sentence))
            forms.add(statement_key(strip_cues(sentence)))
    return said


def trust_of(text: str, item: TurnItem, said: dict[str | None, set[str]]) -> str:
    return HUMAN_DIRECT if statement_key(text) in said.get(item.run_id, ()) \
        else ASSISTANT_INFERENCE


_SENTENCE_END = re.compile(r"[.!?\n]")


def private_before(content: str, end: int) -> bool:
    """A private cue in the item before the end of the sentence the fact's excerpt ends in
    ("I am allergic to nuts, keep that only for me." keeps the whole sentence private)."""
    stop = _SENTENCE_END.search(content, end)
    return PRIVATE_CUE.search(content, 0, stop.end() if stop else len(content)) is not None


def source_of(excerpt: str, items: Sequence[TurnItem],
              shown: dict[str, str]) -> tuple[TurnItem, int] | None:
    """The item the excerpt occurs in verbatim (a user turn before an assistant's echo of
    it) and where it ends there."""
    fallback: tuple[TurnItem, int] | None = None
    for item in items:
        at = shown[item.message_id].find(excerpt)
        if at < 0:
            continue
        if item.role == "user":
            return item, at + len(excerpt)
        if fallback is None:
            fallback = (item, at + len(excerpt))
    return fallback
