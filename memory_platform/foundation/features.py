"""The platform's features, listed once.

A feature is a name; its home in each adapter folder is the module of that name, where the
feature has that adapter (docs/architecture.md, 'How to add a feature'):

- ``api/routes/<feature>.py`` declares its operations (``ROUTES``) with its models in
  ``api/schemas/<feature>.py``; ``api.table`` collects the route table (and so
  ``/openapi.json``) over :func:`modules`.
- ``api/inspector/<feature>.py``, where the inspector shows the feature, declares its JSON
  endpoints (``ROUTES``), collected by ``api.inspector``.
- ``memory_platform/assets/<feature>.py`` declares its Dagster ``DEFINITIONS`` and
  ``memory_platform/sensors/<feature>.py`` its ``automations(settings)``, collected by
  ``memory_platform.definitions`` (``orchestration/feature_definitions.py``).

The command line needs no list: every ``cli/`` module declares its ``COMMANDS``.

The order is the order of the API's route table within each path prefix (Starlette matches
the first route that fits, and ``/openapi.json`` lists the operations in it); Dagster's UI
and ``--help`` sort by name.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

FEATURES = ("health", "retrieval", "events", "users", "review", "memory", "context",
            "knowledge", "assertions", "feedback", "members", "sessions", "internal",
            "profiles", "dreaming", "webhooks",
            # Dagster only: the ledger's tables, the knowledge graph's and consolidation's
            # chain steps, the chain's maintenance steps and jobs, the outbox, rollbacks
            "ledger", "graph", "consolidation", "chain", "maintenance", "rollback")


def modules(package: str) -> list[ModuleType]:
    """The modules of ``package`` named after a feature, in feature order (a feature without
    one there is skipped: not every feature has every adapter)."""
    return [importlib.import_module(f"{package}.{name}") for name in FEATURES
            if importlib.util.find_spec(f"{package}.{name}") is not None]
