"""The HTTP API's one route table, collected from the features' route modules.

Each feature declares its operations once, in ``api/routes/<feature>.py`` (``ROUTES``: its
:class:`api.operation.Section`\\ s); ``memory_platform.foundation.features.FEATURES`` lists the
features once. The table merges the features' sections by prefix (prefixes in the order they
first appear, operations in feature order), and the Starlette routes (one ``Mount`` per
prefix), the scope check and ``/openapi.json`` all derive from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from types import ModuleType

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from api import openapi
from api.operation import Operation, Section
from memory_platform.foundation.features import modules


def collect(features: Iterable[ModuleType]) -> tuple[Section, ...]:
    """One section per prefix, holding every feature's operations under it in feature
    order; a path and method declared twice is an error."""
    merged: dict[str, list[Operation]] = {}
    for feature in features:
        name = feature.__name__.rsplit(".", 1)[-1]
        for section in feature.ROUTES:
            merged.setdefault(section.prefix, []).extend(
                replace(op, feature=name) for op in section.operations)
    seen: set[tuple[str, str]] = set()
    for prefix, operations in merged.items():
        for op in operations:
            if (op.method, prefix + op.path) in seen:
                raise ValueError(f"{op.method} {prefix}{op.path} is declared twice")
            seen.add((op.method, prefix + op.path))
    return tuple(Section(prefix, tuple(operations)) for prefix, operations in merged.items())


TABLE: tuple[Section, ...] = collect(modules("api.routes"))


async def openapi_document(_: Request) -> JSONResponse:
    return JSONResponse(openapi.build_document(TABLE))


def routes() -> list[BaseRoute]:
    """The app's Starlette routes, in table order, and ``/openapi.json`` (the document of
    the table, not listed in itself)."""
    return [*(route for section in TABLE for route in section.routes()),
            Route("/openapi.json", openapi_document, methods=["GET"])]
