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

from types import ModuleType

from memory_platform.feature_modules import modules_named

FEATURES = ("health", "retrieval", "events", "users", "review", "memory", "context",
            "knowledge", "assertions", "feedback", "members", "sessions", "internal",
            "profiles", "dreams", "webhooks")


def modules(package: str) -> list[ModuleType]:
    """The modules of ``package`` named after a feature, in feature order (a feature without
    one there is skipped)."""
    return modules_named(package, FEATURES)
