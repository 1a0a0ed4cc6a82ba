"""The generated conversational corpus: its size and shape, that every label points at a turn
that says it, that questions paraphrase rather than quote, and that it is deterministic."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections import Counter
from statistics import mean

import pytest

from memory_platform.features.benchmarks.conversations.corpus import CATEGORIES, Conversation
from memory_platform.features.benchmarks.conversations.english import ENGLISH
from memory_platform.features.benchmarks.conversations.generate import generate
from memory_platform.features.benchmarks.conversations.german import GERMAN
from memory_platform.features.benchmarks.conversations.language import Language

STOPWORDS = frozenset("""
a an and are as at be been but by did do does for from had has have he her his how i in is it
its me my no not of on or she so than that the their them then there they this to was we were
what when where which who whom why will with would you your after before about into still now
new could should can probably likely
aber als am an auch auf aus bei bin bis das dass dem den der des die du ein eine einem einen
einer er es für hat hatte hab habe ich ihr ihre im in ist ja mit nach nicht noch nur oder sein
seine sich sie so über um und von vor war wann warum was welche welchen welcher welches wen
wer wie wo zu zum zur jetzt schon mal
""".split())


def words(text: str) -> set[str]:
    return {word for word in re.findall(r"[a-zäöüß0-9]+", text.lower())
            if len(word) > 2 and word not in STOPWORDS}


@pytest.fixture(scope="module")
def corpus() -> list[Conversation]:
    return generate()


def turn_texts(conversation: Conversation) -> dict[str, str]:
    return {turn.id: turn.text for turn in conversation.turns()}


def test_eight_conversations_in_both_languages(corpus: list[Conversation]) -> None:
    assert [c.key for c in corpus] == ["en-01", "de-01", "en-02", "de-02", "en-03", "de-03",
                                       "en-04", "de-04"]
    assert Counter(c.lang for c in corpus) == {"en": 4, "de": 4}
    for conversation in corpus:
        assert len(conversation.sessions) >= 20
        assert 400 <= len(conversation.turns()) <= 600
        assert len(set(conversation.speakers)) == 2
        assert {turn.speaker for turn in conversation.turns()} == set(conversation.speakers)


def test_fewer_conversations_are_a_prefix_of_the_default(corpus: list[Conversation]) -> None:
    assert generate(conversations=3) == corpus[:3]


def test_turn_ids_are_unique_and_name_their_place(corpus: list[Conversation]) -> None:
    ids = [turn.id for conversation in corpus for turn in conversation.turns()]
    assert len(ids) == len(set(ids))
    for conversation in corpus:
        for session in conversation.sessions:
            for index, turn in enumerate(session.turns):
                assert turn.index == index and turn.session == session.index
                assert turn.id == f"{conversation.key}:s{session.index}:t{index}"


def test_sessions_are_dated_and_time_moves_forward(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        turns = conversation.turns()
        assert all(turn.occurred_at.tzinfo is not None for turn in turns)
        assert all(a.occurred_at < b.occurred_at for a, b in zip(turns, turns[1:], strict=False))
        starts = [session.started_at for session in conversation.sessions]
        assert all(session.turns[0].occurred_at == session.started_at
                   for session in conversation.sessions)
        assert [s.index for s in conversation.sessions] == list(range(1, len(starts) + 1))
        assert 180 <= (starts[-1] - starts[0]).days <= 430
        assert {start.year for start in starts} <= {2023, 2024}


def test_turns_read_like_chat(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        lengths = [len(turn.text) for turn in conversation.turns()]
        assert all(3 <= length <= 300 for length in lengths)
        assert sum(30 <= length <= 250 for length in lengths) >= 0.65 * len(lengths)
        for turn in conversation.turns():
            assert not re.search(r"[{}#]|  |\s[.,!?]", turn.text), turn.text
    german = " ".join(turn.text for c in corpus if c.lang == "de" for turn in c.turns())
    assert re.search(r"[äöüß]", german)


def test_every_evidence_turn_exists(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        texts = turn_texts(conversation)
        for question in conversation.questions:
            assert question.evidence and all(turn in texts for turn in question.evidence)
            assert question.conversation == conversation.key
            assert question.answer and not re.search(r"[{}]", question.text + question.answer)


def test_every_category_in_every_conversation(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        counts = Counter(question.category for question in conversation.questions)
        total = len(conversation.questions)
        assert 45 <= total <= 70
        assert set(counts) == set(CATEGORIES)
        assert counts["single_hop"] >= 0.25 * total
        for category in ("multi_hop", "temporal", "adversarial"):
            assert counts[category] >= 0.12 * total, category
        assert counts["open_domain"] >= 0.07 * total
        assert len({question.text for question in conversation.questions}) == total


def test_questions_name_the_person_asked_about(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        for question in conversation.questions:
            assert any(name in question.text for name in conversation.speakers), question.text


def test_multi_hop_evidence_spans_sessions(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        for question in conversation.questions:
            sessions = {turn_id.split(":")[1] for turn_id in question.evidence}
            if question.category == "multi_hop":
                assert len(question.evidence) >= 2 and len(sessions) >= 2, question.text


def test_adversarial_evidence_is_the_other_speaker(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        speakers = {turn.id: turn.speaker for turn in conversation.turns()}
        for question in conversation.questions:
            if question.category == "adversarial":
                asked = [name for name in conversation.speakers if name in question.text]
                assert all(speakers[turn] not in asked for turn in question.evidence)


def test_single_hop_evidence_states_the_answer(corpus: list[Conversation]) -> None:
    """By construction the answer's key word is in the evidence turn (German compounds
    count by their stem: "Laufen" in "Lauftreff"); yes/no answers have none."""
    for conversation in corpus:
        texts = turn_texts(conversation)
        for question in conversation.questions:
            if question.category != "single_hop" or re.match(r"(No|Nein)\b", question.answer):
                continue
            evidence = " ".join(texts[turn] for turn in question.evidence).lower()
            key_words = {word for word in re.findall(r"[a-zäöüß0-9]+", question.answer.lower())
                         if len(word) > 2} - words(question.text)
            assert any(word[:4] in evidence for word in key_words), (question, evidence)


def test_questions_paraphrase_their_evidence(corpus: list[Conversation]) -> None:
    """On average a question shares at most half of its content words with its evidence (in
    fact far fewer: names and places, as real users ask)."""
    for conversation in corpus:
        texts = turn_texts(conversation)
        shares = []
        for question in conversation.questions:
            asked = words(question.text)
            said = set().union(*(words(texts[turn]) for turn in question.evidence))
            shares.append(len(asked & said) / len(asked))
        assert mean(shares) <= 0.35, conversation.key


def test_deterministic_and_seeded(corpus: list[Conversation]) -> None:
    assert generate() == corpus
    other = generate(seed=15, conversations=2)
    assert other[0] != corpus[0] and other[1] != corpus[1]
    assert other[0].turns() != corpus[0].turns()


def test_same_corpus_in_another_process(corpus: list[Conversation]) -> None:
    """Nothing depends on str hashing or set order: a process with another hash seed
    generates the same corpus."""
    script = ("import hashlib; "
              "from memory_platform.features.benchmarks.conversations.generate import "
              "generate; print(hashlib.sha256(repr(generate()).encode()).hexdigest())")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert done.stdout.strip() == hashlib.sha256(repr(corpus).encode()).hexdigest()


# The default corpus as generated when the word banks were Python modules; moving them to
# banks/*.json kept it byte for byte. A deliberate change to a bank or to the generator
# changes this digest: update it then, with the change.
DEFAULT_CORPUS_SHA256 = "689ba62b1bd50e0a9306388bbc350ec75fefe04b79c18f9488b2c1615509153b"


def test_the_default_corpus_is_pinned(corpus: list[Conversation]) -> None:
    assert hashlib.sha256(repr(corpus).encode()).hexdigest() == DEFAULT_CORPUS_SHA256


def test_the_word_banks_ship_with_the_package() -> None:
    """Every data file of the package is named by pyproject's package-data, so an installed
    wheel has the banks (and the retrieval fixtures) the generator and the runner read."""
    import tomllib
    from fnmatch import fnmatch
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["memory_platform"]
    package = root / "memory_platform"
    data = [path.relative_to(package).as_posix() for path in package.rglob("*")
            if path.is_file() and path.suffix in (".json", ".typed")]
    assert "features/benchmarks/conversations/banks/english.json" in data
    assert "features/benchmarks/conversations/banks/german.json" in data
    assert [name for name in data if not any(fnmatch(name, glob) for glob in patterns)] == []


@pytest.mark.parametrize("lang", [ENGLISH, GERMAN], ids=["en", "de"])
def test_phrasings_are_well_formed(lang: Language) -> None:
    """Every line names who speaks; every kind that temporal questions ask about is told with
    a date in every variant; both languages cover the same kinds."""
    banks = [lang.scripts, lang.callbacks, lang.topics, lang.hints, lang.openers, lang.closers]
    scripts = [script for bank in banks for variants in bank.values() for script in variants]
    scripts += lang.filler
    for script in scripts:
        assert all(line[:3] in ("T: ", "L: ") for line in script), script
    for kind in lang.events:
        for script in lang.scripts[kind]:
            tags = {tag for line in script for tag in line.partition(" #")[2].split(",")}
            assert "when" in tags, (kind, script)
    assert set(ENGLISH.scripts) == set(GERMAN.scripts)
    assert set(ENGLISH.values) == set(GERMAN.values)
    assert set(ENGLISH.multi_hop) == set(GERMAN.multi_hop)
