"""The HTTP adapter's features, listed once.

A feature is a name; its home in each folder of the adapter is the module of that name:
``api/routes/<feature>.py`` declares its operations (``ROUTES``: sections of
:class:`api.operation.Operation`) with its models in ``api/schemas/<feature>.py``, and
``api/inspector/<feature>.py``, where the inspector shows the feature, declares its JSON
endpoints (``ROUTES``: Starlette routes under ``/inspector/api``). ``api.table`` collects the
route table over :func:`modules` of ``api.routes`` (so the app's routes and ``/openapi.json``
follow this list) and ``api.inspector`` its endpoints over those of ``api.inspector``. A new
feature is its modules and one name here; nothing else lists routes by hand.

The order is the order of the route table within each path prefix (Starlette matches the
first route that fits, and ``/openapi.json`` lists the operations in it).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

FEATURES = ("health", "retrieval", "events", "users", "review", "memory", "context",
            "knowledge", "assertions", "feedback", "members", "sessions", "internal",
            "profiles", "dreams", "webhooks")


def modules(package: str) -> list[ModuleType]:
    """The modules of ``package`` named after a feature, in feature order (a feature without
    one there is skipped)."""
    return [importlib.import_module(f"{package}.{name}") for name in FEATURES
            if importlib.util.find_spec(f"{package}.{name}") is not None]
