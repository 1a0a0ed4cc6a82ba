"""The offline extractor of session facts (:mod:`.facts`): deterministic candidates from the
people's turns (a remember intent, or a confirmed assistant statement), with the reasons the
other sentences were left."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory_platform.features.dreaming.extractive import classify, skip_reason
from memory_platform.features.sessions.fact_rules import (
    CONFIRMED_CONFIDENCE,
    CONFIRMED_CUE,
    EXCERPT_MAX_CHARS,
    REMEMBERED_MIN_CHARS,
    REMEMBERED_MIN_WORDS,
    TENTATIVE_CUE,
    TEXT_MAX_CHARS,
    USER_ROLES,
    Fact,
    FactExtraction,
    TurnItem,
    has_private_cue,
    has_remember_intent,
    said_by_humans,
    statement_key,
    strip_cues,
    trust_of,
)
from memory_platform.foundation.language import cut_at_word, split_sentences, words
from memory_platform.foundation.secrets import find_secret


@dataclass
class _Candidate:
    text: str
    kind: str
    confidence: float
    remembered: bool
    private: bool
    item: TurnItem
    order: int


def _remembered_skip(text: str) -> str | None:
    """Why a sentence said after a remember intent is still not kept (the person asked for
    it, so only the hard filters of :func:`skip_reason` apply, with a lower minimum)."""
    if len(text) < REMEMBERED_MIN_CHARS or len(words(text)) < REMEMBERED_MIN_WORDS:
        return "too_short"
    reason = skip_reason(text)
    return reason if reason in ("too_long", "question", "greeting", "transient",
                                "secret_like") else None


def _assistant_kind(text: str) -> tuple[str, float] | str:
    """(type, confidence) of a sentence of an assistant turn, or why it is not kept: only
    what the assistant states as settled (Dreaming's cues, or an action it confirms)."""
    reason = skip_reason(text)
    if reason is not None:
        return reason
    if TENTATIVE_CUE.search(text):
        return "tentative"
    kind = classify(text)
    if kind is not None:
        return kind[0], kind[1]
    if CONFIRMED_CUE.search(text):
        return "fact", CONFIRMED_CONFIDENCE
    return "no_cue"


def _offline_candidates(items: Sequence[TurnItem], max_chars: int, skipped: Counter[str],
                        roles: Sequence[str]) -> list[_Candidate]:
    found: dict[str, _Candidate] = {}
    order = 0
    # A run whose person asked for privacy keeps the assistant's statements in it private
    # too (an echo of the private sentence carries no cue of its own).
    private_runs = {item.run_id for item in items
                    if item.role == "user" and has_private_cue(item.content[:max_chars])}
    for item in items:
        if item.role not in roles:
            continue
        person = item.role == "user"
        remembered = False
        private = not person and item.run_id in private_runs
        for sentence in split_sentences(item.content[:max_chars]):
            remembered = remembered or (person and has_remember_intent(sentence))
            private = private or has_private_cue(sentence)
            text = strip_cues(sentence)
            if not text:
                skipped["cue_only"] += 1
                continue
            kind: tuple[Any, ...] | None
            if not person:
                judged = _assistant_kind(text)
                reason, kind = (judged, None) if isinstance(judged, str) else (None, judged)
            else:
                reason = _remembered_skip(text) if remembered else skip_reason(text)
                kind = None if reason else classify(text)
            if reason is None and kind is None and not remembered:
                reason = "no_cue"
            if reason is None and (len(text) > TEXT_MAX_CHARS or find_secret(text)):
                reason = "too_long" if len(text) > TEXT_MAX_CHARS else "credential"
            if reason is not None:
                skipped[reason] += 1
                continue
            key = statement_key(text)
            if key in found:
                skipped["duplicate"] += 1
                continue
            type_, confidence = (kind[0], kind[1]) if kind else ("fact", 0.6)
            found[key] = _Candidate(text, type_, confidence, remembered, private, item, order)
            order += 1
    return list(found.values())


def extract_offline(items: Sequence[TurnItem], *, max_facts: int, max_chars: int,
                    model_name: str, roles: Sequence[str] = USER_ROLES) -> FactExtraction:
    """The deterministic extraction of the ``extractive`` model (module docstring) over
    the turns of ``roles``: remembered sentences first, then by cue strength, then in the
    order they were said."""
    skipped: Counter[str] = Counter()
    candidates = _offline_candidates(items, max_chars, skipped, roles)
    candidates.sort(key=lambda c: (not c.remembered, -c.confidence, c.order))
    chosen = candidates[:max_facts]
    if len(candidates) > len(chosen):
        skipped["over_cap"] += len(candidates) - len(chosen)
    said = said_by_humans(items)
    facts = [Fact(text=c.text, excerpt=cut_at_word(c.text, EXCERPT_MAX_CHARS),
                  assertion_type=c.kind, private=c.private,
                  trust_class=trust_of(c.text, c.item, said), item=c.item)
             for c in sorted(chosen, key=lambda c: c.order)]
    return FactExtraction(model=model_name, facts=facts, proposed=len(candidates),
                          input_items=len(items), skipped=dict(sorted(skipped.items())))
