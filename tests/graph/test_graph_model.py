"""The exact graph model: resolution order, no fallback, and extraction over REAL HTTP against
the scripted OpenAI-compatible server (repairs, failure codes), plus the offline model end to
end on real approved assertions."""

from __future__ import annotations

import copy
import json
import uuid

import pytest

from memory_platform.features.graph import model as graph_model
from memory_platform.features.graph import validate
from memory_platform.features.graph.contract import ENTITY_REF_KEYS, SCHEMA_NAME
from memory_platform.features.graph.model import GraphModel, extract, resolve_graph_model
from memory_platform.features.graph.sources import load_sources, plan_batches
from memory_platform.features.graph.types import GraphBatch, GraphWorkRetryable
from memory_platform.shared.llm.selection import set_dreaming_model
from tests.db import rows
from tests.graph.support import batch, fact

API_KEY = "sk-test-graph-8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f"
NORD = "The VAT filing for Mandant Nord is due on the tenth of each month."
ADA = "Ada prefers concise answers with code examples."


@pytest.fixture
def http_settings(settings, openai_server):
    return settings.model_copy(update={
        "graph_model": "graph-model", "maintenance_base_url": openai_server.base_url,
        "maintenance_api_key": API_KEY, "maintenance_retry_backoff_seconds": 0.01,
        "maintenance_idle_timeout_seconds": 5.0,
        "maintenance_phase_timeout_seconds_override": 10.0})


@pytest.fixture
def team(db, settings, instance):
    """Two approved team assertions (real writes) in one batch."""
    nord = fact(db, settings, instance, NORD, visibility="team", refs={"mandantId": "nord"})
    ada = fact(db, settings, instance, ADA, visibility="team")
    return batch(nord, ada)


def ent(ref, label, *cited, linked=(None, None), refs=None, entity_type="concept"):
    subject_refs = dict.fromkeys(ENTITY_REF_KEYS)
    subject_refs.update(refs or {})
    return {"ref": ref, "label": label, "entityType": entity_type, "aliases": [],
            "linkedRecordType": linked[0], "linkedRecordId": linked[1],
            "subjectRefs": subject_refs, "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def clm(subject, *cited, obj=None, value=None, text="model words"):
    return {"subject": subject, "predicate": "states", "object": obj,
            "value": value if obj is None else None, "assertionText": text,
            "confidence": 0.8, "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def edg(source, target, *cited):
    return {"source": source, "target": target, "relationType": "related_to",
            "confidence": 0.7, "sourceMemoryIds": [str(s.memory_id) for s in cited]}


def payload(entities=(), claims=(), edges=()):
    return {"schemaVersion": 1, "entities": list(entities), "claims": list(claims),
            "edges": list(edges)}


def failure(code, batch_, model, settings) -> GraphWorkRetryable:
    with pytest.raises(GraphWorkRetryable) as caught:
        extract(batch_, model, settings)
    assert caught.value.code == code, caught.value
    return caught.value


# --- resolution ------------------------------------------------------------------------------


def test_the_resolution_order_and_its_sources(db, http_settings, instance):
    base = http_settings.model_copy(update={"graph_model": None})
    assert (resolve_graph_model(db, base, instance).name,
            resolve_graph_model(db, base, instance).source) == ("extractive", "default")
    assert resolve_graph_model(db, base, instance).client is None
    rows.dream(db, instance, status="completed", model="dream-model")
    rows.dream(db, instance, status="completed", model="dry-model", dry_run=True)
    rows.dream(db, instance, status="failed", model="failed-model")
    chosen = resolve_graph_model(db, base, instance)
    assert (chosen.name, chosen.source) == ("dream-model", "prior_dream")
    assert chosen.client is not None and chosen.client.name == "dream-model"
    with_settings = base.model_copy(update={"maintenance_model": "maint-model"})
    assert resolve_graph_model(db, with_settings, instance).source == "settings"
    set_dreaming_model(db, instance, "app-model")
    assert (resolve_graph_model(db, with_settings, instance).name,
            resolve_graph_model(db, with_settings, instance).source) == ("app-model",
                                                                        "app_settings")
    own = with_settings.model_copy(update={"graph_model": "graph-model"})
    assert (resolve_graph_model(db, own, instance).name,
            resolve_graph_model(db, own, instance).source) == ("graph-model", "settings_graph")
    offline = own.model_copy(update={"graph_model": "extractive"})
    assert resolve_graph_model(db, offline, instance).offline
    # After a Dream, its model (the chain's exact model) over every setting but an explicit
    # graph model.
    followed = rows.dream(db, instance, status="completed", model="the-dreams-model")
    chosen = resolve_graph_model(db, with_settings, instance, followed)
    assert (chosen.name, chosen.source) == ("the-dreams-model", "dream")
    assert resolve_graph_model(db, own, instance, followed).source == "settings_graph"
    unnamed = rows.dream(db, instance, status="skipped", model=None)
    assert resolve_graph_model(db, with_settings, instance, unnamed).source == "app_settings"


def test_missing_credentials_or_a_bad_name_are_model_unavailable(db, settings, instance):
    named = settings.model_copy(update={"graph_model": "gpt-4o-mini"})
    with pytest.raises(GraphWorkRetryable) as caught:
        resolve_graph_model(db, named, instance)
    assert caught.value.code == "model_unavailable"
    assert "MEMORY_MAINTENANCE_BASE_URL" in caught.value.message
    bad = settings.model_copy(update={"graph_model": "two words"})
    with pytest.raises(GraphWorkRetryable) as caught:
        resolve_graph_model(db, bad, instance)
    assert caught.value.code == "model_unavailable"


# --- extraction over real HTTP ---------------------------------------------------------------


def test_repairs_over_http_clear_prune_and_validate_twice(db, http_settings, instance, team,
                                                          openai_server, monkeypatch):
    nord, ada = team.sources
    answer = payload(
        [ent("e1", "Mandant Nord", nord, linked=("mandantId", None), entity_type="mandant",
             refs={"mandantId": "nord"}),
         ent("e2", "Ada", ada, entity_type="person"),
         ent("e3", "Steuerberater Müller", nord, entity_type="person")],     # not in the text
        [clm("e1", nord, value="due on the tenth", text="VAT for Nord: the 10th."),
         clm("e3", nord, value="files it"), clm("e1", nord, obj="e3")],
        [edg("e1", "e3", nord), edg("e2", "e1", ada, nord)])
    openai_server.script_chat(content=json.dumps(answer))
    passes = []
    real = validate.structure_problems
    monkeypatch.setattr(validate, "structure_problems",
                        lambda d, s: passes.append(copy.deepcopy(d)) or real(d, s))
    chosen = resolve_graph_model(db, http_settings, instance)
    extraction = extract(team, chosen, http_settings)
    assert len(passes) == 2 and len(passes[1]["entities"]) == 2
    assert extraction.repairs["linkedPairsCleared"] == 1
    assert (extraction.repairs["labelsPruned"], extraction.repairs["claimsPruned"],
            extraction.repairs["edgesPruned"]) == (1, 2, 1)
    nord_entity = extraction.entities[0]
    assert (nord_entity.label, nord_entity.linked_record_type,
            nord_entity.linked_record_id) == ("Mandant Nord", None, None)
    assert [e.label for e in extraction.entities] == ["Mandant Nord", "Ada"]
    [claim] = extraction.claims
    assert claim.assertion_text == NORD and claim.source_memory_ids == (nord.memory_id,)
    assert [(e.source, e.target) for e in extraction.edges] == [("e2", "e1")]
    assert extraction.model == "graph-model" and extraction.usage["sources"] == 2
    [request] = openai_server.requests("chat/completions")
    body = request.json
    assert body["model"] == "graph-model"
    assert body["response_format"]["json_schema"]["name"] == SCHEMA_NAME
    assert body["response_format"]["json_schema"]["strict"] is True
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert "MEMORY_ID" in system and NORD in user and ADA in user
    assert f"MEMORY_ID: {nord.memory_id}" in user and f"MEMORY_ID: {ada.memory_id}" in user


def test_an_ambiguous_multi_source_paraphrase_is_retryable(db, http_settings, instance, team,
                                                           openai_server):
    nord, ada = team.sources
    answer = payload([ent("e1", "Mandant Nord", nord), ent("e2", "Ada", ada)],
                     [clm("e1", nord, ada, obj="e2", text="Nord and Ada, paraphrased.")])
    openai_server.script_chat(content=json.dumps(answer))
    chosen = resolve_graph_model(db, http_settings, instance)
    failure("ambiguous_paraphrase", team, chosen, http_settings)


@pytest.mark.parametrize(("script", "code"), [
    ({"content": '{"schemaVersion": 1, "entities": ['}, "malformed_output"),
    ({"content": "Here is the graph: {}"}, "malformed_output"),
    ({"content": json.dumps(payload()), "done": False}, "malformed_output"),
    ({"content": json.dumps(payload()), "finish_reason": "length"}, "malformed_output"),
    ({"content": json.dumps(payload()), "model": "other-model"}, "model_unavailable"),
    ({"content": json.dumps({"schemaVersion": 1, "entities": []})}, "malformed_output"),
])
def test_failures_keep_the_work_retryable(db, http_settings, instance, team, openai_server,
                                          script, code):
    openai_server.script_chat(**script)
    chosen = resolve_graph_model(db, http_settings, instance)
    failure(code, team, chosen, http_settings)


def test_an_http_error_is_model_unavailable(db, http_settings, instance, team, openai_server):
    openai_server.script("chat/completions", status=401,
                         json={"error": {"message": "invalid api key"}})
    chosen = resolve_graph_model(db, http_settings, instance)
    error = failure("model_unavailable", team, chosen, http_settings)
    assert API_KEY not in json.dumps(error.problems) and API_KEY not in error.message


def test_a_citation_outside_the_batch_is_malformed(db, http_settings, settings, instance,
                                                   team, openai_server):
    elsewhere = fact(db, settings, instance, "Bert prefers long answers.", user="bert")
    answer = payload([ent("e1", "Bert", elsewhere)])
    openai_server.script_chat(content=json.dumps(answer))
    chosen = resolve_graph_model(db, http_settings, instance)
    error = failure("malformed_output", team, chosen, http_settings)
    assert error.problems[0]["memoryId"] == str(elsewhere.memory_id)


def test_a_completion_of_another_model_is_refused(db, http_settings, instance, team,
                                                  openai_server):
    """A client that reports another model than the resolved one is never trusted."""
    real = resolve_graph_model(db, http_settings, instance)
    openai_server.script_chat(content=json.dumps(payload()))
    renamed = GraphModel("graph-model-2", "settings_graph", real.client)
    failure("model_unavailable", team, renamed, http_settings)


def test_mixed_or_incomplete_batches_never_reach_the_model(db, http_settings, settings,
                                                           instance, team, openai_server,
                                                           monkeypatch):
    chosen = resolve_graph_model(db, http_settings, instance)
    private = fact(db, settings, instance, "Ada keeps her notes in Obsidian.")
    mixed = GraphBatch(instance, "team", instance, (*team.sources, private))
    failure("instance_mismatch", mixed, chosen, http_settings)
    monkeypatch.setattr(graph_model, "render_block",
                        lambda b, s: "MEMORY_ID: " + str(b.sources[0].memory_id))
    error = failure("incomplete_block", team, chosen, http_settings)
    assert {p["memoryId"] for p in error.problems} == {str(s.memory_id) for s in team.sources}
    assert openai_server.requests("chat/completions") == []


# --- the offline model end to end ------------------------------------------------------------


def test_offline_extraction_of_real_assertions(db, settings, instance):
    sources = [
        fact(db, settings, instance, NORD, visibility="team", refs={"mandantId": "nord"}),
        fact(db, settings, instance, ADA, visibility="team"),
        fact(db, settings, instance, "Anna bevorzugt kurze Antworten.", user="anna"),
        fact(db, settings, instance, "Die Umsatzsteuer für Mandant Nord ist am Zehnten fällig.",
             visibility="team", refs={"mandantId": "nord"}),
    ]
    loaded = load_sources(db, instance, [s.assertion_id for s in sources])
    batches = plan_batches(loaded, settings)
    assert [(b.audience_kind, len(b.sources)) for b in batches] == [("private", 1), ("team", 3)]
    chosen = resolve_graph_model(db, settings, instance)
    assert chosen.offline and chosen.source == "default"
    team_x = extract(batches[1], chosen, settings)
    assert sum(team_x.repairs.values()) == 0 and team_x.model == "extractive"
    labels = {e.label: e for e in team_x.entities}
    assert labels["Mandant Nord"].linked_record_id == "nord"
    assert len(labels["Mandant Nord"].source_memory_ids) == 2
    assert {c.assertion_text for c in team_x.claims} >= {NORD, ADA}
    private_x = extract(batches[0], chosen, settings)
    assert [e.label for e in private_x.entities] == ["Anna"]
    assert extract(GraphBatch(instance, "team", instance, ()), chosen, settings).entities == []
    assert uuid.UUID(str(team_x.claims[0].source_memory_ids[0]))
