"""LoCoMo's data read into the conversational benchmark's shapes (``python -m bench.locomo``).

LoCoMo (Maharana et al., 2024, github.com/snap-research/locomo) is ten long two-person
conversations of dated sessions with labelled questions whose evidence names turns by their
dialogue id (``D<session>:<turn>``). The data is not part of this repository (its licence is
not stated): ``fetch github:snap-research/locomo`` and point ``--data`` at
``data/locomo10.zip``, at the ``locomo10.json`` of other copies, or at a directory of its
per-conversation JSON files. Three shapes are read alike:

* a list of samples ``{"sample_id", "conversation": {...}, "qa": [...]}`` (``locomo10.json``);
* one conversation per file, the conversation's keys and ``qa`` at the top (the zip's
  ``locomo10_v2/<n>.json``), in the order of their numbers (26, 30, 41, ..., 50: the order
  of ``locomo10.json``);
* a zip of either.

REALTALK (Lee et al., 2025, github.com/danny911kr/REALTALK: ten 21-day chats between real
people, the same question shapes over categories 1-3) is read by the same code: its
``data/Chat_<n>_<names>.json`` files (a directory of them) differ only in names (speakers
under ``name``, a turn's words in ``clean_text``), in dates (``"29.12.2023, 22:42:04"``, each
turn its own) and in evidence written by hand ("D12:3-D12:5" is a range, "D 2:18" and
"D5:3." are ids). It is the held-out check: no weight was ever chosen on it.

Session times carry no time zone ("1:56 pm on 8 May, 2023"): they are read as UTC. A turn's
event time is its own when the data gives one (REALTALK), else its session's start plus
:data:`TURN_SPACING` per turn before it. Categories
are LoCoMo's numbers, named as the released data uses them (checked against the questions:
1 multi-hop, 2 temporal "When did ...", 3 open-domain inference "Would ... likely ...",
4 single-hop, 5 adversarial: asked about the other speaker). Evidence ids are normalised
("D:11:26" and "D30:05" name D11:26 and D30:5; "D8:6; D9:17" is two ids); ids that name no
turn are dropped, and so is a question left without evidence (4 of 1,986: 1,982 remain).
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_platform.features.benchmarks.conversations.corpus import (
    Category,
    Conversation,
    Question,
    Session,
    Turn,
)

CATEGORY_NAMES: dict[int, Category] = {1: "multi_hop", 2: "temporal", 3: "open_domain",
                                       4: "single_hop", 5: "adversarial"}
TURN_SPACING = timedelta(seconds=30)
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})",
                   re.IGNORECASE)
_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"), 1)}
_NUMERIC_DATE = re.compile(r"(\d{1,2})\.(\d{1,2})\.(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?")
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D\s?:?(\d+):(\d+)(?:\s?-\s?D\s?:?(\d+):(\d+))?")
_FIRST_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class Loaded:
    """The conversations read, with what was dropped while reading them."""

    dataset: str  # "LoCoMo" or "REALTALK"
    conversations: list[Conversation]
    dropped_evidence: int  # evidence ids that name no turn
    dropped_questions: int  # questions left without evidence


def session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` (LoCoMo) or ``"29.12.2023, 22:42:04"`` (REALTALK) as a
    UTC datetime (neither gives a zone)."""
    if match := _DATE.search(text):
        hour, minute, half, day, month, year = match.groups()
        hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        return datetime(int(year), _MONTHS[month.lower()], int(day), hour, int(minute),
                        tzinfo=UTC)
    if match := _NUMERIC_DATE.search(text):
        day, month, year, hour, minute, second = match.groups()
        return datetime(int(year), int(month), int(day), int(hour), int(minute),
                        int(second or 0), tzinfo=UTC)
    raise ValueError(f"unreadable session time {text!r}")


def evidence_ids(entries: list[Any]) -> list[str]:
    """The dialogue ids an evidence list names, normalised (``D<session>:<turn>``); a range
    within one session (``D12:3-D12:5``) names every turn of it."""
    found: list[str] = []
    for entry in entries:
        for session, turn, end_session, end_turn in _EVIDENCE.findall(str(entry)):
            first = int(turn)
            if end_session == session:  # a range within one session
                last = max(first, int(end_turn))
                named = [f"D{int(session)}:{n}" for n in range(first, last + 1)]
            else:  # one id, or the two ends of a range across sessions
                named = [f"D{int(session)}:{first}"]
                if end_session:
                    named.append(f"D{int(end_session)}:{int(end_turn)}")
            found.extend(dia for dia in named if dia not in found)
    return found


def turn_text(turn: dict[str, Any], captions: bool) -> str:
    """What a speaker said; a shared photo's caption in brackets after it (``captions``)."""
    text = str(turn.get("text", turn.get("clean_text", ""))).strip()
    caption = turn.get("blip_caption")
    if captions and caption:
        text = f"{text} [shares a photo: {str(caption).strip()}]".strip()
    return text


def _conversation(key: str, body: dict[str, Any], qa: list[dict[str, Any]],
                  captions: bool) -> tuple[Conversation, int, int]:
    numbers = sorted(int(m.group(1)) for k in body
                     if (m := _SESSION.fullmatch(k)) and isinstance(body[k], list) and body[k])
    sessions: list[Session] = []
    known: set[str] = set()
    for number in numbers:
        began = session_time(body[f"session_{number}_date_time"])
        turns = []
        for index, raw in enumerate(body[f"session_{number}"]):
            dia = evidence_ids([raw["dia_id"]])[0]
            known.add(dia)
            said = (session_time(raw["date_time"]) if raw.get("date_time")
                    else began + index * TURN_SPACING)
            turns.append(Turn(f"{key}:{dia}", number, index, str(raw["speaker"]),
                              turn_text(raw, captions), said))
        sessions.append(Session(number, began, tuple(turns)))
    questions: list[Question] = []
    dropped_evidence = dropped_questions = 0
    for index, item in enumerate(qa):
        named = evidence_ids(item.get("evidence") or [])
        evidence = tuple(f"{key}:{d}" for d in named if d in known)
        dropped_evidence += len(named) - len(evidence)
        if not evidence:
            dropped_questions += 1
            continue
        answer = item.get("answer", item.get("adversarial_answer", ""))
        questions.append(Question(f"{key}:q{index}", key, CATEGORY_NAMES[int(item["category"])],
                                  str(item["question"]), evidence, str(answer)))
    names = body.get("name") or {}  # REALTALK
    speakers = (str(body.get("speaker_a", names.get("speaker_1"))),
                str(body.get("speaker_b", names.get("speaker_2"))))
    return (Conversation(key, "en", speakers, tuple(sessions), tuple(questions)),
            dropped_evidence, dropped_questions)


def _samples(name: str, payload: Any) -> list[tuple[str, dict[str, Any], list]]:
    """(key, conversation body, qa) of every conversation in one JSON document."""
    if isinstance(payload, dict):
        payload = [payload]
    samples = []
    for position, sample in enumerate(payload):
        body = sample.get("conversation", sample)
        key = sample.get("sample_id") or (f"conv-{name}" if len(payload) == 1
                                          else f"conv-{name}-{position}")
        samples.append((str(key), body, sample.get("qa", [])))
    return samples


def _order(name: str) -> tuple[int, str]:
    """LoCoMo's ``26.json`` by 26, REALTALK's ``Chat_10_Fahim_Muhhamed.json`` by 10."""
    stem = Path(name).stem
    number = _FIRST_NUMBER.search(stem)
    return (int(number.group()), stem) if number else (10**9, stem)


def _documents(path: Path) -> list[tuple[str, Any]]:
    """(file stem, parsed JSON) of every JSON document at ``path``, in LoCoMo's order."""
    if path.is_dir():
        files = sorted((p for p in path.rglob("*.json") if not p.name.startswith(".")),
                       key=lambda p: _order(p.name))
        return [(p.stem, json.loads(p.read_text())) for p in files]
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = sorted((n for n in archive.namelist() if n.endswith(".json")
                            and not Path(n).name.startswith(".")), key=_order)
            return [(Path(n).stem, json.loads(archive.read(n))) for n in names]
    return [(path.stem, json.loads(path.read_text()))]


def load(path: Path, *, captions: bool = True) -> Loaded:
    """Every conversation at ``path`` (a zip, a JSON file or a directory; see the module)."""
    if not path.exists():
        raise FileNotFoundError(f"no LoCoMo data at {path}")
    conversations: list[Conversation] = []
    dropped_evidence = dropped_questions = 0
    dataset = "LoCoMo"
    for name, payload in _documents(path):
        for key, body, qa in _samples(name, payload):
            if "name" in body and "speaker_a" not in body:
                dataset = "REALTALK"
            conversation, lost_evidence, lost_questions = _conversation(key, body, qa, captions)
            conversations.append(conversation)
            dropped_evidence += lost_evidence
            dropped_questions += lost_questions
    if not conversations:
        raise ValueError(f"no LoCoMo conversation in {path}")
    return Loaded(dataset, conversations, dropped_evidence, dropped_questions)
