"""Resource fields override the platform settings; unset fields keep them.

A resource field left ``None`` means "whatever ``MEMORY_*`` / ``.env`` / the defaults of
:mod:`memory_platform.foundation.settings` say", so the Dagster resources never hold a second copy
of a
default. Secrets are meant to be bound with ``EnvVar`` (the Dagster UI then shows the
variable's name, never its value).
"""

from __future__ import annotations

import os
from typing import Any

from dagster import EnvVar
from pydantic import SecretStr

from memory_platform.foundation.settings import Settings

__all__ = ["env_or_none", "with_overrides"]


def with_overrides(settings: Settings, **values: Any) -> Settings:
    """``settings`` with every non-None value replaced (secret fields wrapped)."""
    update: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if name not in Settings.model_fields:
            raise KeyError(f"unknown setting {name!r}")
        current = getattr(settings, name)
        if isinstance(current, SecretStr) or name.endswith(("_api_key", "database_url")):
            value = value if isinstance(value, SecretStr) else SecretStr(str(value))
        update[name] = value
    return settings.model_copy(update=update) if update else settings


def env_or_none(name: str) -> EnvVar | None:
    """``EnvVar(name)`` when the variable is set in this process, else None (the field
    then falls back to the settings): an unset ``EnvVar`` would fail resource loading."""
    return EnvVar(name) if os.environ.get(name) else None
