"""Strict validation of a graph answer (contract.py), repair only by removal, validation again.

The steps of :func:`validate_extraction`, each failing closed with
:class:`~memory_platform.features.graph.types.GraphWorkRetryable` (the batch's outbox work stays
pending; nothing of the answer is applied):

1. **structure** (:func:`structure_problems`): exactly the contract's fields, types, caps,
   patterns, enums and ``schemaVersion``; unique entity refs; claims and edges refer to
   entities of the answer; a claim sets exactly one of ``object``/``value``; an edge joins
   two different entities -> ``malformed_output`` with the problems (at most
   :data:`MAX_PROBLEMS`).
2. **citations**: the batch is one instance and audience, and every ``sourceMemoryIds`` entry
   is the memory id of a source of the batch. A batch (or a cited source) of another instance
   or audience -> ``instance_mismatch``; an id that is not a UUID or not in the batch ->
   ``malformed_output``.
3. **repair, by removal only**: an incomplete linked-record pair (one side null), or a pair
   that no cited source grounds (its id is neither that source's subject-ref value of the
   named key nor written in a cited text), is cleared (``linkedPairsCleared``); subject refs
   that no cited source carries are dropped (``subjectRefsDropped``); aliases that are not
   grounded are dropped (``aliasesDropped``); an entity whose label is not grounded is pruned
   with every claim and edge that refers to it (``labelsPruned``, ``claimsPruned``,
   ``edgesPruned``). Grounded means: it occurs in the text of a cited source (compared after
   ``text.normalise``, on word boundaries), or equals a subject-ref value of a cited source.
   Nothing is added or rewritten.
4. the repaired payload goes through step 1 **again** (the same function): repair must not be
   able to produce something the contract forbids.
5. **assertion text**: the stored text comes from the ledger, not the model. A claim whose
   citations are one assertion stores that assertion's text. A claim citing several stores
   the one whose text equals the model's ``assertionText`` (normalised), and its citations
   are narrowed to that assertion (``citationsNarrowed``), so retracting another cited
   assertion cannot leave a claim whose text no longer has a source; when none or several
   match -> ``ambiguous_paraphrase``.
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Iterable
from typing import Any
from uuid import UUID

from memory_platform.features.graph import contract
from memory_platform.features.graph.types import (
    ClaimItem,
    EdgeItem,
    EntityItem,
    Extraction,
    GraphBatch,
    GraphSource,
    GraphWorkRetryable,
)
from memory_platform.foundation.settings import Settings
from memory_platform.foundation.text import normalise

MAX_PROBLEMS = 20
# Source texts are compared with many labels: normalise each once per process while hot.
_normalised = functools.lru_cache(maxsize=1024)(normalise)
REPAIR_COUNTS = ("linkedPairsCleared", "subjectRefsDropped", "aliasesDropped", "labelsPruned",
                 "claimsPruned", "edgesPruned", "citationsNarrowed")

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "null": (type(None),), "integer": (int,), "number": (int, float)}


# --- 1. structure --------------------------------------------------------------------------


def _type_ok(value: Any, types: str | list[str]) -> bool:
    for name in [types] if isinstance(types, str) else types:
        if isinstance(value, bool) and name not in ("boolean",):
            continue
        if isinstance(value, _JSON_TYPES[name]):
            return True
    return False


class _Checker:
    """The subset of JSON schema the contract uses, collecting every violation."""

    def __init__(self) -> None:
        self.problems: list[dict[str, Any]] = []

    def add(self, code: str, path: str, message: str) -> None:
        self.problems.append({"code": code, "path": path or "$", "message": message})

    def check(self, value: Any, schema: dict[str, Any], path: str) -> None:
        if "type" in schema and not _type_ok(value, schema["type"]):
            self.add("wrong_type", path, f"expected {schema['type']}")
            return
        if "enum" in schema and value not in schema["enum"]:
            code = "schema_version_mismatch" if path == "schemaVersion" else "bad_enum"
            self.add(code, path, f"{str(value)[:40]!r} is not allowed")
        if isinstance(value, dict):
            props = schema.get("properties", {})
            for name in schema.get("required", []):
                if name not in value:
                    self.add("missing_field", f"{path}.{name}".lstrip("."), "required")
            for name in value:
                if name not in props:
                    self.add("unknown_field", f"{path}.{str(name)[:40]}".lstrip("."),
                             "not in the contract")
            for name, sub in props.items():
                if name in value:
                    self.check(value[name], sub, f"{path}.{name}".lstrip("."))
        elif isinstance(value, list):
            cap = schema.get("maxItems")
            if cap is not None and len(value) > cap:
                self.add("too_many_items", path, f"{len(value)} items; the cap is {cap}")
            if len(value) < schema.get("minItems", 0):
                self.add("too_few_items", path, f"at least {schema['minItems']} items")
            items = schema.get("items")
            if items is not None:  # past the cap nothing more is read: bounded work
                for i, item in enumerate(value[: (cap if cap is not None else len(value))]):
                    self.check(item, items, f"{path}[{i}]")
        elif isinstance(value, str):
            if len(value) > schema.get("maxLength", len(value)):
                self.add("too_long", path, f"{len(value)} characters; cap {schema['maxLength']}")
            elif "pattern" in schema and not re.fullmatch(schema["pattern"], value):
                self.add("pattern_mismatch", path, f"does not match {schema['pattern']}")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                self.add("out_of_range", path, "not a finite number")
            elif value < schema.get("minimum", value) or value > schema.get("maximum", value):
                self.add("out_of_range", path, "outside the allowed range")


def _reference_problems(data: dict[str, Any], check: _Checker) -> None:
    """Rules across items: unique refs, no dangling refs, object xor value, no self-loop,
    no blank label."""
    refs: set[str] = set()
    for i, entity in enumerate(data["entities"]):
        if not entity["label"].strip():
            check.add("empty_label", f"entities[{i}].label", "blank label")
        if entity["ref"] in refs:
            check.add("duplicate_ref", f"entities[{i}].ref", f"{entity['ref']!r} repeats")
        refs.add(entity["ref"])
    for i, claim in enumerate(data["claims"]):
        path = f"claims[{i}]"
        if claim["subject"] not in refs:
            check.add("dangling_ref", f"{path}.subject", f"{claim['subject']!r} is no entity")
        has_object, has_value = claim["object"] is not None, claim["value"] is not None
        if has_object == has_value:
            check.add("object_xor_value", path, "exactly one of object and value is set")
        if has_object and claim["object"] not in refs:
            check.add("dangling_ref", f"{path}.object", f"{claim['object']!r} is no entity")
        if has_value and not claim["value"].strip():
            check.add("empty_value", f"{path}.value", "blank literal")
    for i, edge in enumerate(data["edges"]):
        for end in ("source", "target"):
            if edge[end] not in refs:
                check.add("dangling_ref", f"edges[{i}].{end}", f"{edge[end]!r} is no entity")
        if edge["source"] == edge["target"]:
            check.add("self_loop", f"edges[{i}]", "an edge joins two different entities")


def structure_problems(data: Any, settings: Settings) -> list[dict[str, Any]]:
    """Every contract violation of ``data`` (empty: it is exactly the contract)."""
    if not isinstance(data, dict):
        return [{"code": "not_an_object", "path": "$", "message": "expected one JSON object"}]
    check = _Checker()
    check.check(data, contract.graph_schema(settings), "")
    if not check.problems:
        _reference_problems(data, check)
    return check.problems


def _strict(data: Any, settings: Settings, stage: str) -> None:
    problems = structure_problems(data, settings)
    if problems:
        raise GraphWorkRetryable(
            "malformed_output",
            f"the answer violates the graph contract ({len(problems)} problem(s), {stage})",
            problems[:MAX_PROBLEMS])


# --- 2. citations --------------------------------------------------------------------------


def _same_partition(batch: GraphBatch, source: GraphSource) -> bool:
    return (source.instance_key, source.audience_kind, source.audience_key) == (
        batch.instance_key, batch.audience_kind, batch.audience_key)


def check_batch(batch: GraphBatch) -> None:
    """``instance_mismatch`` unless every source is of the batch's instance and audience."""
    strays = [s for s in batch.sources if not _same_partition(batch, s)]
    if strays:
        raise GraphWorkRetryable(
            "instance_mismatch", "the batch holds sources of another instance or audience",
            [{"memoryId": str(s.memory_id), "instanceKey": s.instance_key,
              "audienceKind": s.audience_kind} for s in strays[:MAX_PROBLEMS]])


def _items(data: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any]]]:
    for kind in ("entities", "claims", "edges"):
        for i, item in enumerate(data[kind]):
            yield f"{kind}[{i}]", item


def _parse_citations(data: dict[str, Any], batch: GraphBatch) -> None:
    """Every cited id becomes the canonical UUID string of a batch source (in place,
    de-duplicated, order kept), or the whole answer fails."""
    by_memory = batch.by_memory
    unknown: list[dict[str, Any]] = []
    foreign: list[dict[str, Any]] = []
    for path, item in _items(data):
        cited: list[str] = []
        for raw in item["sourceMemoryIds"]:
            try:
                memory_id = UUID(raw.strip())
            except ValueError:
                unknown.append({"path": path, "memoryId": raw[:64], "problem": "not a UUID"})
                continue
            source = by_memory.get(memory_id)
            if source is None:
                unknown.append({"path": path, "memoryId": str(memory_id),
                                "problem": "not a source of this batch"})
            elif not _same_partition(batch, source):
                foreign.append({"path": path, "memoryId": str(memory_id)})
            elif str(memory_id) not in cited:
                cited.append(str(memory_id))
        item["sourceMemoryIds"] = cited
    if foreign:
        raise GraphWorkRetryable("instance_mismatch", "a citation names a source of another "
                                 "instance or audience", foreign[:MAX_PROBLEMS])
    if unknown:
        raise GraphWorkRetryable("malformed_output", "a citation names no source of this batch",
                                 unknown[:MAX_PROBLEMS])


# --- 3. repair by removal ------------------------------------------------------------------


def occurs(needle: str, haystack: str) -> bool:
    """``needle`` occurs in ``haystack`` after ``text.normalise``, not inside a longer word."""
    needle, haystack = normalise(needle), _normalised(haystack)
    if not needle:
        return False
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if not (_wordy(before) and _wordy(needle[0])) and not (
                _wordy(after) and _wordy(needle[-1])):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _wordy(char: str) -> bool:
    return char.isalnum() or char == "_"


def grounded(name: str, sources: list[GraphSource]) -> bool:
    """A label or alias is grounded in ``sources``: written in a text or a subject-ref value."""
    key = normalise(name)
    return any(key == normalise(v) for s in sources for v in s.subject_refs.values()) or any(
        occurs(name, s.text) for s in sources)


def _cited(item: dict[str, Any], batch: GraphBatch) -> list[GraphSource]:
    by_memory = batch.by_memory
    return [by_memory[UUID(m)] for m in item["sourceMemoryIds"]]


def _repair_entity(entity: dict[str, Any], sources: list[GraphSource],
                   counts: dict[str, int]) -> bool:
    """Clear or drop what ``sources`` do not ground; False when the label itself is not."""
    link_type, link_id = entity["linkedRecordType"], entity["linkedRecordId"]
    if link_type is not None or link_id is not None:
        linked = link_type is not None and link_id is not None and (
            any(s.subject_refs.get(link_type) == link_id for s in sources)
            or any(occurs(link_id, s.text) for s in sources))
        if not linked:
            entity["linkedRecordType"] = entity["linkedRecordId"] = None
            counts["linkedPairsCleared"] += 1
    for key, value in entity["subjectRefs"].items():
        if value is not None and not any(s.subject_refs.get(key) == value for s in sources):
            entity["subjectRefs"][key] = None
            counts["subjectRefsDropped"] += 1
    aliases = [a for a in entity["aliases"] if grounded(a, sources)]
    counts["aliasesDropped"] += len(entity["aliases"]) - len(aliases)
    entity["aliases"] = aliases
    return grounded(entity["label"], sources)


def _repair(data: dict[str, Any], batch: GraphBatch) -> dict[str, int]:
    counts = dict.fromkeys(REPAIR_COUNTS, 0)
    pruned: set[str] = set()
    kept = []
    for entity in data["entities"]:
        if _repair_entity(entity, _cited(entity, batch), counts):
            kept.append(entity)
        else:
            pruned.add(entity["ref"])
    counts["labelsPruned"] = len(pruned)
    data["entities"] = kept
    claims = [c for c in data["claims"] if c["subject"] not in pruned
              and c["object"] not in pruned]
    edges = [e for e in data["edges"] if e["source"] not in pruned
             and e["target"] not in pruned]
    counts["claimsPruned"] = len(data["claims"]) - len(claims)
    counts["edgesPruned"] = len(data["edges"]) - len(edges)
    data["claims"], data["edges"] = claims, edges
    return counts


# --- 5. assertion text ---------------------------------------------------------------------


def _assertion_text(index: int, claim: dict[str, Any], batch: GraphBatch,
                    counts: dict[str, int]) -> tuple[str, list[str]]:
    """(stored text, citations) of a claim, or ``ambiguous_paraphrase``."""
    cited = _cited(claim, batch)
    assertions = {s.assertion_id: s for s in cited}
    if len(assertions) == 1:
        return cited[0].text, claim["sourceMemoryIds"]
    wanted = normalise(claim["assertionText"])
    matches = [s for s in assertions.values() if normalise(s.text) == wanted]
    if len(matches) != 1:
        raise GraphWorkRetryable(
            "ambiguous_paraphrase",
            "a claim cites several assertions and its text is not exactly one of them",
            [{"path": f"claims[{index}]", "assertions": len(assertions),
              "matches": len(matches)}])
    chosen = matches[0].assertion_id
    narrowed = [m for m, s in zip(claim["sourceMemoryIds"], cited, strict=True)
                if s.assertion_id == chosen]
    counts["citationsNarrowed"] += len(claim["sourceMemoryIds"]) - len(narrowed)
    return matches[0].text, narrowed


# --- the whole ------------------------------------------------------------------------------


def _ids(values: list[str]) -> tuple[UUID, ...]:
    return tuple(UUID(v) for v in values)


def validate_extraction(data: Any, batch: GraphBatch, settings: Settings) -> Extraction:
    """A model's (or the offline extractor's) answer for ``batch`` as a validated
    :class:`Extraction`, or :class:`GraphWorkRetryable` (see the module docstring)."""
    check_batch(batch)
    _strict(data, settings, "as answered")
    payload = copy.deepcopy(data)
    _parse_citations(payload, batch)
    counts = _repair(payload, batch)
    _strict(payload, settings, "after repair")
    entities = [EntityItem(
        ref=e["ref"], label=e["label"], entity_type=e["entityType"],
        aliases=tuple(e["aliases"]), linked_record_type=e["linkedRecordType"],
        linked_record_id=e["linkedRecordId"],
        subject_refs={k: v for k, v in e["subjectRefs"].items() if v is not None},
        source_memory_ids=_ids(e["sourceMemoryIds"])) for e in payload["entities"]]
    claims = []
    for index, c in enumerate(payload["claims"]):
        text, cited = _assertion_text(index, c, batch, counts)
        claims.append(ClaimItem(
            subject=c["subject"], predicate=c["predicate"], object=c["object"],
            value=c["value"], assertion_text=text, confidence=float(c["confidence"]),
            source_memory_ids=_ids(cited)))
    edges = [EdgeItem(source=e["source"], target=e["target"], relation_type=e["relationType"],
                      confidence=float(e["confidence"]),
                      source_memory_ids=_ids(e["sourceMemoryIds"])) for e in payload["edges"]]
    return Extraction(entities=entities, claims=claims, edges=edges, repairs=counts)
