"""Which maintenance model is configured, and the client of exactly that model.

The instance's persisted model choice (``app_settings`` key ``memory_dreaming_model``) is read
through a per-process cache of ``settings_cache_seconds`` keyed by (database, instance), so
saving it needs no restart. :func:`http_model_client` builds an OpenAI-compatible client for
exactly the named model or raises ``ModelError('unavailable')`` naming the settings to set;
it never substitutes another model. Dreaming (``dreaming/model.py``), session maintenance and
graph extraction resolve their model on top of these.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import psycopg

from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import refuse_secret
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import ModelError
from memory_platform.shared.llm.openai_compatible import OpenAICompatibleModel

# The offline deterministic maintenance model (Dreaming, sessions, graph extraction): only ever
# used when configured by this name, never as a fallback.
OFFLINE_MODEL = "extractive"
SETTING_KEY = "memory_dreaming_model"
MAX_MODEL_CHARS = 200

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


# A model reference as providers spell them: "gpt-4o-mini", "openai/gpt-4o",
# "llama3.1:8b", "claude-3-5-sonnet@20240620", "models/gemini-1.5-pro".
_MODEL_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")


def checked_model_name(value: str | None) -> str:
    """The model reference to persist ('' = automatic), or InvalidInput: the shape of a
    model name (letters, digits and ``._:/@+-``, at most MAX_MODEL_CHARS), never a secret
    (a settings value is stored and shown like memory: a pasted API key stays out)."""
    name = (value or "").strip()
    refuse_secret(name, field="model")          # first: no message below echoes a secret
    if len(name) > MAX_MODEL_CHARS or (name and not _MODEL_SHAPE.fullmatch(name)):
        raise InvalidInput(f"model must be a model name of at most {MAX_MODEL_CHARS} "
                           "characters: letters, digits and . _ : / @ + -, starting with a "
                           "letter or digit", details={"field": "model"})
    return name


def set_dreaming_model(conn: psycopg.Connection, instance_key: str,
                       model_or_empty: str | None) -> str:
    """Persist the instance's Dreaming model ('' or None = automatic); returns the stored
    value. This process sees it at once; other processes within ``settings_cache_seconds``.
    A value that is not a model name, or holds a secret, is refused (InvalidInput,
    CredentialDetected) before anything is stored."""
    value = checked_model_name(model_or_empty)
    conn.execute(
        "INSERT INTO app_settings (instance_key, key, value) VALUES (%s, %s, %s) "
        "ON CONFLICT (instance_key, key) DO UPDATE SET value = EXCLUDED.value",
        (instance_key, SETTING_KEY, value),
    )
    with _cache_lock:
        _cache.pop((*_database_identity(conn), instance_key), None)
    return value


def http_model_client(settings: Settings, name: str, *, offline_name: str,
                      **options: Any) -> OpenAICompatibleModel:
    """The OpenAI-compatible client of exactly ``name`` at ``maintenance_base_url`` (else
    ``openai_base_url``, else OpenAI) with ``maintenance_api_key`` (else ``openai_api_key``).
    ``offline_name`` is the offline model the error message suggests. ``options`` go to the
    client (``phase_timeout_seconds``, ``idle_timeout_seconds``)."""
    base_url = settings.maintenance_base_url or settings.openai_base_url
    api_key = settings.maintenance_api_key or settings.openai_api_key
    if not base_url and not (api_key and api_key.get_secret_value()):
        raise ModelError(
            "unavailable",
            f"maintenance model {name!r} is OpenAI-compatible but neither a base URL nor an "
            "API key is configured: set MEMORY_MAINTENANCE_BASE_URL and/or "
            "MEMORY_MAINTENANCE_API_KEY (MEMORY_OPENAI_BASE_URL / MEMORY_OPENAI_API_KEY are "
            f"used when those are unset), or choose '{offline_name}' explicitly",
            diagnostic={"model": name},
        )
    return OpenAICompatibleModel(name, base_url, api_key, settings, **options)
