"""The conversational benchmark corpus, generated: long two-person chats in English and
German with dated sessions and labelled questions, in the style of LoCoMo.

Each conversation draws two personas (:mod:`.personas`), spreads their facts over 22-28
sessions (:mod:`.plan`), writes the sessions with small talk around the facts
(:mod:`.script`) and asks questions whose evidence turns were recorded while writing
(:mod:`.questions`). Everything follows from ``seed``: the corpus is generated, not stored;
only its word banks are data (``banks/*.json``).

``python -m memory_platform.features.benchmarks.conversations.generate`` prints a summary, two
sample
sessions and sample questions, for a person to judge how real it reads.
"""

from __future__ import annotations

import random
from collections import Counter

from memory_platform.features.benchmarks.conversations.corpus import CATEGORIES, Conversation
from memory_platform.features.benchmarks.conversations.english import ENGLISH
from memory_platform.features.benchmarks.conversations.german import GERMAN
from memory_platform.features.benchmarks.conversations.language import Language
from memory_platform.features.benchmarks.conversations.personas import draw_cast
from memory_platform.features.benchmarks.conversations.plan import place
from memory_platform.features.benchmarks.conversations.questions import build_questions
from memory_platform.features.benchmarks.conversations.script import Writer
from memory_platform.features.benchmarks.conversations.timeline import session_starts

LANGUAGES: dict[str, Language] = {"en": ENGLISH, "de": GERMAN}


def generate(seed: int = 14, conversations: int = 8) -> list[Conversation]:
    """``conversations`` conversations alternating English and German: en-01, de-01, en-02..."""
    corpus = []
    for number in range(conversations):
        lang = ("en", "de")[number % 2]
        key = f"{lang}-{number // 2 + 1:02d}"
        corpus.append(_conversation(key, LANGUAGES[lang], random.Random(seed * 7919 + number)))
    return corpus


def _conversation(key: str, lang: Language, rng: random.Random) -> Conversation:
    personas = draw_cast(rng, lang)
    starts = session_starts(rng, rng.randint(22, 28), lang.timezone)
    facts = place([fact for persona in personas for fact in persona.facts], len(starts), rng)
    writer = Writer(key, lang, personas, rng)
    writer.plan_hints(facts)
    budget = rng.randint(425, 485)
    sessions = []
    for index, start in enumerate(starts, 1):
        written = sum(len(session.turns) for session in sessions)
        target = (budget - written) // (len(starts) - index + 1) + rng.randint(-4, 4)
        gap = (start - starts[index - 2]).days if index > 1 else 0
        sessions.append(writer.session(index, start, gap,
                                       [fact for fact in facts if fact.session == index], target))
    return Conversation(key, lang.code, (personas[0].name, personas[1].name), tuple(sessions),
                        build_questions(key, lang, personas, facts, rng))


def _summary(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        turns = conversation.turns()
        categories = Counter(question.category for question in conversation.questions)
        first, last = conversation.sessions[0].started_at, conversation.sessions[-1].started_at
        print(f"{conversation.key} {' & '.join(conversation.speakers):<18} "
              f"{len(conversation.sessions)} sessions {len(turns)} turns "
              f"{first:%Y-%m-%d}..{last:%Y-%m-%d}  {len(conversation.questions)} questions: "
              + " ".join(f"{category}={categories[category]}" for category in CATEGORIES))


def _show_session(conversation: Conversation, index: int) -> None:
    session = conversation.sessions[index]
    print(f"\n=== {conversation.key} session {session.index}, {session.started_at:%A %d %B %Y}")
    for turn in session.turns:
        print(f"[{turn.occurred_at:%H:%M}] {turn.speaker}: {turn.text}")


def _show_questions(conversation: Conversation, count: int, rng: random.Random) -> None:
    texts = {turn.id: turn for turn in conversation.turns()}
    print(f"\n=== {conversation.key} questions")
    for question in rng.sample(list(conversation.questions), count):
        print(f"- [{question.category}] {question.text}\n  answer: {question.answer}")
        for turn_id in question.evidence:
            print(f"  evidence {turn_id}: {texts[turn_id].content()}")


if __name__ == "__main__":
    corpus = generate()
    _summary(corpus)
    rng = random.Random(1)
    for conversation in (corpus[0], corpus[1]):
        _show_session(conversation, rng.randrange(len(conversation.sessions)))
    for conversation in (corpus[0], corpus[1]):
        _show_questions(conversation, 5, rng)
