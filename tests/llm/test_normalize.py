"""parse_model_json: one fence and one wrapper are normalised, everything else fails closed."""

from __future__ import annotations

import json

import pytest

from memory_platform.shared.llm.base import ModelError
from memory_platform.shared.llm.normalize import parse_model_json
from tests.llm.helpers import PAYLOAD, PAYLOAD_TEXT

PRETTY = json.dumps(PAYLOAD, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("text", [
    PAYLOAD_TEXT,
    f"  \n{PAYLOAD_TEXT}\n\n",
    f"```json\n{PRETTY}\n```",
    f"```json\n{PRETTY}\n```\n",
    f"```JSON\n{PRETTY}```",
    f"```json\n{PRETTY}",            # no closing fence
    f"```json\n{PRETTY}\n",
    f"```\n{PRETTY}\n```",           # a bare fence
], ids=["plain", "whitespace", "fenced", "fenced-newline", "fenced-upper",
        "unclosed", "unclosed-newline", "bare-fence"])
def test_a_single_object_with_at_most_one_fence_parses(text):
    assert parse_model_json(text) == PAYLOAD


@pytest.mark.parametrize("key", ["response", "result", "data", "dream"])
def test_one_anonymous_wrapper_around_the_payload_is_removed(key):
    assert parse_model_json(json.dumps({key: PAYLOAD})) == PAYLOAD
    assert parse_model_json(f"```json\n{json.dumps({key: PAYLOAD})}\n```") == PAYLOAD


def test_only_one_wrapper_and_only_around_the_payload_is_removed():
    twice = {"response": {"result": PAYLOAD}}
    assert parse_model_json(json.dumps(twice)) == twice  # the validator rejects it
    not_payload = {"response": {"assertions": []}}
    assert parse_model_json(json.dumps(not_payload)) == not_payload
    two_keys = {"response": PAYLOAD, "note": "x"}
    assert parse_model_json(json.dumps(two_keys)) == two_keys
    assert parse_model_json(json.dumps({"response": "text"})) == {"response": "text"}


@pytest.mark.parametrize(("text", "reason"), [
    (f"Here is the JSON you asked for: {PAYLOAD_TEXT}", "text before"),
    (f"{PAYLOAD_TEXT}\nI hope this helps!", "text after"),
    (f"```json\n{PAYLOAD_TEXT}\n```\nLet me know if you need more.", "text after"),
    (f"{PAYLOAD_TEXT}\n{PAYLOAD_TEXT}", "several JSON values"),
    (f"{PAYLOAD_TEXT}{PAYLOAD_TEXT}", "several JSON values"),
    (f"```json\n{PAYLOAD_TEXT}\n```\n```json\n{PAYLOAD_TEXT}\n```", "after"),
    (f"```json\n```json\n{PAYLOAD_TEXT}\n```\n```", "more than one Markdown fence"),
    (f"[{PAYLOAD_TEXT}]", "array"),
    ('"just a string"', "text before"),
    (PAYLOAD_TEXT[:-25], "truncated JSON"),
    (f"```json\n{PAYLOAD_TEXT[: len(PAYLOAD_TEXT) // 2]}", "truncated JSON"),
    ('{"schemaVersion": 1, "assertions": [}', "malformed JSON"),
    ("{'schemaVersion': 1}", "malformed JSON"),
    ('{"schemaVersion": 1, "schemaVersion": 2}', "duplicate key"),
    ('{"schemaVersion": NaN}', "non-standard"),
    (f"```python\n{PAYLOAD_TEXT}\n```", "not json"),
    ("```json\n```", "only a Markdown fence"),
])
def test_anything_else_fails_closed_with_a_reason(text, reason):
    with pytest.raises(ModelError) as caught:
        parse_model_json(text)
    assert caught.value.code == "malformed_output"
    assert reason in caught.value.reason
    assert caught.value.diagnostic["reason"] == caught.value.reason


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_no_content_is_empty(text):
    with pytest.raises(ModelError) as caught:
        parse_model_json(text)
    assert caught.value.code == "empty"


def test_unknown_fields_pass_through_for_the_validator():
    extra = {**PAYLOAD, "notes": "unknown field"}
    assert parse_model_json(json.dumps(extra)) == extra


def test_model_error_codes_are_a_closed_set():
    with pytest.raises(ValueError):
        ModelError("something_else")
    error = ModelError("timeout", diagnostic={"model": "m"})
    assert (error.code, error.diagnostic["model"], error.diagnostic["code"]) == (
        "timeout", "m", "timeout")
    assert isinstance(error, RuntimeError)
