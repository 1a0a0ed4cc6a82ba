"""Tokens and estimated cost of a Dream's model call, end to end: a Dream materialised through
Dagster with a scripted OpenAI-compatible model on loopback that reports usage -> the
materialisation metadata (numbers Dagster plots per partition), the dream row, the operator
status report (docs/observability.md)."""

from __future__ import annotations

import json

import pytest
from dagster import FloatMetadataValue, IntMetadataValue

from memory_platform.features.dreaming import contract, prompt
from memory_platform.features.dreaming.extractive import ExtractiveModel
from memory_platform.features.dreaming.inputs import select_inputs
from memory_platform.features.operator_status import memory_status
from memory_platform.foundation.db.units import committed_unit
from memory_platform.foundation.settings import get_settings
from tests.dagster.conftest import add_partitions, new_instance_key, seed_team
from tests.dagster.test_dream_assets import dream_rows, materialisations, materialise
from tests.support.openai_server import ScriptedOpenAIServer, answer_chat

MODEL = "scripted-dreamer"
PRICES = {MODEL: {"input_per_1k": 0.5, "output_per_1k": 2.0}}


@pytest.fixture
def provider():
    server = ScriptedOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()


def _expected_usage(request, answer: str) -> dict[str, int]:
    """The usage the scripted server reports (tests/support/openai_server.py: word counts of
    the messages and of the answer)."""
    body = request.json
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
    completion_tokens = len(answer.split())
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def test_dagster_shows_the_tokens_and_cost_of_a_scripted_dream(
        db, settings, resources, instance, provider, monkeypatch):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    # The scripted model answers what the offline baseline would: a valid, grounded Dream.
    with committed_unit(db):
        inputs = select_inputs(db, settings, partition)
    payload, _ = ExtractiveModel(settings).propose(prompt.model_inputs(settings, inputs),
                                                   topic="team-memory")
    answer = json.dumps(payload)

    def respond(request):
        schema = request.json["response_format"]["json_schema"]["name"]
        assert schema == contract.SCHEMA_NAME
        return answer_chat(request, answer)

    provider.add_route("chat/completions", respond)
    monkeypatch.setenv("MEMORY_MAINTENANCE_MODEL", MODEL)
    monkeypatch.setenv("MEMORY_MAINTENANCE_BASE_URL", provider.base_url)
    monkeypatch.setenv("MEMORY_MODEL_PRICES", json.dumps(PRICES))
    get_settings.cache_clear()

    result = materialise(instance, resources, partition)

    assert result.success
    [request] = provider.requests("chat/completions")
    assert request.json["stream_options"] == {"include_usage": True}
    usage = _expected_usage(request, answer)
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    cost = round(usage["prompt_tokens"] / 1000 * 0.5
                 + usage["completion_tokens"] / 1000 * 2.0, 8)

    (row,) = dream_rows(db, partition.instance_key)
    assert row["status"] in ("completed", "partial") and row["model"] == MODEL
    assert row["stats_json"]["modelUsage"] == {
        "calls": 1, "promptTokens": usage["prompt_tokens"],
        "completionTokens": usage["completion_tokens"], "totalTokens": usage["total_tokens"],
        "estimatedCostUsd": cost, "unpricedCalls": 0}

    meta = materialisations(result)["dream_proposals"]
    assert meta["model_calls"] == IntMetadataValue(1)
    assert meta["prompt_tokens"] == IntMetadataValue(usage["prompt_tokens"])
    assert meta["completion_tokens"] == IntMetadataValue(usage["completion_tokens"])
    assert meta["total_tokens"] == IntMetadataValue(usage["total_tokens"])
    assert meta["estimated_cost_usd"] == FloatMetadataValue(cost)
    assert meta["unpriced_model_calls"] == IntMetadataValue(0)

    report = memory_status(db, partition.instance_key)["modelUsage"]
    expected = {"dreams": 1, "calls": 1, "promptTokens": usage["prompt_tokens"],
                "completionTokens": usage["completion_tokens"],
                "totalTokens": usage["total_tokens"], "estimatedCostUsd": round(cost, 6),
                "unpricedCalls": 0}
    assert report == {"last24h": expected, "allTime": expected}


def test_the_status_report_sums_dreams_and_keeps_old_ones_out_of_the_last_day(
        db, settings, resources, instance):
    partition = seed_team(db, settings, new_instance_key())
    add_partitions(instance, partition)
    assert materialise(instance, resources, partition).success  # the offline model: free
    (row,) = dream_rows(db, partition.instance_key)
    assert row["stats_json"]["modelUsage"] == {
        "calls": 1, "promptTokens": 0, "completionTokens": 0, "totalTokens": 0,
        "estimatedCostUsd": 0.0, "unpricedCalls": 0}
    # Two more rows as an older paid Dream and a recent unpriced one would leave them.
    for age, usage in (("3 days", {"calls": 1, "promptTokens": 100, "completionTokens": 20,
                                   "totalTokens": 120, "estimatedCostUsd": 0.25,
                                   "unpricedCalls": 0}),
                       ("1 hour", {"calls": 1, "promptTokens": 7, "completionTokens": 3,
                                   "totalTokens": 10, "estimatedCostUsd": 0.0,
                                   "unpricedCalls": 1})):
        db.execute(
            """
            INSERT INTO agent_memory_dreams
                   (instance_key, audience_kind, audience_key, partition_key, status,
                    trigger_kind, model, dry_run, stats_json, started_at, finished_at)
            SELECT instance_key, audience_kind, audience_key, partition_key, 'completed',
                   'manual', 'other-model', false,
                   jsonb_build_object('modelUsage', %s::jsonb),
                   now() - %s::interval, now() - %s::interval
              FROM agent_memory_dreams WHERE id = %s
            """, (json.dumps(usage), age, age, row["id"]))

    report = memory_status(db, partition.instance_key)["modelUsage"]

    assert report["last24h"] == {"dreams": 2, "calls": 2, "promptTokens": 7,
                                 "completionTokens": 3, "totalTokens": 10,
                                 "estimatedCostUsd": 0.0, "unpricedCalls": 1}
    assert report["allTime"] == {"dreams": 3, "calls": 3, "promptTokens": 107,
                                 "completionTokens": 23, "totalTokens": 130,
                                 "estimatedCostUsd": 0.25, "unpricedCalls": 1}
    other = memory_status(db, new_instance_key())["modelUsage"]
    assert other["allTime"]["calls"] == 0 and other["last24h"]["dreams"] == 0
