"""/metrics (Prometheus text, labelled by route template) and /openapi.json (every route)."""

from __future__ import annotations

import re
import uuid

import pytest
from starlette.routing import Mount, Route

from tests.api.conftest import store

# Each test has its own app (and so its own counters); the database can be shared.
pytestmark = pytest.mark.shared_database


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name{labels}`` (labels in any order), or None."""
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rindex("}")]))
        if found == labels:
            return float(line.rsplit(" ", 1)[1])
    return None


def test_metrics_count_requests_by_route_template_not_raw_path(client, alice):
    created = store(client, alice, "Metrics are scraped every fifteen seconds.")
    client.get(f"/api/v1/memory/{created['id']}", headers=alice)
    client.get(f"/api/v1/memory/{uuid.uuid4()}", headers=alice)
    client.get("/api/v1/memory", params={"query": "scrape interval"}, headers=alice)
    text = client.get("/metrics").text
    template = "/api/v1/memory/{memory_id}"
    assert _sample(text, "memory_http_requests_total", method="GET", route=template,
                   status="200") == 1
    assert _sample(text, "memory_http_requests_total", method="GET", route=template,
                   status="404") == 1
    assert _sample(text, "memory_http_requests_total", method="POST", route="/api/v1/memory",
                   status="201") == 1
    assert created["id"] not in text


def test_metrics_have_latency_histograms_per_route(client, alice):
    client.get("/api/v1/memory", params={"query": "anything"}, headers=alice)
    text = client.get("/metrics").text
    assert _sample(text, "memory_http_request_duration_seconds_count", method="GET",
                   route="/api/v1/memory") == 1
    assert 'memory_http_request_duration_seconds_bucket{le="0.025",method="GET",' \
           'route="/api/v1/memory"}' in text


def test_metrics_expose_pool_gauges(client):
    text = client.get("/metrics").text
    for gauge in ("memory_db_pool_size", "memory_db_pool_available",
                  "memory_db_requests_waiting", "memory_db_pool_max"):
        assert re.search(rf"^{gauge} \d+(\.\d+)?$", text, re.MULTILINE), gauge
    assert client.get("/metrics").headers["content-type"].startswith("text/plain")


def _app_operations(routes, prefix: str = "") -> set[tuple[str, str]]:
    operations = set()
    for route in routes:
        if isinstance(route, Mount):
            operations |= _app_operations(route.routes, prefix + route.path)
        elif isinstance(route, Route) and route.path != "/openapi.json":
            path = re.sub(r"\{(\w+):\w+\}", r"{\1}", prefix + route.path)
            operations |= {(m.lower(), path) for m in route.methods or () if m != "HEAD"}
    return operations


def test_openapi_lists_every_route(client):
    """Every HTTP API operation; the pages for people are not part of the API and not
    listed: the inspector (cookie-signed-in, docs/inspector.md) and /docs (the document's
    own page, with its files)."""
    document = client.get("/openapi.json").json()
    listed = {(method, path) for path, item in document["paths"].items() for method in item}
    pages = ("/inspector", "/docs")
    api = {(m, p) for m, p in _app_operations(client.app.routes) if not p.startswith(pages)}
    assert listed == api
    for prefix in pages:
        assert any(p.startswith(prefix) for _, p in _app_operations(client.app.routes))


def test_openapi_marks_every_protected_operation_with_bearer_security_and_errors(client):
    document = client.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    for path, item in document["paths"].items():
        for operation in item.values():
            protected = path.startswith(("/api/", "/internal/"))
            assert ("security" in operation) == protected, path
            if protected:
                assert {"400", "401", "403"} <= set(operation["responses"]), path


def test_openapi_describes_the_answer_of_every_api_operation(client):
    document = client.get("/openapi.json").json()
    for path, item in document["paths"].items():
        if path.startswith(("/api/", "/internal/")):
            for method, operation in item.items():
                (success,) = [r for code, r in operation["responses"].items()
                              if code.startswith("2")]
                assert "$ref" in success["content"]["application/json"]["schema"], \
                    (method, path)


def test_openapi_lists_the_conflicts_an_operation_answers(client):
    paths = client.get("/openapi.json").json()["paths"]
    append = paths["/api/v1/sessions/{session_key}/items"]["post"]["responses"]
    assert "run_completed" in append["409"]["description"]
    assert append["409"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/ErrorResponse")
    assert {"400", "401", "403", "413", "422"} <= set(append)
    # Only where it can happen: storing a memory never answers 409.
    assert "409" not in paths["/api/v1/memory"]["post"]["responses"]


def test_openapi_names_response_fields_as_the_json_sends_them(client):
    """Responses are documented as they are written (camelCase serialization aliases), not
    by their Python names: a client generated from the document reads ``createdAt``."""
    from api.table import TABLE

    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    models = {op.response for section in TABLE for op in section.operations if op.response}
    for model in models:
        sent = {field.serialization_alias or field.alias or name
                for name, field in model.model_fields.items()}
        assert set(schemas[model.__name__]["properties"]) == sent, model.__name__
    assert "createdAt" in schemas["MemoryOut"]["properties"]
