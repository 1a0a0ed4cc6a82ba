"""The shape of the conversational benchmark: conversations of dated sessions of turns, and
labelled questions whose evidence is one or more turns.

Generated deterministically by :mod:`~memory_platform.features.benchmarks.conversations.generate`
(no data file: the corpus is code); evaluated by
:mod:`~memory_platform.features.benchmarks.conversations.evaluate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Category = Literal["single_hop", "multi_hop", "temporal", "open_domain", "adversarial"]
CATEGORIES: tuple[Category, ...] = ("single_hop", "multi_hop", "temporal", "open_domain",
                                    "adversarial")


@dataclass(frozen=True)
class Turn:
    """One utterance. ``id`` is ``"<conversation>:s<session>:t<index>"``, unique in the
    corpus; ``index`` counts from 0 within its session."""

    id: str
    session: int
    index: int
    speaker: str
    text: str
    occurred_at: datetime  # timezone-aware; increases turn by turn within a conversation

    def content(self) -> str:
        """What is stored as the memory: ``"<speaker>: <text>"``."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Session:
    index: int  # from 1
    started_at: datetime  # timezone-aware
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    """A labelled question: ``evidence`` are the ids of the turns that answer it (two or more
    for multi-hop). An adversarial question asks about something one speaker never said;
    its evidence is the turn where the other speaker said it."""

    id: str
    conversation: str
    category: Category
    text: str
    evidence: tuple[str, ...]
    answer: str  # the expected answer in words, for people reading the results


@dataclass(frozen=True)
class Conversation:
    key: str  # e.g. "en-01", "de-03"
    lang: Literal["en", "de"]
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session.turns]
