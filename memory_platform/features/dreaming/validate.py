"""Strict validation of a model's Dream output against the contract (contract.py).

Two levels, both fail closed:

* **structural**: anything the JSON schema forbids (not an object, missing or unknown fields
  anywhere, wrong types, wrong ``schemaVersion``, enum values, count caps, field-size caps,
  patterns). The model did not follow the contract, so nothing of the output is trusted: the
  dream records the failure shape and no ledger row is written.
* **item level**: grounding problems of one assertion or wiki proposal (an id that is not an
  input of this partition, an excerpt that is not verbatim or too short to mean anything, a
  text its excerpts do not support, an ``updates`` that is neither an exact duplicate nor a
  high-confidence correction, a duplicate, a credential or an instruction aimed at the model
  in a text, excerpt or wiki body, a ``validUntil`` that is no date-time with an offset or
  has already passed; the text rules are in ``grounding``). That item is rejected with a
  reason code; the others stand on their own.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from memory_platform.features.dreaming import contract, grounding
from memory_platform.features.dreaming.inputs import DreamInput
from memory_platform.features.memories.validation import parse_occurred_at
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import find_secret as find_credential
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import normalise
from memory_platform.shared.ledger.assertions import identity_hash

MAX_PROBLEMS = 20

# Item-level reason codes.
INVALID_MEMORY_ID = "invalid_memory_id"
CITATION_OUTSIDE_PARTITION = "citation_outside_partition"
EXCERPT_NOT_VERBATIM = "excerpt_not_verbatim"
EXCERPT_EMPTY = "excerpt_empty"
EMPTY_TEXT = "empty_text"
UPDATES_NOT_ALLOWED = "updates_not_allowed"
DUPLICATE_ASSERTION = "duplicate_assertion"
CONTAINS_CREDENTIAL = "contains_credential"
WIKI_REF_INVALID = "wiki_ref_invalid"
WIKI_REF_REJECTED = "wiki_ref_rejected"
EXCERPT_UNINFORMATIVE = "excerpt_uninformative"
TEXT_NOT_SUPPORTED = "text_not_supported"
UNSAFE_INSTRUCTION = "unsafe_instruction"
INVALID_VALID_UNTIL = "invalid_valid_until"
ALREADY_ENDED = "already_ended"
ITEM_REASONS = (INVALID_MEMORY_ID, CITATION_OUTSIDE_PARTITION, EXCERPT_NOT_VERBATIM,
                EXCERPT_EMPTY, EMPTY_TEXT, UPDATES_NOT_ALLOWED, DUPLICATE_ASSERTION,
                CONTAINS_CREDENTIAL, WIKI_REF_INVALID, WIKI_REF_REJECTED,
                EXCERPT_UNINFORMATIVE, TEXT_NOT_SUPPORTED, UNSAFE_INSTRUCTION,
                INVALID_VALID_UNTIL, ALREADY_ENDED)


@dataclass(frozen=True)
class Evidence:
    memory_id: str
    excerpt: str


@dataclass(frozen=True)
class AcceptedAssertion:
    index: int
    text: str
    type: str
    confidence: float
    subject: str | None
    predicate: str | None
    evidence: tuple[Evidence, ...]
    relation: str
    time_bounded: bool
    transient: bool
    duplicate_of_input: bool = False   # 'updates' of an exact duplicate
    valid_until: datetime | None = None  # when it stops being true (the assertion's valid_to)

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "text": self.text, "type": self.type,
                "confidence": self.confidence, "subject": self.subject,
                "predicate": self.predicate, "relation": self.relation,
                "timeBounded": self.time_bounded, "transient": self.transient,
                "validUntil": self.valid_until.isoformat() if self.valid_until else None,
                "evidence": [{"memoryId": e.memory_id, "excerpt": e.excerpt}
                             for e in self.evidence]}


@dataclass(frozen=True)
class AcceptedWiki:
    index: int
    title: str
    slug: str
    body: str
    assertion_refs: tuple[int, ...]
    evidence: tuple[Evidence, ...]

    def as_json(self) -> dict[str, Any]:
        return {"index": self.index, "title": self.title, "slug": self.slug,
                "bodyMarkdown": self.body, "assertionRefs": list(self.assertion_refs),
                "evidence": [{"memoryId": e.memory_id, "excerpt": e.excerpt}
                             for e in self.evidence]}


@dataclass(frozen=True)
class Rejection:
    kind: str          # 'assertion' | 'wikiProposal'
    index: int
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Validation:
    failure: dict[str, Any] | None
    assertions: list[AcceptedAssertion] = field(default_factory=list)
    wiki: list[AcceptedWiki] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    proposed_assertions: int = 0
    proposed_wiki: int = 0

    @property
    def ok(self) -> bool:
        return self.failure is None

    def rejected_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for r in self.rejected:
            counts[r.reason] = counts.get(r.reason, 0) + 1
        return counts


# --- structural ----------------------------------------------------------------------------


class _Schema:
    """Collects every violation of the contract's JSON schema (the subset it uses)."""

    def __init__(self) -> None:
        self.problems: list[dict[str, Any]] = []

    def fail(self, code: str, path: str, message: str) -> None:
        self.problems.append({"code": code, "path": path or "$", "message": message})

    def check(self, value: Any, schema: dict[str, Any], path: str) -> None:
        types = schema.get("type")
        if types is not None and not _type_matches(value, types):
            self.fail("wrong_type", path, f"expected {types}, got {_type_name(value)}")
            return
        if "enum" in schema and value not in schema["enum"]:
            code = "schema_version_mismatch" if path == "schemaVersion" else "bad_enum"
            self.fail(code, path, f"{value!r} is not one of {schema['enum']}")
        if isinstance(value, dict):
            self._object(value, schema, path)
        elif isinstance(value, list):
            self._array(value, schema, path)
        elif isinstance(value, str):
            if "maxLength" in schema and len(value) > schema["maxLength"]:
                self.fail("too_long", path,
                          f"{len(value)} characters; the cap is {schema['maxLength']}")
            if "pattern" in schema:
                if not re.search(schema["pattern"], value):
                    self.fail("pattern_mismatch", path, f"does not match {schema['pattern']}")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if isinstance(value, float) and not math.isfinite(value):
                self.fail("out_of_range", path, "not a finite number")
            elif "minimum" in schema and value < schema["minimum"]:
                self.fail("out_of_range", path, f"below {schema['minimum']}")
            elif "maximum" in schema and value > schema["maximum"]:
                self.fail("out_of_range", path, f"above {schema['maximum']}")

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> None:
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                self.fail("missing_field", _join(path, name), "required field is missing")
        for name in value:
            if name not in properties:
                self.fail("unknown_field", _join(path, str(name)), "field is not in the contract")
        for name, sub in properties.items():
            if name in value:
                self.check(value[name], sub, _join(path, name))

    def _array(self, value: list[Any], schema: dict[str, Any], path: str) -> None:
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.fail("too_many_items", path,
                      f"{len(value)} items; the cap is {schema['maxItems']}")
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.fail("too_few_items", path, f"at least {schema['minItems']} items needed")
        items = schema.get("items")
        if items is not None:
            for i, item in enumerate(value[: schema.get("maxItems", len(value)) + 1]):
                self.check(item, items, f"{path}[{i}]")


_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_matches(value: Any, types: str | list[str]) -> bool:
    for name in [types] if isinstance(types, str) else types:
        if name == "integer":
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif name == "number":
            if isinstance(value, int | float) and not isinstance(value, bool):
                return True
        elif isinstance(value, _JSON_TYPES[name]):
            return True
    return False


def _type_name(value: Any) -> str:
    for name, kind in (("null", type(None)), ("boolean", bool), ("integer", int),
                       ("number", float), ("string", str), ("array", list), ("object", dict)):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def structural_problems(data: Any, settings: Settings) -> list[dict[str, Any]]:
    """Every contract violation of ``data`` (empty list: structurally valid)."""
    if data is None or data == {}:
        return [{"code": "empty_output", "path": "$", "message": "the model returned nothing"}]
    if not isinstance(data, dict):
        return [{"code": "not_an_object", "path": "$",
                 "message": f"expected one JSON object, got {_type_name(data)}"}]
    schema = _Schema()
    schema.check(data, contract.dream_schema(settings), "")
    return schema.problems


# --- item level ----------------------------------------------------------------------------


def _evidence(items: list[dict[str, str]], inputs: dict[str, DreamInput], settings: Settings
              ) -> tuple[tuple[Evidence, ...], tuple[str, dict[str, Any]] | None]:
    """The item's evidence, de-duplicated, or the first grounding problem."""
    out: list[Evidence] = []
    for i, item in enumerate(items):
        raw_id, excerpt = item["memoryId"].strip(), item["excerpt"].strip()
        try:
            memory_id = str(UUID(raw_id))
        except ValueError:
            return (), (INVALID_MEMORY_ID, {"evidence": i, "memoryId": raw_id[:64]})
        source = inputs.get(memory_id)
        if source is None:
            return (), (CITATION_OUTSIDE_PARTITION, {"evidence": i, "memoryId": memory_id})
        if not excerpt:
            return (), (EXCERPT_EMPTY, {"evidence": i, "memoryId": memory_id})
        if excerpt not in source.content:
            return (), (EXCERPT_NOT_VERBATIM, {"evidence": i, "memoryId": memory_id,
                                               "excerpt": excerpt[:80]})
        if not grounding.informative_excerpt(excerpt, settings):
            return (), (EXCERPT_UNINFORMATIVE, {
                "evidence": i, "memoryId": memory_id, "excerpt": excerpt[:80],
                "minChars": settings.dream_min_excerpt_chars,
                "minWords": settings.dream_min_excerpt_words})
        if find_credential(excerpt):
            return (), (CONTAINS_CREDENTIAL, {"evidence": i, "memoryId": memory_id,
                                              "kind": find_credential(excerpt)})
        if grounding.unsafe_instruction(excerpt):
            return (), (UNSAFE_INSTRUCTION, {"evidence": i, "memoryId": memory_id})
        ev = Evidence(memory_id, excerpt)
        if ev not in out:
            out.append(ev)
    return tuple(out), None


def _assertion(index: int, item: dict[str, Any], inputs: dict[str, DreamInput],
               settings: Settings) -> AcceptedAssertion | Rejection:
    text = item["text"].strip()
    if not text:
        return Rejection("assertion", index, EMPTY_TEXT)
    if find_credential(text):
        return Rejection("assertion", index, CONTAINS_CREDENTIAL,
                         {"kind": find_credential(text)})
    evidence, problem = _evidence(item["evidence"], inputs, settings)
    if problem:
        return Rejection("assertion", index, problem[0], problem[1])
    support = grounding.text_support(text, (e.excerpt for e in evidence))
    if support < settings.dream_min_text_support:
        return Rejection("assertion", index, TEXT_NOT_SUPPORTED,
                         {"support": round(support, 2),
                          "required": settings.dream_min_text_support})
    valid_until = _valid_until(item["validUntil"])
    if isinstance(valid_until, Rejection):
        return Rejection("assertion", index, valid_until.reason, valid_until.detail)
    subject = (item["subject"] or "").strip() or None
    predicate = (item["predicate"] or "").strip() or None
    duplicate = any(inputs[e.memory_id].assertion_id is not None
                    and normalise(inputs[e.memory_id].content) == normalise(text)
                    for e in evidence)
    if item["relation"] == "updates":
        correction = (subject is not None and predicate is not None
                      and item["confidence"] >= settings.dream_update_confidence)
        if not (duplicate or correction):
            return Rejection("assertion", index, UPDATES_NOT_ALLOWED,
                             {"confidence": item["confidence"],
                              "required": settings.dream_update_confidence})
    return AcceptedAssertion(index=index, text=text, type=item["type"],
                             confidence=float(item["confidence"]), subject=subject,
                             predicate=predicate, evidence=evidence, relation=item["relation"],
                             time_bounded=item["timeBounded"], transient=item["transient"],
                             duplicate_of_input=duplicate, valid_until=valid_until)


def _valid_until(value: str | None) -> datetime | Rejection | None:
    """The end of a time-bounded statement (UTC), or the item's rejection: not a date-time
    with an offset (the write path's rule, ``parse_occurred_at``), or already past (an ended
    statement is no memory to activate)."""
    if value is None:
        return None
    try:
        end = parse_occurred_at(value.strip(), field="validUntil")
    except InvalidInput as exc:
        return Rejection("assertion", -1, INVALID_VALID_UNTIL,
                         {"validUntil": value[:40], "message": exc.message})
    if end <= datetime.now(UTC):
        return Rejection("assertion", -1, ALREADY_ENDED, {"validUntil": end.isoformat()})
    return end


def _wiki(index: int, item: dict[str, Any], accepted: dict[int, AcceptedAssertion],
          proposed: int, inputs: dict[str, DreamInput], settings: Settings
          ) -> AcceptedWiki | Rejection:
    body = item["bodyMarkdown"].strip()
    if not body or not item["title"].strip():
        return Rejection("wikiProposal", index, EMPTY_TEXT)
    if find_credential(body) or find_credential(item["title"]):
        return Rejection("wikiProposal", index, CONTAINS_CREDENTIAL)
    if grounding.unsafe_instruction(body) or grounding.unsafe_instruction(item["title"]):
        return Rejection("wikiProposal", index, UNSAFE_INSTRUCTION)
    refs = tuple(dict.fromkeys(item["assertionRefs"]))
    bad = [r for r in refs if r >= proposed]
    if bad:
        return Rejection("wikiProposal", index, WIKI_REF_INVALID, {"assertionRefs": bad})
    rejected = [r for r in refs if r not in accepted]
    if rejected:
        return Rejection("wikiProposal", index, WIKI_REF_REJECTED, {"assertionRefs": rejected})
    evidence, problem = _evidence(item["evidence"], inputs, settings)
    if problem:
        return Rejection("wikiProposal", index, problem[0], problem[1])
    return AcceptedWiki(index, item["title"].strip(), item["slug"], body, refs, evidence)


def validate_output(data: Any, inputs: list[DreamInput], settings: Settings) -> Validation:
    """Validate a completion's parsed JSON against the contract and this partition's inputs."""
    problems = structural_problems(data, settings)
    if problems:
        code = problems[0]["code"] if len(problems) == 1 else "schema_violation"
        failure = {"code": code, "problems": problems[:MAX_PROBLEMS],
                   "problemCount": len(problems)}
        return Validation(failure)
    by_id = {str(r.memory_id): r for r in inputs}
    result = Validation(None, proposed_assertions=len(data["assertions"]),
                        proposed_wiki=len(data["wikiProposals"]))
    accepted: dict[int, AcceptedAssertion] = {}
    identities: set[str] = set()
    for index, item in enumerate(data["assertions"]):
        outcome = _assertion(index, item, by_id, settings)
        if isinstance(outcome, AcceptedAssertion):
            identity = identity_hash(outcome.text, outcome.subject, outcome.predicate)
            if identity in identities:
                outcome = Rejection("assertion", index, DUPLICATE_ASSERTION)
            else:
                identities.add(identity)
        if isinstance(outcome, Rejection):
            result.rejected.append(outcome)
        else:
            accepted[index] = outcome
            result.assertions.append(outcome)
    for index, item in enumerate(data["wikiProposals"]):
        outcome_w = _wiki(index, item, accepted, len(data["assertions"]), by_id, settings)
        if isinstance(outcome_w, Rejection):
            result.rejected.append(outcome_w)
        else:
            result.wiki.append(outcome_w)
    return result
