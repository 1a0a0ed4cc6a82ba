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

import threading
import time
from typing import Any

import psycopg

from memory_platform.dreaming.extractive import NAME as EXTRACTIVE
from memory_platform.dreaming.extractive import ExtractiveModel
from memory_platform.llm.base import MaintenanceModel, ModelError
from memory_platform.llm.openai_compatible import OpenAICompatibleModel
from memory_platform.settings import Settings

SETTING_KEY = "memory_dreaming_model"
MAX_MODEL_CHARS = 200
SOURCES = ("explicit", "app_settings", "settings", "default")

_cache: dict[tuple[Any, ...], tuple[float, str]] = {}
_cache_lock = threading.Lock()


def _database_identity(conn: psycopg.Connection) -> tuple[Any, ...]:
    info = conn.info
    return (info.host, info.port, info.dbname)


def clear_model_cache() -> None:
    """Forget every cached ``memory_dreaming_model`` value of this process."""
    with _cache_lock:
        _cache.clear()


def normalise_model_name(value: str | None) -> str:
    """Stripped ``value`` ('' = automatic); rejects whitespace, control chars, huge names."""
    name = (value or "").strip()
    if len(name) > MAX_MODEL_CHARS:
        raise ValueError(f"model reference longer than {MAX_MODEL_CHARS} characters")
    if any(c.isspace() or not c.isprintable() for c in name):
        raise ValueError(f"model reference {name!r} contains whitespace or control characters")
    return name


def read_dreaming_model(conn: psycopg.Connection, settings: Settings, instance_key: str) -> str:
    """The persisted ``memory_dreaming_model`` of the instance ('' = automatic), cached."""
    key = (*_database_identity(conn), instance_key)
    now = time.monotonic()
    ttl = settings.settings_cache_seconds
    if ttl > 0:
        with _cache_lock:
            hit = _cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
    row = conn.execute(
        "SELECT value FROM app_settings WHERE instance_key = %s AND key = %s",
        (instance_key, SETTING_KEY),
    ).fetchone()
    value = (row[0] or "").strip() if row else ""
    if ttl > 0:
        with _cache_lock:
            _cache[key] = (now + ttl, value)
    return value


def set_dreaming_model(conn: psycopg.Connection, instance_key: str,
                       model_or_empty: str | None) -> str:
    """Persist the instance's Dreaming model ('' or None = automatic); returns the stored
    value. This process sees it at once; other processes within ``settings_cache_seconds``."""
    value = normalise_model_name(model_or_empty)
    conn.execute(
        "INSERT INTO app_settings (instance_key, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (instance_key, key) DO UPDATE SET value = EXCLUDED.value",
        (instance_key, SETTING_KEY, value),
    )
    with _cache_lock:
        _cache.pop((*_database_identity(conn), instance_key), None)
    return value


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
    """The client of exactly ``name``: ``extractive`` or an OpenAI-compatible model at
    ``maintenance_base_url`` (else ``openai_base_url``, else OpenAI) with
    ``maintenance_api_key`` (else ``openai_api_key``). ``options`` go to the
    OpenAI-compatible client (``phase_timeout_seconds``, ``idle_timeout_seconds``)."""
    name = normalise_model_name(name)
    if not name:
        raise ModelError("unavailable", "no maintenance model named")
    if name == EXTRACTIVE:
        return ExtractiveModel(settings)
    base_url = settings.maintenance_base_url or settings.openai_base_url
    api_key = settings.maintenance_api_key or settings.openai_api_key
    if not base_url and not (api_key and api_key.get_secret_value()):
        raise ModelError(
            "unavailable",
            f"maintenance model {name!r} is OpenAI-compatible but neither a base URL nor an "
            "API key is configured: set MEMORY_MAINTENANCE_BASE_URL and/or "
            "MEMORY_MAINTENANCE_API_KEY (MEMORY_OPENAI_BASE_URL / MEMORY_OPENAI_API_KEY are "
            f"used when those are unset), or choose '{EXTRACTIVE}' explicitly",
            diagnostic={"model": name},
        )
    return OpenAICompatibleModel(name, base_url, api_key, settings, **options)
