"""OpenTelemetry traces (docs/observability.md): off by default; with an in-memory exporter
installed through ``tracing.setup(exporter=...)`` (no environment, no global provider, no
network) one search is a span tree with its phases and arms, one API request is a server
span with its route template and status and no secret, a model call carries its tokens."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from starlette.testclient import TestClient

from api.app import create_app
from memory_platform.features.context import context_search
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation import tracing
from memory_platform.foundation.settings import ModelPrice, Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.llm.base import JsonRequest, ModelError
from memory_platform.shared.llm.openai_compatible import OpenAICompatibleModel
from tests.api.conftest import bearer, key_maker, make_settings
from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401
from tests.support.settings import hash_embedding_settings

SECRET_QUERY = "VAT filing Mandant Nord"
CONTENT = "The VAT filing for Mandant Nord is due on the tenth of each month."


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for this test only, into memory; off again afterwards."""
    exporter = InMemorySpanExporter()
    tracing.reset()
    assert tracing.setup("memory-platform-test", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.reset()
        exporter.clear()


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path) -> Settings:
    return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"trace-{uuid.uuid4().hex[:12]}", user_id="ada")


def _seed(db, settings, ctx) -> None:
    for text in (CONTENT, "Mandant Nord pays its invoices by bank transfer within 14 days.",
                 "Lunch is served at noon in the cafeteria on the second floor."):
        store_memory(db, settings, ctx, MemoryWrite(text, source_type="manual"))


def _tree(finished) -> dict[str, list[str]]:
    """Span name -> names of its children."""
    by_id = {s.context.span_id: s for s in finished}
    children: dict[str, list[str]] = {s.name: [] for s in finished}
    for s in finished:
        if s.parent is not None and s.parent.span_id in by_id:
            children[by_id[s.parent.span_id].name].append(s.name)
    return children


def _no_text(finished, *texts: str) -> None:
    for s in finished:
        for value in [s.name, *map(str, (s.attributes or {}).values())]:
            for text in texts:
                assert text not in value, (s.name, value)


def test_tracing_is_off_by_default_and_by_the_environment_rule():
    tracing.reset()
    assert not tracing.enabled()
    assert isinstance(tracing.tracer(), trace.NoOpTracer)
    with tracing.span("nothing", **{"memory.count": 1}) as current:
        assert not current.is_recording()
    assert not tracing.setup(env={})  # nothing configured: stays off, no exporter built
    assert not tracing.enabled()
    rule = tracing.enabled_by_environment
    assert not rule({})
    assert rule({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert rule({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert rule({"OTEL_TRACES_EXPORTER": "otlp"}) and rule({"OTEL_TRACES_EXPORTER": "console"})
    assert not rule({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"})
    assert not rule({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                     "OTEL_TRACES_EXPORTER": "none"})
    assert rule({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"})


def test_a_search_untraced_records_nothing(db, settings, ctx, monkeypatch):
    tracing.reset()

    def recording(*_args, **_kwargs):
        raise AssertionError("a span was recorded with tracing off")

    monkeypatch.setattr(tracing, "_recording", recording)
    _seed(db, settings, ctx)
    assert search_memories(db, settings, ctx, SECRET_QUERY, stamp=False)
    assert context_search(db, settings, ctx, SECRET_QUERY)
    # No SDK provider was installed anywhere: nothing could be exported.
    assert not isinstance(trace.get_tracer_provider(), TracerProvider)
    assert isinstance(tracing.tracer(), trace.NoOpTracer)


def test_one_search_is_a_span_tree_with_its_phases_and_arms(db, settings, ctx, spans):
    _seed(db, settings, ctx)
    spans.clear()

    hits = search_memories(db, settings, ctx, SECRET_QUERY, stamp=False)

    assert hits and hits[0].content == CONTENT
    finished = spans.get_finished_spans()
    tree = _tree(finished)
    assert sorted(tree["search.memories"]) == ["search.embed_query", "search.fusion",
                                               "search.statement"]
    assert sorted(tree["search.statement"]) == ["search.arm.keyword", "search.arm.vector"]
    by_name = {s.name: s for s in finished}
    top = by_name["search.memories"].attributes
    assert top["memory.search.hits"] == len(hits)
    statement = by_name["search.statement"]
    rows = statement.attributes["memory.search.candidate_rows"]
    assert rows >= len(hits)
    keyword, vector = by_name["search.arm.keyword"], by_name["search.arm.vector"]
    assert keyword.attributes["memory.search.arm.enabled"] is True
    assert vector.attributes["memory.search.arm.enabled"] is True
    assert 1 <= keyword.attributes["memory.search.arm.scored"] <= rows
    assert vector.attributes["memory.search.arm.scored"] == rows  # one generation: all scored
    assert keyword.attributes["memory.search.arm.best_score"] > 0
    assert keyword.attributes["memory.search.arm_timing"] == "statement"
    for arm in (keyword, vector):  # inside the statement: its time, not their own
        assert statement.start_time <= arm.start_time <= arm.end_time <= statement.end_time
    assert by_name["search.fusion"].attributes["memory.search.hits"] == len(hits)
    _no_text(finished, SECRET_QUERY, "Mandant", "VAT", ctx.instance_key, "ada")


def test_context_search_has_a_span_per_source(db, settings, ctx, spans):
    _seed(db, settings, ctx)
    spans.clear()

    items = context_search(db, settings, ctx, SECRET_QUERY)

    assert items
    tree = _tree(spans.get_finished_spans())
    assert sorted(tree["search.context"]) == [
        "search.embed_query", "search.fusion", "search.source.assertions",
        "search.source.graph", "search.source.history", "search.source.memories"]
    assert "search.memories" in tree["search.source.memories"]
    by_name = {s.name: s for s in spans.get_finished_spans()}
    assert by_name["search.source.memories"].attributes["memory.search.items"] >= 1
    assert by_name["search.context"].attributes["memory.search.hits"] == len(items)
    _no_text(spans.get_finished_spans(), SECRET_QUERY, "Mandant")


def test_an_api_request_is_a_server_span_with_its_route_and_status_and_no_secret(
        database_url, tmp_path, spans):
    token = key_maker(database_url)("alice")
    settings = make_settings(database_url, tmp_path / "state")
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        stored = client.post("/api/v1/memory", headers=bearer(token),
                             json={"content": CONTENT, "visibility": "private"})
        assert stored.status_code == 201
        spans.clear()
        found = client.get("/api/v1/memory", params={"query": SECRET_QUERY},
                           headers=bearer(token))
        missing = client.get(f"/api/v1/memory/{uuid.uuid4()}", headers=bearer(token))
    assert found.status_code == 200 and missing.status_code == 404

    finished = spans.get_finished_spans()
    servers = [s for s in finished if s.kind == SpanKind.SERVER]
    assert [(s.name, s.attributes["http.route"], s.attributes["http.response.status_code"])
            for s in servers] == [("GET /api/v1/memory", "/api/v1/memory", 200),
                                  ("GET /api/v1/memory/{memory_id}",
                                   "/api/v1/memory/{memory_id}", 404)]
    assert all(s.attributes["http.request.method"] == "GET" for s in servers)
    search = next(s for s in finished if s.name == "search.memories")
    assert search.context.trace_id == servers[0].context.trace_id  # one trace per request
    _no_text(finished, token, SECRET_QUERY, "Mandant")


def test_a_model_call_span_carries_its_tokens_and_cost(openai_server, tmp_path, spans):  # noqa: F811
    settings = Settings(maintenance_base_url=openai_server.base_url,
                        maintenance_api_key="sk-trace-secret-key-123",
                        model_prices={"scripted": ModelPrice(input_per_1k=1.0,
                                                             output_per_1k=2.0)},
                        data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    model = OpenAICompatibleModel("scripted", openai_server.base_url,
                                  settings.maintenance_api_key, settings)
    request = JsonRequest(system="SYSTEM PROMPT TEXT", user="USER PROMPT TEXT",
                          schema={"type": "object"}, schema_name="test")
    answer = json.dumps({"ok": True, "note": "answer words here"})
    openai_server.script_chat(content=answer)

    completion = model.complete_json(request)

    [call] = [s for s in spans.get_finished_spans() if s.name == "llm.chat"]
    attrs = call.attributes
    usage = completion.usage
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert attrs["gen_ai.request.model"] == attrs["gen_ai.response.model"] == "scripted"
    assert attrs["gen_ai.usage.input_tokens"] == usage["prompt_tokens"]
    assert attrs["gen_ai.usage.output_tokens"] == usage["completion_tokens"]
    assert attrs["memory.llm.total_tokens"] == usage["total_tokens"]
    assert attrs["memory.llm.estimated_cost_usd"] == pytest.approx(
        usage["prompt_tokens"] / 1000 * 1.0 + usage["completion_tokens"] / 1000 * 2.0)
    assert tuple(attrs["gen_ai.response.finish_reasons"]) == ("stop",)
    assert attrs["server.address"] == "127.0.0.1"
    _no_text(spans.get_finished_spans(), "sk-trace-secret-key-123", "PROMPT", "answer words")

    spans.clear()
    openai_server.script("chat/completions", status=401,
                         json={"error": {"message": "bad key sk-trace-secret-key-123"}})
    with pytest.raises(ModelError):
        model.complete_json(request)
    [failed] = spans.get_finished_spans()
    assert failed.attributes["error.code"] == "http_error"
    assert not failed.status.is_ok
    _no_text([failed], "sk-trace-secret-key-123", "bad key")
