"""``extractive``: a deterministic, offline baseline maintenance model. It only copies.

What it does: it splits every input row (``JsonRequest.inputs``) into sentences and keeps
the sentences whose English or German cue words mark a durable statement:

- preference: prefers, would rather, likes / bevorzugt, lieber, möchte, mag
- decision: decided, agreed, we will use / beschlossen, entschieden, vereinbart, wir nehmen
- constraint: must, never, always, required / muss, darf nicht, nie, immer, stets
- procedure: first ... then, steps / zuerst ... dann, Schritt(e)
- fact: is/are/has/uses / ist/sind/hat/nutzt together with a number or a named entity

It skips questions, greetings, very short and very long sentences, sentences too thin to
ground anything (``grounding.informative_excerpt``: the validator's minimum), sentences with
transient cues (today, right now, currently, working on / heute, gerade, jetzt, momentan)
and duplicates (a repeated sentence becomes extra evidence instead). Every assertion is the
sentence itself, cites its MEMORY_ID and carries the sentence (cut at a word boundary to
the contract's excerpt limit) as a verbatim excerpt; relation ``derives``, not time-bounded,
not transient, confidence 0.70-0.85 by cue strength. Candidates are ranked by confidence,
then spread over the inputs, then input order, and cut to the contract caps. With at least
three assertions it drafts one Wiki page listing them as Markdown bullets.

What it does not do, honestly: it understands nothing. It misses every paraphrase,
implication, pronoun resolution, negation scope and anything stated across two sentences;
its cue lists produce false positives (a "must" in a hypothetical) and misses (a decision
without a cue word); its "named entity" test is capitalisation and digits. It exists so the
whole Dreaming pipeline runs offline and reproducibly (dev profile, tests, demos). It is
only ever used when configured by its name, ``extractive``; it is never a fallback for a
failed or unavailable model.
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memory_platform.features.dreaming.contract import (
    EXCERPT_MAX_CHARS,
    SCHEMA_VERSION,
    TITLE_MAX_CHARS,
    WIKI_BODY_MAX_CHARS,
)
from memory_platform.features.dreaming.grounding import informative_excerpt
from memory_platform.foundation.language import (
    NAME_STOPWORDS,
    cut_at_word,
    is_german,
    split_sentences,
)
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, ModelError
from memory_platform.shared.llm.selection import OFFLINE_MODEL

NAME = OFFLINE_MODEL
MIN_SENTENCE_CHARS = 20
MIN_SENTENCE_WORDS = 4
MAX_SENTENCE_CHARS = 400
MIN_WIKI_ASSERTIONS = 3
DEFAULT_SLUG = "dream-notes"

_I = re.IGNORECASE


def _cue(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", _I)


class _FirstThen:
    """"first ... then" within one line, found in linear time: the earliest first-cue of a
    line either has a then-cue after it or no later one has (a lazy ``first.*?then`` regex
    rescans the rest of the text from every first-cue)."""

    _FIRST = _cue(r"first|zuerst|erst|zunächst")
    _THEN = _cue(r"then|dann|danach|anschließend|afterwards|next")

    def search(self, text: str) -> re.Match[str] | None:
        offset = 0
        for line in text.split("\n"):
            first = self._FIRST.search(line)
            if first is not None and self._THEN.search(line, first.end()):
                return self._FIRST.search(text, offset + first.start())
            offset += len(line) + 1
        return None


# (type, confidence, pattern): stronger cues first within a type.
_CUES: list[tuple[str, float, re.Pattern[str] | _FirstThen]] = [
    ("decision", 0.85, _cue(r"decided|have decided|agreed|beschlossen|entschieden|vereinbart|"
                            r"festgelegt|chose|have chosen")),
    ("decision", 0.75, _cue(r"wir nehmen|we will use|we'll use|we go with|we are going with|"
                            r"we're going with|going forward|ab sofort")),
    ("procedure", 0.8, _FirstThen()),
    ("procedure", 0.7, _cue(r"steps?|step-by-step|schritte?|schritt für schritt")),
    ("constraint", 0.85, _cue(r"must not|must never|mustn't|never|darf nicht|dürfen nicht|"
                              r"darf kein\w*|dürfen kein\w*|niemals|nie|verboten|forbidden|"
                              r"prohibited")),
    ("constraint", 0.8, _cue(r"must|muss|müssen|required|erforderlich|verpflichtend|mandatory|"
                             r"has to|have to")),
    ("constraint", 0.75, _cue(r"always|immer|stets|ausschließlich|only ever")),
    ("preference", 0.8, _cue(r"prefers?|preferred|would rather|bevorzugt|bevorzuge|"
                             r"bevorzugen|lieber")),
    ("preference", 0.7, _cue(r"likes|i like|we like|mag|mögen|möchte|möchten|wünscht|"
                             r"wants")),
]
_TYPE_ORDER = {"decision": 0, "procedure": 1, "constraint": 2, "preference": 3, "fact": 4}
_COPULA = _cue(r"is|are|was|were|has|have|uses|runs on|ist|sind|war|waren|hat|haben|nutzt|"
               r"verwendet|läuft auf|liegt")
FACT_CONFIDENCE = 0.7

_TRANSIENT = _cue(r"today|tonight|tomorrow|yesterday|right now|at the moment|currently|"
                  r"for now|this morning|this afternoon|this week|working on|heute|heut|"
                  r"morgen|gestern|gerade|jetzt|momentan|im moment|zurzeit|derzeit|"
                  r"diese woche|vorhin|arbeite an|arbeiten an")
_GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|thanks|thank you|danke|vielen dank|hallo|moin|servus|"
    r"guten (?:morgen|tag|abend)|good (?:morning|afternoon|evening)|bye|tschüss|ciao|"
    r"cheers|ok|okay|sure|klar)(?![\w-])", _I)
_QUESTION_END = re.compile(r"\?[\"'»“”)\]]*$")
_SECRETISH = re.compile(r"sk-[A-Za-z0-9_-]{8,}|(?:password|passwort|api[ _-]?key|token)\s*[:=]",
                        _I)
_WORD = re.compile(r"[^\W_][\w.+#/-]*")
_CUE_WORDS = frozenset("first then next zuerst erst zunächst dann danach anschließend "
                       "always never immer nie niemals stets ab sofort".split())
_ARTICLES = frozenset("der die das den dem des ein eine einen einem einer eines kein keine "
                      "keinen keinem keiner the a an".split())


@dataclass
class _Candidate:
    sentence: str
    memory_id: str
    type: str
    confidence: float
    subject: str | None
    predicate: str | None
    input_index: int
    sentence_index: int
    ordinal: int = 0  # rank of this candidate among those of its memory
    evidence: list[tuple[str, str]] = field(default_factory=list)


def _entities(sentence: str) -> list[tuple[str, int]]:
    """Named-entity guesses with their offsets: digits, ACRONYMS, CamelCase, capitalised
    non-stopwords (in German only when no article precedes them, since every German noun
    is capitalised)."""
    matches = list(_WORD.finditer(sentence))
    tokens = [m.group().rstrip(".") for m in matches]
    german = is_german(tokens)
    found: list[tuple[str, int]] = []
    run: list[str] = []
    run_start = 0
    for index, token in enumerate(tokens):
        previous = tokens[index - 1].lower() if index else ""
        lower = token.lower()
        named = bool(token) and lower not in _CUE_WORDS and (
            any(c.isdigit() for c in token)
            or (len(token) >= 2 and token.isupper())
            or any(c.isupper() for c in token[1:])
            or (token[0].isupper() and lower not in NAME_STOPWORDS
                and not (german and previous in _ARTICLES))
        )
        if named:
            if not run:
                run_start = matches[index].start()
            run.append(token)
        elif run:
            found.append((" ".join(run), run_start))
            run = []
    if run:
        found.append((" ".join(run), run_start))
    return found


def classify(sentence: str) -> tuple[str, float, str | None, int] | None:
    """(type, confidence, cue, cue offset) of a sentence, or None. No filtering here."""
    best: tuple[str, float, str | None, int] | None = None
    for kind, confidence, pattern in _CUES:
        match = pattern.search(sentence)
        if match is None:
            continue
        cue = match.group().lower() if kind != "procedure" or confidence < 0.8 else None
        if best is None or (confidence, -_TYPE_ORDER[kind]) > (best[1], -_TYPE_ORDER[best[0]]):
            best = (kind, confidence, cue, match.start())
    if best is not None:
        return best
    copula = _COPULA.search(sentence)
    if copula and (re.search(r"\d", sentence) or _entities(sentence)):
        return ("fact", FACT_CONFIDENCE, copula.group().lower(), copula.start())
    return None


def subject_of(sentence: str, cue_offset: int) -> str | None:
    """The first named entity before the cue (the statement's subject), else None."""
    for entity, offset in _entities(sentence):
        if offset < cue_offset:
            return entity[:TITLE_MAX_CHARS]
    return None


def skip_reason(sentence: str) -> str | None:
    """Why a sentence is not a durable-statement candidate (None: keep it)."""
    words = _WORD.findall(sentence)
    if len(sentence) < MIN_SENTENCE_CHARS or len(words) < MIN_SENTENCE_WORDS:
        return "too_short"
    if len(sentence) > MAX_SENTENCE_CHARS:
        return "too_long"
    if _QUESTION_END.search(sentence):
        return "question"
    if _GREETING.match(sentence):
        return "greeting"
    if _TRANSIENT.search(sentence):
        return "transient"
    if _SECRETISH.search(sentence):
        return "secret_like"
    return None


def _normal(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.casefold()))


def slugify(text: str) -> str:
    text = text.casefold()
    for umlaut, ascii_ in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("ß", "ss")):
        text = text.replace(umlaut, ascii_)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:80].rstrip("-")
    return slug or DEFAULT_SLUG


class ExtractiveModel:
    """See the module docstring. ``complete_json`` needs ``request.inputs``."""

    name = NAME

    def __init__(self, settings: Settings) -> None:
        self._settings = settings

    def __repr__(self) -> str:
        return "ExtractiveModel()"

    def complete_json(self, request: JsonRequest) -> Completion:
        started = time.monotonic()
        if request.inputs is None:
            raise ModelError("unavailable", "the extractive model needs request.inputs "
                             "(the partition rows); it cannot read a prompt",
                             diagnostic={"model": NAME})
        payload, stats = self.propose(request.inputs, topic=request.topic)
        text = json.dumps(payload, ensure_ascii=False)
        return Completion(model=NAME, text=text, data=payload, finish_reason="stop",
                          usage=stats, duration_seconds=time.monotonic() - started, events=0,
                          effective_model=NAME, diagnostics={"skipped": stats["skipped"]})

    # --- the work -----------------------------------------------------------------------
    def propose(self, inputs: list[dict[str, Any]], *,
                topic: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        settings = self._settings
        skipped: Counter[str] = Counter()
        by_key: dict[str, _Candidate] = {}
        per_memory: Counter[str] = Counter()
        sentences_seen = 0
        for input_index, row in enumerate(inputs):
            content = row.get("content")
            memory_id = row.get("memoryId")
            if not isinstance(content, str) or memory_id is None:
                skipped["no_content"] += 1
                continue
            memory_id = str(memory_id)
            for sentence_index, sentence in enumerate(split_sentences(content)):
                sentences_seen += 1
                reason = skip_reason(sentence)
                if reason is None and not informative_excerpt(
                        cut_at_word(sentence, EXCERPT_MAX_CHARS), settings):
                    reason = "uninformative"
                kind = None if reason else classify(sentence)
                if reason is None and kind is None:
                    reason = "no_cue"
                if reason is not None:
                    skipped[reason] += 1
                    continue
                assert kind is not None
                key = _normal(sentence)
                known = by_key.get(key)
                if known is not None:
                    skipped["duplicate"] += 1
                    cited = {memory for memory, _ in known.evidence}
                    if (memory_id not in cited and len(known.evidence)
                            < settings.dream_max_evidence_per_assertion):
                        known.evidence.append((memory_id, sentence))
                    continue
                by_key[key] = _Candidate(
                    sentence=sentence, memory_id=memory_id, type=kind[0],
                    confidence=kind[1], subject=subject_of(sentence, kind[3]),
                    predicate=kind[2][:TITLE_MAX_CHARS] if kind[2] else None,
                    input_index=input_index, sentence_index=sentence_index,
                    ordinal=per_memory[memory_id], evidence=[(memory_id, sentence)])
                per_memory[memory_id] += 1
        candidates = sorted(by_key.values(), key=lambda c: (
            -c.confidence, c.ordinal, c.input_index, c.sentence_index))
        chosen = candidates[: settings.dream_max_assertions]
        if len(candidates) > len(chosen):
            skipped["over_cap"] += len(candidates) - len(chosen)
        assertions = [self._assertion(c) for c in chosen]
        wiki = self._wiki(assertions, chosen, inputs, topic)
        payload = {"schemaVersion": SCHEMA_VERSION, "assertions": assertions,
                   "wikiProposals": wiki}
        stats = {"inputs": len(inputs), "sentences": sentences_seen,
                 "candidates": len(candidates), "assertions": len(assertions),
                 "skipped": dict(sorted(skipped.items()))}
        return payload, stats

    def _assertion(self, candidate: _Candidate) -> dict[str, Any]:
        return {
            "text": cut_at_word(candidate.sentence, self._settings.dream_max_field_chars),
            "type": candidate.type,
            "confidence": candidate.confidence,
            "subject": candidate.subject,
            "predicate": candidate.predicate,
            "evidence": [{"memoryId": memory, "excerpt": cut_at_word(sentence, EXCERPT_MAX_CHARS)}
                         for memory, sentence in candidate.evidence],
            "relation": "derives",
            "timeBounded": False,
            "validUntil": None,
            "transient": False,
        }

    def _wiki(self, assertions: list[dict[str, Any]], chosen: list[_Candidate],
              inputs: list[dict[str, Any]], topic: str | None) -> list[dict[str, Any]]:
        settings = self._settings
        if settings.dream_max_wiki_proposals < 1 or len(assertions) < MIN_WIKI_ASSERTIONS:
            return []
        if not topic:
            topics = Counter(str(row["topic"]) for row in inputs
                             if isinstance(row.get("topic"), str) and row["topic"].strip())
            subjects = Counter(c.subject for c in chosen if c.subject)
            common = topics.most_common(1) or subjects.most_common(1)
            topic = common[0][0] if common else None
        title = cut_at_word(f"Notes: {topic.strip()}" if topic else "Dream notes",
                            TITLE_MAX_CHARS)
        slug = slugify(topic)[:TITLE_MAX_CHARS] if topic else DEFAULT_SLUG
        body = f"# {title}\n\n"
        refs: list[int] = []
        for index, assertion in enumerate(assertions):
            cited = ", ".join(e["memoryId"] for e in assertion["evidence"])
            bullet = f"- {assertion['text']} (assertion {index}; source {cited})\n"
            if len(body) + len(bullet) > WIKI_BODY_MAX_CHARS:
                break
            body += bullet
            refs.append(index)
        if not refs:
            return []
        evidence: list[dict[str, Any]] = []
        for index in refs:
            first = assertions[index]["evidence"][0]
            if len(evidence) < settings.dream_max_evidence_per_assertion and first not in evidence:
                evidence.append(dict(first))
        return [{"title": title, "slug": slug, "bodyMarkdown": body.rstrip() + "\n",
                 "assertionRefs": refs, "evidence": evidence}]
