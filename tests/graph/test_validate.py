"""Strict validation of graph answers: structure, citations, repair only by removal (then
validated again), and the assertion text taken from the ledger, not from the model."""

from __future__ import annotations

import copy
import uuid
from typing import Any

import pytest

from memory_platform.features.graph import validate
from memory_platform.features.graph.contract import ENTITY_REF_KEYS, graph_schema, system_prompt
from memory_platform.features.graph.types import (
    ENTITY_TYPES,
    GraphBatch,
    GraphSource,
    GraphWorkRetryable,
)
from memory_platform.features.graph.validate import validate_extraction
from memory_platform.foundation.settings import Settings

SETTINGS = Settings(_env_file=None, graph_max_entities=4, graph_max_claims=4,
                    graph_max_edges=4)  # type: ignore[call-arg]

NORD = "The VAT filing for Mandant Nord is due on the tenth of each month."
ADA = "Ada prefers concise answers with code examples."


def src(text: str, refs: dict[str, str] | None = None, *, instance: str = "inst-v",
        kind: str = "team", key: str | None = None) -> GraphSource:
    return GraphSource(instance, uuid.uuid4(), uuid.uuid4(), text, "fact", 0.9, kind,
                       key or instance, None, refs or {})


def batch_of(*sources: GraphSource) -> GraphBatch:
    first = sources[0]
    return GraphBatch(first.instance_key, first.audience_kind, first.audience_key,
                      tuple(sources))


def ent(ref: str, label: str, *cited: GraphSource, entity_type: str = "concept",
        aliases: list[str] | None = None, linked: tuple[Any, Any] = (None, None),
        refs: dict[str, str] | None = None) -> dict[str, Any]:
    subject_refs: dict[str, Any] = dict.fromkeys(ENTITY_REF_KEYS)
    subject_refs.update(refs or {})
    return {"ref": ref, "label": label, "entityType": entity_type, "aliases": aliases or [],
            "linkedRecordType": linked[0], "linkedRecordId": linked[1],
            "subjectRefs": subject_refs, "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def clm(subject: str, *cited: GraphSource, obj: str | None = None, value: str | None = "x",
        text: str = "paraphrased by the model", predicate: str = "states") -> dict[str, Any]:
    return {"subject": subject, "predicate": predicate, "object": obj,
            "value": None if obj else value, "assertionText": text, "confidence": 0.8,
            "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def edg(source: str, target: str, *cited: GraphSource, relation: str = "related_to"
        ) -> dict[str, Any]:
    return {"source": source, "target": target, "relationType": relation, "confidence": 0.7,
            "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def answer(entities=(), claims=(), edges=(), version: int = 1) -> dict[str, Any]:
    return {"schemaVersion": version, "entities": list(entities), "claims": list(claims),
            "edges": list(edges)}


def fails(code: str, data: Any, batch: GraphBatch) -> GraphWorkRetryable:
    with pytest.raises(GraphWorkRetryable) as caught:
        validate_extraction(data, batch, SETTINGS)
    assert caught.value.code == code, caught.value
    return caught.value


# --- the contract ----------------------------------------------------------------------------


def test_the_schema_is_strict_everywhere_and_the_prompt_states_it():
    schema = graph_schema(SETTINGS)

    def objects(node: Any):
        if isinstance(node, dict):
            if node.get("type") == "object":
                yield node
            for value in node.values():
                yield from objects(value)
        elif isinstance(node, list):
            for value in node:
                yield from objects(value)

    found = list(objects(schema))
    assert len(found) == 5          # answer, entity, subjectRefs, claim, edge
    for node in found:
        assert node["additionalProperties"] is False
        assert sorted(node["required"]) == sorted(node["properties"])
    assert schema["properties"]["entities"]["maxItems"] == 4
    prompt = system_prompt(SETTINGS)
    assert "MEMORY_ID" in prompt and "knowledge_graph_extraction" in prompt
    assert all(t in prompt for t in ENTITY_TYPES) and "never" in prompt.lower()


# --- 1. structure ----------------------------------------------------------------------------


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda d: d.update(extra=1), "unknown_field"),
    (lambda d: d.pop("edges"), "missing_field"),
    (lambda d: d.update(schemaVersion=2), "schema_version_mismatch"),
    (lambda d: d["entities"][0].update(mood="happy"), "unknown_field"),
    (lambda d: d["entities"][0].update(entityType="planet"), "bad_enum"),
    (lambda d: d["entities"][0].update(ref="e 1"), "pattern_mismatch"),
    (lambda d: d["entities"][0].update(ref="e1\n"), "pattern_mismatch"),
    (lambda d: d["entities"][0].update(label="L" * 121), "too_long"),
    (lambda d: d["entities"][0].update(aliases=["a"] * 9), "too_many_items"),
    (lambda d: d["entities"][0].update(sourceMemoryIds=[]), "too_few_items"),
    (lambda d: d["entities"][0]["subjectRefs"].update(projectId="p"), "unknown_field"),
    (lambda d: d["entities"][0]["subjectRefs"].pop("userId"), "missing_field"),
    (lambda d: d["entities"].extend(copy.deepcopy(d["entities"][:1]) * 4), "too_many_items"),
    (lambda d: d["entities"].append(copy.deepcopy(d["entities"][0])), "duplicate_ref"),
    (lambda d: d["entities"][0].update(label="  "), "empty_label"),
    (lambda d: d["claims"][0].update(predicate="Due-Date"), "pattern_mismatch"),
    (lambda d: d["claims"][0].update(subject="e9"), "dangling_ref"),
    (lambda d: d["claims"][0].update(object="e2"), "object_xor_value"),
    (lambda d: d["claims"][0].update(value=None), "object_xor_value"),
    (lambda d: d["claims"][0].update(confidence=1.5), "out_of_range"),
    (lambda d: d["claims"][0].update(confidence=True), "wrong_type"),
    (lambda d: d["edges"][0].update(target="e1"), "self_loop"),
    (lambda d: d["edges"][0].update(target="e7"), "dangling_ref"),
])
def test_anything_outside_the_contract_is_malformed(mutate, code):
    nord = src(NORD)
    data = answer([ent("e1", "Mandant Nord", nord), ent("e2", "VAT", nord)],
                  [clm("e1", nord, value="due on the tenth")], [edg("e1", "e2", nord)])
    validate_extraction(copy.deepcopy(data), batch_of(nord), SETTINGS)   # valid as it is
    mutate(data)
    error = fails("malformed_output", data, batch_of(nord))
    assert code in {p["code"] for p in error.problems}
    assert len(error.problems) <= validate.MAX_PROBLEMS


def test_not_an_object_and_huge_answers_are_malformed_with_a_bounded_problem_list():
    nord = src(NORD)
    fails("malformed_output", [], batch_of(nord))
    fails("malformed_output", None, batch_of(nord))
    many = answer([{"ref": f"bad ref {i}"} for i in range(500)])
    error = fails("malformed_output", many, batch_of(nord))
    assert len(error.problems) == validate.MAX_PROBLEMS


def test_empty_lists_are_a_valid_answer():
    extraction = validate_extraction(answer(), batch_of(src(NORD)), SETTINGS)
    assert (extraction.entities, extraction.claims, extraction.edges) == ([], [], [])
    assert sum(extraction.repairs.values()) == 0


# --- 2. citations ----------------------------------------------------------------------------


def test_a_citation_outside_the_batch_or_not_a_uuid_is_malformed():
    nord, other = src(NORD), src(ADA)
    error = fails("malformed_output", answer([ent("e1", "Mandant Nord", other)]),
                  batch_of(nord))
    assert error.problems[0]["memoryId"] == str(other.memory_id)
    bad = ent("e1", "Mandant Nord", nord)
    bad["sourceMemoryIds"] = ["MEMORY_ID: 1"]
    fails("malformed_output", answer([bad]), batch_of(nord))


def test_sources_of_another_instance_or_audience_are_an_instance_mismatch():
    nord, foreign = src(NORD), src(ADA, instance="inst-other")
    mixed = GraphBatch("inst-v", "team", "inst-v", (nord, foreign))
    fails("instance_mismatch", answer([ent("e1", "Ada", foreign)]), mixed)
    fails("instance_mismatch", answer(), mixed)
    private = src(ADA, kind="private", key="ada")
    fails("instance_mismatch", answer(), GraphBatch("inst-v", "team", "inst-v", (private,)))


def test_citations_become_uuids_without_repeats():
    nord = src(NORD)
    entity = ent("e1", "Mandant Nord", nord)
    entity["sourceMemoryIds"] = [str(nord.memory_id).upper(), f" {nord.memory_id} "]
    extraction = validate_extraction(answer([entity]), batch_of(nord), SETTINGS)
    assert extraction.entities[0].source_memory_ids == (nord.memory_id,)


# --- 3./4. repair by removal, validated again -------------------------------------------------


def test_repairs_only_remove_and_the_repaired_payload_is_validated_again(monkeypatch):
    nord = src(NORD, {"mandantId": "nord", "userId": "ada"})
    ada = src(ADA, {"userId": "ada"})
    data = answer(
        [ent("e1", "Mandant Nord", nord, entity_type="mandant", linked=("mandantId", None),
             aliases=["nord", "Nordlicht"], refs={"mandantId": "nord", "taskId": "t-9"}),
         ent("e2", "Ada", ada, entity_type="person", linked=("userId", "ada"),
             refs={"userId": "ada"}),
         ent("e3", "Finanzamt Süd", nord, entity_type="organization"),
         ent("e4", "VAT", nord, linked=("documentId", "doc-1"))],
        [clm("e1", nord, obj="e3"), clm("e3", nord), clm("e2", ada, value="concise answers")],
        [edg("e1", "e3", nord), edg("e3", "e4", nord), edg("e1", "e4", nord),
         edg("e2", "e1", ada, nord)])
    original = copy.deepcopy(data)
    calls = []
    real = validate.structure_problems
    monkeypatch.setattr(validate, "structure_problems",
                        lambda d, s: calls.append(copy.deepcopy(d)) or real(d, s))
    extraction = validate_extraction(data, batch_of(nord, ada), SETTINGS)
    assert data == original                       # the caller's answer is not touched
    assert len(calls) == 2                        # as answered, and after repair
    assert [e["ref"] for e in calls[1]["entities"]] == ["e1", "e2", "e4"]
    assert extraction.repairs == {
        "linkedPairsCleared": 2,     # e1 incomplete; e4's doc-1 is nobody's ref nor in a text
        "subjectRefsDropped": 1,     # taskId t-9 is no cited source's ref
        "aliasesDropped": 1,         # "Nordlicht"
        "labelsPruned": 1,           # "Finanzamt Süd" is in no cited text
        "claimsPruned": 2, "edgesPruned": 2, "citationsNarrowed": 0}
    by_ref = {e.ref: e for e in extraction.entities}
    assert (by_ref["e1"].linked_record_type, by_ref["e1"].linked_record_id) == (None, None)
    assert by_ref["e1"].aliases == ("nord",) and by_ref["e1"].subject_refs == {"mandantId": "nord"}
    assert (by_ref["e2"].linked_record_type, by_ref["e2"].linked_record_id) == ("userId", "ada")
    assert by_ref["e4"].linked_record_id is None
    assert [(c.subject, c.object) for c in extraction.claims] == [("e2", None)]
    assert [(e.source, e.target) for e in extraction.edges] == [("e1", "e4"), ("e2", "e1")]


def test_grounding_is_case_and_space_insensitive_on_word_boundaries():
    nord = src("Die Umsatzsteuer für  MANDANT   Nord ist am Zehnten fällig.", {"mandantId": "n-1"})
    ok = validate_extraction(answer([ent("e1", "Mandant Nord", nord),
                                     ent("e2", "n-1", nord)]), batch_of(nord), SETTINGS)
    assert [e.label for e in ok.entities] == ["Mandant Nord", "n-1"]
    inner = validate_extraction(answer([ent("e1", "Mandant No", nord),
                                        ent("e2", "steuer", nord)]), batch_of(nord), SETTINGS)
    assert inner.entities == [] and inner.repairs["labelsPruned"] == 2


# --- 5. the stored assertion text -------------------------------------------------------------


def test_one_cited_assertion_gives_its_own_text_not_the_models():
    nord = src(NORD)
    extraction = validate_extraction(
        answer([ent("e1", "Mandant Nord", nord)],
               [clm("e1", nord, value="tenth", text="VAT is due on the 10th!")]),
        batch_of(nord), SETTINGS)
    assert extraction.claims[0].assertion_text == NORD


def test_several_cited_assertions_need_the_exact_text_of_one():
    nord, ada = src(NORD), src(ADA)
    entities = [ent("e1", "Mandant Nord", nord), ent("e2", "Ada", ada)]
    chosen = validate_extraction(
        answer(entities, [clm("e1", nord, ada, obj="e2", text="  the vat filing for MANDANT "
                                                           "Nord is due on the tenth of each "
                                                           "month. ")]),
        batch_of(nord, ada), SETTINGS)
    assert chosen.claims[0].assertion_text == NORD
    assert chosen.claims[0].source_memory_ids == (nord.memory_id,)
    assert chosen.repairs["citationsNarrowed"] == 1
    error = fails("ambiguous_paraphrase",
                  answer(entities, [clm("e1", nord, ada, obj="e2",
                                        text="Mandant Nord files VAT; Ada likes it short.")]),
                  batch_of(nord, ada))
    assert error.problems[0]["assertions"] == 2
