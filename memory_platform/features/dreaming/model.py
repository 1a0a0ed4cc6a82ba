"""Which maintenance model a Dream uses, and the client for it.

Resolution order (first non-empty wins, the source is returned with the model):

1. ``explicit``: the model named on a manual/admin run;
2. ``app_settings``: the instance's persisted ``memory_dreaming_model`` row in
   ``app_settings`` (an empty value means automatic), re-read through a per-process cache of
   ``settings_cache_seconds`` (5 s) keyed by (database, instance), so saving it needs no
   restart;
3. ``settings``: ``MEMORY_MAINTENANCE_MODEL``;
4. ``default``: ``MEMORY_MAINTENANCE_DEFAULT_MODEL``, which is ``extractive`` (the offline
   deterministic baseline) in the dev profile; a deployment with a real provider sets a
   real model at step 3 or 4.

The resolved name is exact: :func:`model_client` builds a client for exactly that model and
never substitutes another one. An OpenAI-compatible model that cannot be reached because
nothing is configured raises ``ModelError('unavailable')`` naming the settings to set.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memory_platform.features.dreaming.extractive import NAME as EXTRACTIVE
from memory_platform.features.dreaming.extractive import ExtractiveModel
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import MaintenanceModel, ModelError
from memory_platform.shared.llm.selection import (
    SETTING_KEY,
    clear_model_cache,
    http_model_client,
    normalise_model_name,
    read_dreaming_model,
    set_dreaming_model,
)

__all__ = ["EXTRACTIVE", "SETTING_KEY", "SOURCES", "clear_model_cache", "model_client",
           "normalise_model_name", "read_dreaming_model", "resolve_model_name",
           "set_dreaming_model"]

SOURCES = ("explicit", "app_settings", "settings", "default")


def resolve_model_name(conn: psycopg.Connection, settings: Settings, instance_key: str,
                       explicit: str | None = None) -> tuple[str, str]:
    """(model, source) by the order in the module docstring; source is one of SOURCES."""
    name = normalise_model_name(explicit)
    if name:
        return name, "explicit"
    name = read_dreaming_model(conn, settings, instance_key)
    if name:
        return name, "app_settings"
    name = normalise_model_name(settings.maintenance_model)
    if name:
        return name, "settings"
    return normalise_model_name(settings.maintenance_default_model), "default"


def model_client(settings: Settings, name: str, **options: Any) -> MaintenanceModel:
    """The client of exactly ``name``: ``extractive`` or an OpenAI-compatible model
    (:func:`memory_platform.shared.llm.selection.http_model_client`). ``options`` go to the
    OpenAI-compatible client (``phase_timeout_seconds``, ``idle_timeout_seconds``)."""
    name = normalise_model_name(name)
    if not name:
        raise ModelError("unavailable", "no maintenance model named")
    if name == EXTRACTIVE:
        return ExtractiveModel(settings)
    return http_model_client(settings, name, offline_name=EXTRACTIVE, **options)
