"""The OpenAI-compatible maintenance model over real HTTP + SSE to a scripted loopback server
(the SDK's own transport, no mocks): collection, normalisation, clocks, effective model,
truncation, retries, request shape."""

from __future__ import annotations

import json
import socket
import time

import pytest
from starlette.responses import Response

from memory_platform.features.dreaming.contract import SCHEMA_NAME, dream_schema
from memory_platform.shared.llm.base import ModelError
from memory_platform.shared.llm.openai_compatible import (
    OpenAICompatibleModel,
    catalog_limit,
    is_same_model,
    safe_url,
)
from tests.llm.helpers import API_KEY, PAYLOAD, PAYLOAD_TEXT, make_request, make_settings, pieces
from tests.support.openai_server import ChatScript, chat_completion_chunks

MODEL = "gpt-4o-mini"


def make_model(server, name: str = MODEL, **overrides) -> OpenAICompatibleModel:
    settings = make_settings(**overrides)
    return OpenAICompatibleModel(name, server.base_url, API_KEY, settings)


def call(model: OpenAICompatibleModel):
    return model.complete_json(make_request(model._settings))


def failure(model: OpenAICompatibleModel) -> tuple[ModelError, float]:
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        call(model)
    return caught.value, time.monotonic() - started


def assert_no_secret(error: ModelError) -> None:
    assert API_KEY not in str(error)
    assert API_KEY not in json.dumps(error.diagnostic, default=str)


# --- collection and request shape --------------------------------------------------------


def test_the_stream_is_collected_whole_then_parsed(openai_server):
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT, 5))
    completion = call(make_model(openai_server))
    assert completion.data == PAYLOAD
    assert completion.text == PAYLOAD_TEXT
    assert completion.model == MODEL and completion.effective_model == MODEL
    assert completion.finish_reason == "stop"
    assert completion.usage["total_tokens"] > 0  # from the final chunk with empty choices
    # role chunk + content deltas + finish chunk + usage chunk
    assert completion.events == len(pieces(PAYLOAD_TEXT, 5)) + 3
    assert completion.attempts == 1 and completion.diagnostics["sawDone"] is True
    assert completion.duration_seconds > 0


def test_the_request_is_a_strict_json_schema_stream_within_the_token_budget(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT)
    model = make_model(openai_server)
    call(model)
    [request] = openai_server.requests("chat/completions")
    body = request.json
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": SCHEMA_NAME, "strict": True, "schema": dream_schema(model._settings)}}
    assert body["max_completion_tokens"] == 12_000
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith("You curate memories.")
    assert request.headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize(("name", "overrides", "request_cap", "expected"), [
    ("gpt-4o-mini", {}, None, 12_000),                  # catalog 16,384 > 12,000
    ("gpt-4-turbo", {}, None, 4_096),                   # lower catalog limit wins
    ("gpt-4-turbo-2024-04-09", {}, None, 4_096),        # snapshot of a catalog model
    ("local-llama", {}, None, 12_000),                  # unknown model: the settings' cap
    ("local-llama", {"maintenance_max_completion_tokens": 3_000}, None, 3_000),
    ("gpt-4o-mini", {"dream_completion_tokens": 8_000}, None, 8_000),
    ("gpt-4o-mini", {}, 2_000, 2_000),                  # the request's own cap
    ("gpt-4-turbo", {}, 9_000, 4_096),
])
def test_completion_tokens_are_the_lowest_limit(openai_server, name, overrides, request_cap,
                                                expected):
    openai_server.script_chat(content=PAYLOAD_TEXT)
    model = make_model(openai_server, name, **overrides)
    model.complete_json(make_request(model._settings, max_completion_tokens=request_cap))
    [request] = openai_server.requests("chat/completions")
    assert request.json["max_completion_tokens"] == expected <= 12_000


def test_catalog_lookup_ignores_prefixes_and_snapshot_suffixes():
    assert catalog_limit("openai/gpt-4o") == 16_384
    assert catalog_limit("gpt-3.5-turbo-0125") == 4_096
    assert catalog_limit("o3-mini") == 100_000
    assert catalog_limit("gpt-4o-mini-high") is None
    assert catalog_limit("llama3.1:8b") is None


# --- normalisation over the wire -----------------------------------------------------------


@pytest.mark.parametrize("content", [
    ["```json\n", *pieces(PAYLOAD_TEXT), "\n```"],
    ["```", "json\n", *pieces(PAYLOAD_TEXT)],                    # no closing fence
    pieces(json.dumps({"response": PAYLOAD})),                   # redundant wrapper
    ["```json\n", *pieces(json.dumps({"result": PAYLOAD})), "\n```\n"],
], ids=["fenced", "fence-unclosed", "wrapper", "fenced-wrapper"])
def test_fences_and_one_wrapper_are_normalised(openai_server, content):
    openai_server.script_chat(content=content)
    assert call(make_model(openai_server)).data == PAYLOAD


@pytest.mark.parametrize(("content", "code"), [
    (["Sure! Here is the result: ", PAYLOAD_TEXT], "malformed_output"),
    ([PAYLOAD_TEXT, "\nHope that helps."], "malformed_output"),
    ([PAYLOAD_TEXT, PAYLOAD_TEXT], "malformed_output"),
    ([PAYLOAD_TEXT[:-40]], "malformed_output"),      # truncated JSON with finish_reason stop
    (["", ""], "empty"),
], ids=["commentary-before", "commentary-after", "two-objects", "truncated-json", "empty"])
def test_malformed_output_fails_closed(openai_server, content, code):
    openai_server.script_chat(content=content)
    error, _ = failure(make_model(openai_server))
    assert error.code == code
    assert error.diagnostic["model"] == MODEL and error.diagnostic["events"] >= 2


def test_a_refusal_fails_closed(openai_server):
    def refuse(request):
        events = chat_completion_chunks(request.json, ChatScript(content=[]))
        events[0]["choices"][0]["delta"]["refusal"] = "I cannot help with that."
        return _sse(events)
    openai_server.script("chat/completions", respond=refuse)
    error, _ = failure(make_model(openai_server))
    assert error.code == "malformed_output" and "refused" in error.reason


def _sse(events):
    body = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    return Response(body, media_type="text/event-stream")


# --- the two clocks --------------------------------------------------------------------------


def test_silence_longer_than_the_idle_timeout_fails(openai_server):
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT), pauses={2: 2.0})
    model = make_model(openai_server, maintenance_idle_timeout_seconds=0.3)
    error, elapsed = failure(model)
    assert error.code == "idle_timeout"
    assert 0.3 <= elapsed < 1.2
    assert len(openai_server.requests("chat/completions")) == 1  # data had arrived: no retry


def test_heartbeats_refresh_the_idle_deadline(openai_server):
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT), pauses={2: 1.0}, heartbeat=0.1)
    model = make_model(openai_server, maintenance_idle_timeout_seconds=0.3)
    assert call(model).data == PAYLOAD


def test_no_response_headers_within_the_idle_timeout_fails(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, delay=2.0)
    error, elapsed = failure(make_model(openai_server, maintenance_idle_timeout_seconds=0.3))
    assert error.code == "idle_timeout" and elapsed < 1.2
    assert len(openai_server.requests("chat/completions")) == 1  # a timeout is not retried


def test_a_steady_trickle_is_cut_at_the_phase_deadline(openai_server):
    # 200 events 20 ms apart (~4 s): the read timeout never fires, the phase deadline must.
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT, 2)[:200], event_delay=0.02)
    model = make_model(openai_server, maintenance_phase_timeout_seconds_override=0.6)
    error, elapsed = failure(model)
    assert error.code == "timeout"
    assert 0.6 <= elapsed < 1.0, elapsed
    assert error.diagnostic["events"] > 5
    assert_no_secret(error)


def test_heartbeats_alone_cannot_outlive_the_phase_deadline(openai_server):
    # Only ':' comments for 5 s: the SDK yields no chunk, so the watchdog must end the call.
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT), pauses={2: 5.0}, heartbeat=0.05)
    model = make_model(openai_server, maintenance_phase_timeout_seconds_override=0.6)
    error, elapsed = failure(model)
    assert error.code == "timeout"
    assert 0.6 <= elapsed < 1.0, elapsed


def test_the_phase_deadline_also_bounds_waiting_for_headers(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, delay=3.0)
    model = make_model(openai_server, maintenance_phase_timeout_seconds_override=0.5)
    error, elapsed = failure(model)
    assert error.code == "timeout" and 0.5 <= elapsed < 0.9, elapsed


def test_the_phase_timeout_comes_from_minutes_unless_overridden(openai_server):
    settings = make_settings(maintenance_phase_timeout_seconds_override=None,
                             dream_phase_timeout_minutes=3)
    model = OpenAICompatibleModel(MODEL, openai_server.base_url, API_KEY, settings)
    assert model.phase_timeout_seconds == 180.0
    assert model.idle_timeout_seconds == 5.0
    assert make_settings().maintenance_idle_timeout_seconds == 5.0
    assert type(model.phase_timeout_seconds) is float


# --- effective model -----------------------------------------------------------------------


def test_another_effective_model_fails_closed(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, model="gpt-4o")
    error, _ = failure(make_model(openai_server))
    assert error.code == "model_mismatch"
    assert error.diagnostic["effectiveModel"] == "gpt-4o"
    assert error.diagnostic["events"] == 1  # stopped at the first chunk


def test_a_dated_snapshot_of_the_requested_model_is_the_same_model(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, model="gpt-4o-mini-2024-07-18")
    completion = call(make_model(openai_server))
    assert completion.model == MODEL
    assert completion.effective_model == "gpt-4o-mini-2024-07-18"


def test_a_model_switch_mid_stream_fails_closed(openai_server):
    def switching(request):
        events = chat_completion_chunks(request.json, ChatScript(content=pieces(PAYLOAD_TEXT)))
        events[3]["model"] = "gpt-4o-mini-2024-07-18"
        return _sse(events)
    openai_server.script("chat/completions", respond=switching)
    error, _ = failure(make_model(openai_server))
    assert error.code == "model_mismatch" and error.diagnostic["events"] == 4


@pytest.mark.parametrize(("requested", "reported", "same"), [
    ("gpt-4o-mini", "gpt-4o-mini", True),
    ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", True),
    ("gpt-4o", "gpt-4o-mini", False),
    ("gpt-4o", "gpt-4o-mini-2024-07-18", False),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-09-01", False),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", False),
    ("llama3.1:8b", "llama3.1:8b", True),
    ("llama3.1:8b", "llama3.1:70b", False),
    ("Qwen/Qwen2.5-7B", "qwen/qwen2.5-7b", False),
    ("gpt-4o-mini", "", False),
    ("gpt-4o-mini", None, False),
    ("gpt-4o-mini", "gpt-4o-mini-2024-07-18-extra", False),
])
def test_the_effective_model_rule(requested, reported, same):
    assert is_same_model(requested, reported) is same


# --- ends of streams -----------------------------------------------------------------------


def test_finish_reason_length_fails(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, finish_reason="length")
    error, _ = failure(make_model(openai_server))
    assert error.code == "length" and "max_completion_tokens=12000" in error.reason


def test_a_stream_without_done_is_truncated(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, done=False)
    error, _ = failure(make_model(openai_server))
    assert error.code == "truncated" and "[DONE]" in error.reason
    assert error.diagnostic["finishReason"] == "stop"


def test_a_stream_without_finish_reason_is_truncated(openai_server):
    openai_server.script_chat(content=PAYLOAD_TEXT, finish_reason=None, done=False,
                              usage=False)
    error, _ = failure(make_model(openai_server))
    assert error.code == "truncated" and "finish_reason" in error.reason


@pytest.mark.parametrize("terminated", [True, False])
def test_a_stream_cut_mid_json_line_is_truncated(openai_server, terminated):
    # Event 3 is a content delta: half of its JSON line arrives, then the body ends.
    openai_server.script_chat(content=pieces(PAYLOAD_TEXT, 40), cut_after=3,
                              cut_terminated=terminated)
    error, _ = failure(make_model(openai_server))
    assert error.code == "truncated"
    assert len(openai_server.requests("chat/completions")) == 1


def test_an_error_event_inside_the_stream_is_an_http_error(openai_server):
    openai_server.script("chat/completions", sse=[
        {"error": {"message": f"overloaded (key {API_KEY})", "type": "server_error"}}])
    error, _ = failure(make_model(openai_server))
    assert error.code == "http_error" and "overloaded" in error.reason
    assert_no_secret(error)


# --- HTTP errors and retries ---------------------------------------------------------------


def test_a_client_error_is_not_retried_and_never_shows_the_key(openai_server):
    openai_server.script("chat/completions", status=401, json={"error": {
        "message": f"Incorrect API key provided: {API_KEY}", "type": "invalid_request_error"}})
    error, _ = failure(make_model(openai_server))
    assert error.code == "http_error" and error.diagnostic["status"] == 401
    assert "Incorrect API key" in error.reason
    assert_no_secret(error)
    assert error.__cause__ is None and error.__context__ is None
    assert len(openai_server.requests("chat/completions")) == 1


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_statuses_are_retried_at_most_twice_and_counted(openai_server, status):
    openai_server.script("chat/completions", status=status, times=2)
    completion = call(make_model(openai_server))
    assert completion.data == {}  # the default answer after the scripted failures
    assert completion.attempts == 3
    assert len(openai_server.requests("chat/completions")) == 3


def test_retries_give_up_after_two(openai_server, caplog):
    openai_server.script("chat/completions", status=503, times=5)
    error, _ = failure(make_model(openai_server))
    assert error.code == "http_error" and error.diagnostic["status"] == 503
    assert error.diagnostic["attempts"] == 3
    assert len(openai_server.requests("chat/completions")) == 3
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 2  # never silent


def test_retries_can_be_switched_off(openai_server):
    openai_server.script("chat/completions", status=503, times=5)
    error, _ = failure(make_model(openai_server, maintenance_max_retries=0))
    assert error.code == "http_error"
    assert len(openai_server.requests("chat/completions")) == 1


def test_an_unreachable_server_is_unavailable_after_bounded_retries():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatibleModel(MODEL, f"http://127.0.0.1:{port}/v1", API_KEY,
                                  make_settings())
    error, elapsed = failure(model)
    assert error.code == "unavailable" and error.diagnostic["attempts"] == 3
    assert elapsed < 2


def test_the_default_route_answers_like_openai(openai_server):
    # No script: the server's default stream (an empty JSON object for json_schema).
    completion = call(make_model(openai_server))
    assert completion.data == {} and completion.diagnostics["sawDone"] is True


def test_urls_in_diagnostics_lose_credentials():
    assert safe_url("https://user:pw@llm.example:8443/v1?api-key=abc#x") == (
        "https://llm.example:8443/v1")
