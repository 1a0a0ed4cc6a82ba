"""Fixtures of the Dreaming tests: one migrated database per module, one instance per test,
hash embeddings (deterministic, offline) and a clean model-resolution cache.

The Dreaming lock is one advisory lock per database, so the tests of a module (which run one
after another) share it without interfering.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_platform.llm.resolution import clear_model_cache
from memory_platform.settings import Settings


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    for name in [name for name in os.environ if name.startswith(("MEMORY_", "OPENAI_"))
                 and not name.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    clear_model_cache()
    yield
    clear_model_cache()


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=module_database_url, embedding_provider="hash",
                    hash_embedding_dimensions=64, data_dir=tmp_path / "state",
                    _env_file=None)  # type: ignore[call-arg]
