"""Fixtures of the demo tests: one migrated database per module, one instance per test, hash
embeddings (small, deterministic, offline), the extractive model as the default, and an
environment without stray MEMORY_* values (the CLI tests set their own)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from memory_platform.foundation.settings import Settings
from tests.support.environment import clean_environment  # noqa: F401


@pytest.fixture
def instance() -> str:
    return f"demo-{uuid.uuid4().hex[:10]}"


SETTINGS_VALUES = {"embedding_provider": "hash", "hash_embedding_dimensions": 64,
                   "maintenance_default_model": "extractive"}


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=module_database_url, data_dir=tmp_path,
                    _env_file=None, **SETTINGS_VALUES)  # type: ignore[call-arg]


@pytest.fixture
def cli_env(module_database_url: str, tmp_path: Path) -> dict[str, str]:
    """The environment of a CliRunner invocation against the module's database."""
    return {"MEMORY_DATABASE_URL": module_database_url, "MEMORY_DATA_DIR": str(tmp_path),
            "MEMORY_EMBEDDING_PROVIDER": "hash", "MEMORY_HASH_EMBEDDING_DIMENSIONS": "64",
            "MEMORY_MAINTENANCE_DEFAULT_MODEL": "extractive"}
