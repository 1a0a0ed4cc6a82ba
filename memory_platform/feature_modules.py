"""A feature's home in an adapter folder is the module of its name (docs/architecture.md, 'How
to add a feature'). The HTTP adapter (``api/features.py``), the Dagster code location
(``orchestration/features.py``) and the command line (``cli/__init__.py``) each collect their
features' modules with :func:`modules_named` from one declared list instead of importing
them one by one."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType


def modules_named(package: str, names: Iterable[str]) -> list[ModuleType]:
    """The modules of ``package`` named in ``names``, in that order (a name without a module
    there is skipped: not every feature has every adapter)."""
    return [importlib.import_module(f"{package}.{name}") for name in names
            if importlib.util.find_spec(f"{package}.{name}") is not None]
