"""Fuzzing the API from its own OpenAPI document: schemathesis generates valid (positive) and
invalid (negative) parameters and bodies for every operation; each request goes to the app,
authenticated with a read+write+admin key, and no answer may be a 5xx. Every 4xx must be in
the one JSON error shape.

Every answer that is a 2xx must have come from a request whose strings all keep the
character rules of ``api.input`` (no control character anywhere but tab and line breaks in
free text, no invisible character in identifiers and keys): generated strings are arbitrary
Unicode, so the edge is probed with characters nobody wrote a case for.

Bounded: ``EXAMPLES`` per operation and mode, no deadline, no example database, and failures
are collected instead of raised (no shrinking), so the run takes seconds and reports every
failing operation at once. The operations are dealt round-robin over ``SHARDS`` tests (each
with its own database and app), so pytest-xdist can run them on several workers; together
they send every operation the same derandomized examples as one test would.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from api.input import is_free_text, refused_character
from tests.api.conftest import bearer, open_client
from tests.api.launching import RecordingLauncher

EXAMPLES = 15
SHARDS = 4


@pytest.fixture
def client(api_settings):
    """The app with a launcher, so a generated launch request reaches it. Without the
    admission thread-wait limit: on a loaded machine a request may wait for a worker thread
    longer than it allows and be shed (503 overloaded, waited_too_long), which is load
    shedding doing its job, not a bug of the request's handling that this test looks for."""
    unhurried = api_settings.model_copy(update={"api_admission_wait_ms": 0})
    with open_client(unhurried, launcher=RecordingLauncher()) as test_client:
        yield test_client


def _request(case, token: str) -> dict[str, Any]:
    """The case as keyword arguments of the httpx-based test client."""
    sent = case.as_transport_kwargs(base_url="http://testserver")
    headers = {"Authorization": f"Bearer {token}"}
    content_type = sent["headers"].get("Content-Type")
    if content_type:
        headers["Content-Type"] = content_type
    request: dict[str, Any] = {"method": sent["method"], "url": sent["url"],
                               "params": sent.get("params") or None, "headers": headers}
    if "json" in sent:
        request["json"] = sent["json"]
    elif sent.get("data") is not None:
        data = sent["data"]
        request["content"] = data if isinstance(data, bytes) else str(data).encode()
    return request


def _refused_strings(value: Any, path: str = "") -> list[str]:
    """Strings of a sent body or query that the character rules refuse."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if refused_character(str(key), free_text=False):
                found.append(repr(key))
            inner = f"{path}.{key}" if path else str(key)
            if isinstance(item, str):
                if refused_character(item, free_text=is_free_text(inner)):
                    found.append(repr(item))
            else:
                found.extend(_refused_strings(item, inner))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                if refused_character(item, free_text=is_free_text(f"{path}[{index}]")):
                    found.append(repr(item))
            else:
                found.extend(_refused_strings(item, f"{path}[{index}]"))
    return found


def _refused_query(params: dict[str, Any] | None) -> list[str]:
    """Strings of a query string, as the HTTP client sends them (a value that is neither a
    string nor a list goes as its text: a generated object is sent as its repr)."""
    return [repr(value) for name, value in httpx2.QueryParams(params or {}).multi_items()
            if refused_character(name, free_text=False)
            or refused_character(value, free_text=is_free_text(name))]


def _problem(response, request: dict[str, Any] | None = None) -> str | None:
    if response.status_code < 300 and request is not None:
        sent = [*_refused_strings(request.get("json")), *_refused_query(request.get("params"))]
        if sent:
            return f"{response.status_code} for refused characters in {sent[:3]}"
    if response.status_code >= 500:
        return f"{response.status_code}: {response.text[:300]}"
    if response.status_code >= 400:
        try:
            body = response.json()
            assert set(body) == {"error"}
            assert {"code", "message", "details"} <= set(body["error"])
        except Exception:
            return f"{response.status_code} outside the error shape: {response.text[:300]}"
    return None


@pytest.mark.parametrize("shard", range(SHARDS))
def test_no_generated_request_gets_a_5xx(client, make_key, shard):
    token = make_key("fuzzer", ("memory:read", "memory:write", "admin"))
    assert client.get("/api/v1/memory", params={"query": "x"},
                      headers=bearer(token)).status_code == 200
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    every = [result.ok() for result in schema.get_all_operations()]
    assert len(every) >= 12
    operations = every[shard::SHARDS]
    assert operations
    failures: list[str] = []
    sent = 0
    skipped: list[str] = []

    def fuzz(operation, mode: GenerationMode) -> None:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        def send(case) -> None:
            nonlocal sent
            request = _request(case, token)
            try:
                response = client.request(**request)
            except httpx2.InvalidURL as exc:   # over 65,536 characters: no client sends it
                assert "too long" in str(exc), exc
                return
            sent += 1
            problem = _problem(response, request)
            if problem:
                failures.append(f"{mode.value} {operation.method.upper()} {operation.path}: "
                                f"{problem}; request {request!r:.400}")

        try:
            send()
        except Unsatisfiable:
            # Nothing to make invalid: an operation without parameters or body.
            assert mode is GenerationMode.NEGATIVE, operation.path
            skipped.append(operation.path)

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz(operation, mode)

    print(f"shard {shard}/{SHARDS}: {sent} requests; no negative cases for {skipped}")
    assert sent >= len(operations) * EXAMPLES
    assert failures == [], "\n".join(failures)
