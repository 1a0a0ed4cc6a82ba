"""``extractive`` for the graph: a deterministic, offline extractor. It only copies.

:func:`extract` answers a batch in the contract's shape (contract.py), so its answer goes
through the same strict validation as a provider's. What it does:

- **Entities from stable subject refs**: ``mandantId`` -> mandant, ``documentId`` ->
  document, ``taskId`` -> task, ``moduleSlug`` -> module, ``routePath`` -> route,
  ``channelThreadKey``/``groupRoomId`` -> channel, ``userId`` -> user. The ref is the linked
  record (type = the key, id = the value) and the entity's subject ref. The label is the
  value, unless a name found in the text equals the value or contains it as a word ("Mandant
  Nord" for ``mandantId: nord``): then that verbatim name is the label and the value an alias.
- **Entities from names written in the text** (always the exact substring):
  runs of capitalised words ("Mandant Nord", "Steuerbüro Weber GmbH"), ACRONYMS ("VAT"),
  CamelCase and words with digits ("PostgreSQL", "T-1234"); a number may extend a run
  ("PostgreSQL 18"). Function words (articles, pronouns, cue words) never start a name.
  A single capitalised word is a name in English unless it starts the sentence (English
  capitalises only names mid-sentence); at a sentence start only when a person's verb
  follows ("Ada prefers ...") or it is a possessive ("Ada's team"). German capitalises every
  noun, so a single capitalised German word is a name only when a person's verb follows
  ("Anna bevorzugt ..."), or directly after a preposition without an article ("mit Anna",
  "bei Siemens"), and never with a suffix that only common nouns have (-ung, -heit, -keit,
  -schaft, -tion, ...).
  The type is guessed from a leading title word (Mandant/Kunde/Client -> mandant,
  Projekt/Project -> project, Herr/Frau/Mr/Dr -> person, ...), a legal-form suffix (GmbH, AG,
  Inc -> organization), or a person's verb (-> person); else ``other``.
- **One claim per assertion**: the subject is the assertion's first entity (record refs
  first, then names in text order, then the author and the channel); the predicate comes from
  the assertion type (``states``, ``prefers``, ``decided``, ``must``, ``procedure``, ...); the
  object is the next entity named in the text, else the literal value is the text after the
  subject's name (cut at a word boundary to the contract's cap). The assertion text is the
  source's.
- **Edges** from the claim's subject to every other entity of the assertion: a cue verb
  between the two names (and no third name between them) picks the relation
  (``works_with``, ``uses``, ``belongs_to``, ``reports_to``, ``depends_on``, ``manages``,
  ``owns``), the author of a shared row not named in the text is ``stated_by``, its channel
  ``discussed_in``, anything else ``related_to``.

Every item cites the memory ids of the sources it was found in (at most the contract's 8);
the same entity across sources of the batch is one entity. With ``settings`` the answer is
cut to the graph caps (later entities, and the claims and edges that need them, are left out).

What it does not do, honestly: it understands nothing. Capitalisation is its only sense of a
name: it misses lower-case names ("pgvector"), takes a capitalised common noun after a
German preposition for a name ("mit Kunden"), cannot tell a person from a product, resolves
no pronoun, and its "object" is the next name in the sentence whether or not the statement
is about it. It exists so graph extraction runs offline and reproducibly (dev profile,
tests, demos); it is used only when ``extractive`` is the configured model, never as a
fallback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memory_platform.features.graph.contract import (
    ALIASES_MAX,
    ASSERTION_TEXT_MAX_CHARS,
    ENTITY_REF_KEYS,
    LABEL_MAX_CHARS,
    REF_VALUE_MAX_CHARS,
    SCHEMA_VERSION,
    SOURCE_IDS_MAX,
    VALUE_MAX_CHARS,
)
from memory_platform.features.graph.types import GraphBatch, GraphSource
from memory_platform.foundation.language import NAME_STOPWORDS, cut_at_word, is_german
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import normalise

# Subject-ref key -> entity type; record keys name what a statement is about, context keys
# (author, conversation) only where it was said.
RECORD_REFS = (("mandantId", "mandant"), ("documentId", "document"), ("taskId", "task"),
               ("moduleSlug", "module"), ("routePath", "route"))
CONTEXT_REFS = (("userId", "user"), ("channelThreadKey", "channel"), ("groupRoomId", "channel"))

PREDICATES = {"fact": "states", "preference": "prefers", "decision": "decided",
              "constraint": "must", "procedure": "procedure", "correction": "corrects",
              "observation": "observed"}
FALLBACK_PREDICATE = "states"
RELATED = "related_to"
STATED_BY = "stated_by"
DISCUSSED_IN = "discussed_in"
RELATED_CONFIDENCE_CAP = 0.6

_I = re.IGNORECASE
# Words joined by one inner hyphen, dot, slash, plus or hash ("T-1234", "v2.1"); an
# apostrophe ends a word, so "Ada's" is the name "Ada".
_TOKEN = re.compile(r"[^\W_]+(?:[-./+#][^\W_]+)*")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th|te|ten|ter|tes)", _I)
_SENTENCE_MARKS = frozenset(".!?:;…\n")
_TITLES = frozenset("dr mr mrs ms prof st".split())
_RELATIONS = [
    ("works_with", re.compile(r"\b(?:works? with|worked with|arbeite[nt]? mit|"
                              r"zusammenarbeit\w*)\b", _I)),
    ("reports_to", re.compile(r"\b(?:reports? to|berichte[nt]? an)\b", _I)),
    ("belongs_to", re.compile(r"\b(?:belongs? to|part of|gehör\w* zu|teil von)\b", _I)),
    ("depends_on", re.compile(r"\b(?:depends? on|hängt von|abhängig von)\b", _I)),
    ("manages", re.compile(r"\b(?:manages?|leads?|betreu\w*|verwalte\w*|leite[nt]?)\b", _I)),
    ("owns", re.compile(r"\b(?:owns?|besitz\w*|gehört)\b", _I)),
    ("uses", re.compile(r"\b(?:uses?|using|nutz\w*|verwende\w*|setz\w* \w+ ein)\b", _I)),
]
_PERSON_VERBS = frozenset("""
prefers preferred likes wants decided agreed said says asked works manages leads owns
bevorzugt bevorzugte möchte mag mochte wünscht entschied entscheidet sagt sagte arbeitet
betreut leitet
""".split())
_GERMAN_PREPOSITIONS = frozenset("für mit von bei an auf nach über unter ohne gegen durch "
                                 "aus seit laut gemäß wegen trotz".split())
_NOUN_SUFFIXES = ("ung", "ungen", "heit", "heiten", "keit", "keiten", "schaft", "schaften",
                  "tion", "tionen", "ität", "itäten", "nis", "nisse", "tum", "ment", "chen",
                  "lein", "ismus", "ik", "enz", "anz", "ur")
_TITLE_TYPES = {
    "mandant": "mandant", "mandantin": "mandant", "kunde": "mandant", "kundin": "mandant",
    "client": "mandant", "customer": "mandant", "projekt": "project", "project": "project",
    "dokument": "document", "document": "document", "modul": "module", "module": "module",
    "herr": "person", "frau": "person", "mr": "person", "mrs": "person", "ms": "person",
    "dr": "person", "prof": "person", "team": "organization", "firma": "organization",
    "company": "organization", "aufgabe": "task", "task": "task", "ticket": "task",
}
_LEGAL_FORMS = frozenset("gmbh ag kg ohg ug se inc ltd llc plc corp co".split())


@dataclass(frozen=True)
class Name:
    """A name written in a text: its exact substring, offsets and guessed type."""

    label: str
    start: int
    end: int
    entity_type: str


def _strong(token: str) -> bool:
    """An ACRONYM, CamelCase ("PostgreSQL", "GmbH"; not "E-Mail") or a word that starts
    with a letter and holds digits ("T-1234", "v2"; not "10th"): a name in any language."""
    if not token[0].isalpha() or token.casefold() in NAME_STOPWORDS:
        return False
    return (any(c.isdigit() for c in token) and not _ORDINAL.fullmatch(token)) \
        or (len(token) >= 2 and token.isupper()) \
        or any(a.islower() and b.isupper() for a, b in zip(token, token[1:], strict=False))


def _capitalised(token: str) -> bool:
    return token[0].isupper() and token.casefold() not in NAME_STOPWORDS


def _type_of(tokens: list[str], person_verb: bool) -> str:
    first, last = tokens[0].casefold().rstrip("."), tokens[-1].casefold().rstrip(".")
    if len(tokens) > 1 and first in _TITLE_TYPES:
        return _TITLE_TYPES[first]
    if len(tokens) > 1 and last in _LEGAL_FORMS:
        return "organization"
    return "person" if person_verb else "other"


def find_names(text: str) -> list[Name]:
    """The names written in ``text`` (see the module docstring), in text order."""
    matches = list(_TOKEN.finditer(text))
    tokens = [m.group() for m in matches]
    german = is_german(tokens)
    names: list[Name] = []
    i = 0
    while i < len(matches):
        token = tokens[i]
        if not (_strong(token) or _capitalised(token)):
            i += 1
            continue
        j = i + 1   # extend the run over whitespace-separated names (and numbers)
        while j < len(matches) and _joins(text, matches[j - 1], matches[j]) \
                and (_strong(tokens[j]) or _capitalised(tokens[j]) or tokens[j].isdigit()):
            j += 1
        run = tokens[i:j]
        sentence_start = i == 0 or (
            any(c in _SENTENCE_MARKS for c in text[matches[i - 1].end(): matches[i].start()])
            and tokens[i - 1].casefold() not in _TITLES)
        following = tokens[j].casefold() if j < len(tokens) else ""
        previous = tokens[i - 1].casefold() if i and not sentence_start else ""
        person_verb = len(run) == 1 and following in _PERSON_VERBS
        possessive = text[matches[j - 1].end(): matches[j - 1].end() + 2] in ("'s", "’s")
        if len(run) > 1 or any(_strong(t) for t in run):
            keep = True
        elif german:
            keep = person_verb or (previous in _GERMAN_PREPOSITIONS
                                   and not token.casefold().endswith(_NOUN_SUFFIXES))
        else:
            keep = person_verb or possessive or not sentence_start
        label = text[matches[i].start(): matches[j - 1].end()]
        if keep and len(label) <= LABEL_MAX_CHARS:
            names.append(Name(label, matches[i].start(), matches[j - 1].end(),
                              _type_of(run, person_verb)))
        i = j
    return names


def _joins(text: str, previous: re.Match[str], following: re.Match[str]) -> bool:
    """Whether ``following`` continues the name that ``previous`` ends: only spaces between
    them, or the dot of a title ("Dr. Schmidt")."""
    gap = text[previous.end(): following.start()]
    if previous.group().casefold() in _TITLES and gap.startswith("."):
        gap = gap[1:]
    return bool(gap) and not gap.strip(" \t")


# --- the answer under construction -----------------------------------------------------------


@dataclass
class _Entity:
    ref: str
    label: str
    entity_type: str
    aliases: list[str] = field(default_factory=list)
    link: tuple[str, str] | None = None
    cites: list[str] = field(default_factory=list)

    def cite(self, memory_id: str) -> None:
        if memory_id not in self.cites and len(self.cites) < SOURCE_IDS_MAX:
            self.cites.append(memory_id)

    def as_json(self) -> dict[str, Any]:
        refs: dict[str, str | None] = dict.fromkeys(ENTITY_REF_KEYS)
        if self.link is not None:
            refs[self.link[0]] = self.link[1]
        return {"ref": self.ref, "label": self.label, "entityType": self.entity_type,
                "aliases": self.aliases[:ALIASES_MAX],
                "linkedRecordType": self.link[0] if self.link else None,
                "linkedRecordId": self.link[1] if self.link else None,
                "subjectRefs": refs, "sourceMemoryIds": list(self.cites)}


@dataclass
class _Mention:
    """An entity as one assertion has it: where its name is written (None: not in text)."""

    entity: _Entity
    start: int | None
    end: int | None
    context_key: str | None = None     # userId / channel key of a ref not named in the text


class _Answer:
    def __init__(self, caps: tuple[int, int, int] | None) -> None:
        self.caps = caps
        self.entities: list[_Entity] = []
        self.by_key: dict[tuple[str, ...], _Entity] = {}
        self.claims: list[dict[str, Any]] = []
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}

    def _room(self, index: int, used: int) -> bool:
        return self.caps is None or used < self.caps[index]

    def entity(self, keys: list[tuple[str, ...]], label: str, entity_type: str,
               link: tuple[str, str] | None = None) -> _Entity | None:
        """The entity known under any of ``keys``, else a new one (None: over the cap)."""
        for key in keys:
            if key in self.by_key:
                found = self.by_key[key]
                for other in keys:
                    self.by_key.setdefault(other, found)
                return found
        if not self._room(0, len(self.entities)):
            return None
        made = _Entity(f"e{len(self.entities) + 1}", label, entity_type, link=link)
        self.entities.append(made)
        for key in keys:
            self.by_key[key] = made
        return made

    def claim(self, item: dict[str, Any]) -> None:
        if self._room(1, len(self.claims)):
            self.claims.append(item)

    def edge(self, source: str, target: str, relation: str, confidence: float,
             memory_id: str) -> None:
        key = (source, target, relation)
        known = self.edges.get(key)
        if known is None:
            if not self._room(2, len(self.edges)):
                return
            known = self.edges[key] = {"source": source, "target": target,
                                       "relationType": relation, "confidence": confidence,
                                       "sourceMemoryIds": []}
        known["confidence"] = max(known["confidence"], confidence)
        if memory_id not in known["sourceMemoryIds"] \
                and len(known["sourceMemoryIds"]) < SOURCE_IDS_MAX:
            known["sourceMemoryIds"].append(memory_id)

    def as_json(self) -> dict[str, Any]:
        return {"schemaVersion": SCHEMA_VERSION,
                "entities": [e.as_json() for e in self.entities],
                "claims": self.claims, "edges": list(self.edges.values())}


def _name_key(label: str) -> tuple[str, ...]:
    return ("name", normalise(label))


def _matching_name(value: str, names: list[Name]) -> Name | None:
    """The first name that is ``value`` or holds it as a word ("Mandant Nord" for "nord")."""
    wanted = normalise(value)
    for name in names:
        label = normalise(name.label)
        if label == wanted or wanted in label.split(" "):
            return name
    return None


def _mentions(source: GraphSource, answer: _Answer) -> list[_Mention]:
    """The assertion's entities: record refs, then names in text order (a context ref named
    in the text takes its name's place), then unnamed context refs."""
    memory_id = str(source.memory_id)
    names = find_names(source.text)
    claimed: dict[int, _Mention] = {}      # name index -> the ref entity that took it
    records: list[_Mention] = []
    context: list[_Mention] = []
    for key, entity_type in (*RECORD_REFS, *CONTEXT_REFS):
        value = source.subject_refs.get(key)
        if not value or len(value) > REF_VALUE_MAX_CHARS:
            continue
        free = [n for i, n in enumerate(names) if i not in claimed]
        name = _matching_name(value, free)
        label = name.label if name is not None else value
        if len(label) > LABEL_MAX_CHARS:
            continue
        keys = [("ref", key, value)] + ([_name_key(name.label)] if name else [])
        entity = answer.entity(keys, label, entity_type, link=(key, value))
        if entity is None:
            continue
        if entity.link is None and len(entity.cites) < SOURCE_IDS_MAX:
            entity.link = (key, value)   # a name seen before now has its record
        if name is not None and entity.label == value and len(entity.cites) < SOURCE_IDS_MAX:
            entity.label = name.label    # the verbatim name beats the raw value
        if name is not None and normalise(value) != normalise(entity.label) \
                and value not in entity.aliases and len(value) <= LABEL_MAX_CHARS:
            entity.aliases.append(value)
        entity.cite(memory_id)
        if name is not None:
            mention = _Mention(entity, name.start, name.end)
            claimed[names.index(name)] = mention
            if key in dict(RECORD_REFS):
                records.append(mention)
        elif key in dict(RECORD_REFS):
            records.append(_Mention(entity, None, None))
        else:
            context.append(_Mention(entity, None, None, context_key=key))
    in_text: list[_Mention] = []
    for i, name in enumerate(names):
        if i in claimed:
            if claimed[i] not in records:
                in_text.append(claimed[i])
            continue
        entity = answer.entity([_name_key(name.label)], name.label, name.entity_type)
        if entity is not None:
            entity.cite(memory_id)
            in_text.append(_Mention(entity, name.start, name.end))
    out: list[_Mention] = []
    for mention in (*records, *in_text, *context):
        if all(m.entity is not mention.entity for m in out):
            out.append(mention)
    return out


def _relation(text: str, subject: _Mention, other: _Mention, named: list[_Mention]) -> str:
    """The relation of ``subject`` to ``other``: a cue verb counts only when it stands
    between the two names with no third name in between ("Anna arbeitet mit Steuerbüro
    Weber"), so a verb that joins two other names is not borrowed."""
    if other.context_key == "userId":
        return STATED_BY
    if other.context_key is not None:
        return DISCUSSED_IN
    if subject.start is None or subject.end is None or other.start is None \
            or other.end is None:
        return RELATED
    low, high = (subject.end, other.start) if subject.end <= other.start \
        else (other.end, subject.start)
    if any(m.start is not None and low <= m.start < high for m in named):
        return RELATED
    for relation, pattern in _RELATIONS:
        if pattern.search(text, low, high):
            return relation
    return RELATED


def _literal(text: str, subject: _Mention) -> str:
    rest = text[subject.end:] if subject.end is not None else text
    rest = rest.strip(" \t\n,;:-–")
    return cut_at_word(rest or text.strip(), VALUE_MAX_CHARS)


def _assertion(source: GraphSource, answer: _Answer) -> None:
    mentions = _mentions(source, answer)
    if not mentions:
        return
    memory_id = str(source.memory_id)
    confidence = round(min(max(source.confidence, 0.0), 1.0), 2)
    subject = mentions[0]
    named = [m for m in mentions[1:] if m.start is not None]
    obj = named[0] if named else None
    answer.claim({
        "subject": subject.entity.ref,
        "predicate": PREDICATES.get(source.assertion_type, FALLBACK_PREDICATE),
        "object": obj.entity.ref if obj else None,
        "value": None if obj else _literal(source.text, subject),
        "assertionText": cut_at_word(source.text, ASSERTION_TEXT_MAX_CHARS),
        "confidence": confidence,
        "sourceMemoryIds": [memory_id],
    })
    for other in mentions[1:]:
        relation = _relation(source.text, subject, other, mentions)
        weight = min(confidence, RELATED_CONFIDENCE_CAP) if relation == RELATED else confidence
        answer.edge(subject.entity.ref, other.entity.ref, relation, weight, memory_id)


def extract(batch: GraphBatch, settings: Settings | None = None) -> dict[str, Any]:
    """The deterministic answer for ``batch`` in the contract's shape (module docstring);
    with ``settings``, cut to ``graph_max_entities``/``claims``/``edges``."""
    caps = None if settings is None else (
        settings.graph_max_entities, settings.graph_max_claims, settings.graph_max_edges)
    answer = _Answer(caps)
    for source in batch.sources:
        _assertion(source, answer)
    return answer.as_json()
