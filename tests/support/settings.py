"""Settings for a test database: the hash embedding (no model to load, deterministic) and
no `.env` file, whatever the machine has configured."""

from __future__ import annotations

from typing import Any

from memory_platform.foundation.settings import Settings


def hash_embedding_settings(database_url: str, **overrides: Any) -> Settings:
    return Settings(database_url=database_url, embedding_provider="hash",
                    _env_file=None, **overrides)  # type: ignore[call-arg]
