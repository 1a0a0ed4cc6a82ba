"""The client and the API's OpenAPI document stay in step: a route, a query parameter, a
request or response model, or a field that exists on one side and not the other fails here.

The models are generated (scripts/client_models.py), so a fresh generation must equal the
committed file; the methods are written by hand, so each is held against its operation.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from functools import cache
from typing import Any

from api.openapi import build_document
from api.table import TABLE
from memory_platform.client import models
from memory_platform.client.methods import Methods
from memory_platform.client.operations import OPERATIONS, PROBES, camel
from memory_platform.foundation.settings import PROJECT_ROOT

NOT_CLIENT_ROUTES = {"/metrics"}          # Prometheus' text, for a scraper, not for agents
PLACEHOLDER = re.compile(r"{(\w+)}")
NOT_QUERY = {"self", "context", "fields"}


@cache
def document() -> dict[str, Any]:
    return build_document(TABLE)


def operations() -> dict[tuple[str, str], dict[str, Any]]:
    return {(method.upper(), path): op for path, ops in document()["paths"].items()
            for method, op in ops.items()
            if path not in NOT_CLIENT_ROUTES and path not in PROBES.values()}


def schema_name(node: dict[str, Any] | None) -> str | None:
    ref = ((node or {}).get("content", {}).get("application/json", {})
           .get("schema", {}).get("$ref"))
    return ref.rsplit("/", 1)[-1] if ref else None


def answer_schema(op: dict[str, Any]) -> str | None:
    return next(schema_name(r) for status, r in op["responses"].items()
                if status.startswith("2"))


def method_of(name: str) -> Any:
    return getattr(Methods, name)


def test_the_committed_models_are_a_fresh_generation_of_the_document():
    spec = importlib.util.spec_from_file_location(
        "client_models", PROJECT_ROOT / "scripts" / "client_models.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    committed = (PROJECT_ROOT / "memory_platform" / "client" / "models.py").read_text()
    assert committed == generator.generated_source(), (
        "memory_platform/client/models.py is out of step with /openapi.json: run "
        "`.venv/bin/python scripts/client_models.py`")


def test_every_operation_of_the_api_has_a_client_method_and_no_other():
    ours = {(op.method, op.path) for op in OPERATIONS.values()}
    assert ours == set(operations()), {"missing in the client": set(operations()) - ours,
                                       "not in the API": ours - set(operations())}
    public = {name for name, _ in inspect.getmembers(Methods, inspect.isfunction)
              if not name.startswith("_")}
    assert public == set(OPERATIONS), public ^ set(OPERATIONS)


def test_each_method_answers_the_model_its_operation_answers():
    for name, op in OPERATIONS.items():
        api_op = operations()[(op.method, op.path)]
        assert op.response.__name__ == answer_schema(api_op), name
        assert inspect.signature(method_of(name)).return_annotation == \
            f"m.{op.response.__name__}", name


def test_each_method_takes_the_path_ids_and_query_parameters_of_its_operation():
    context = {f.alias for f in models.CallerContext.model_fields.values()}
    for name, op in OPERATIONS.items():
        api_op = operations()[(op.method, op.path)]
        params = inspect.signature(method_of(name)).parameters
        in_path = set(PLACEHOLDER.findall(op.path))
        api_path = {p["name"] for p in api_op.get("parameters", []) if p["in"] == "path"}
        assert in_path == api_path and in_path <= set(params), name
        api_query = {p["name"] for p in api_op.get("parameters", []) if p["in"] == "query"}
        if "requestBody" in api_op:
            assert not api_query, f"{name}: a body and a query string"
            continue
        ours = {camel(p) for p in params if p not in NOT_QUERY | in_path}
        if "context" in params:
            ours |= context
        assert ours == api_query, {name: {"missing": api_query - ours,
                                          "not in the API": ours - api_query}}


def test_each_body_is_validated_by_the_operations_request_model():
    for name, op in OPERATIONS.items():
        body = schema_name(operations()[(op.method, op.path)].get("requestBody"))
        source = inspect.getsource(method_of(name))
        if body is None:
            assert "body=" not in source, name
        else:
            assert hasattr(models, body) and f"m.{body}(" in source, (name, body)


def test_the_client_imports_without_the_servers_dependencies():
    """As an agent's process would have it: no Dagster, psycopg, Starlette or server code."""
    script = (
        "import sys, importlib.abc\n"
        "BLOCKED = ('dagster', 'psycopg', 'psycopg2', 'starlette', 'api', 'uvicorn')\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError(f'blocked: {name}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "from memory_platform.client import MemoryClient, AsyncMemoryClient, models\n"
        "MemoryClient('http://127.0.0.1:9').close()\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=PROJECT_ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
