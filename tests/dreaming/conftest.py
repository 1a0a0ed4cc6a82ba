"""Fixtures of the Dreaming tests: one migrated database per module, one instance per test,
hash embeddings (deterministic, offline) and a clean model-resolution cache.

The Dreaming lock is one advisory lock per database, so the tests of a module (which run one
after another) share it without interfering.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_platform.foundation.settings import Settings
from tests.support.environment import clean_environment  # noqa: F401
from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401
from tests.support.settings import hash_embedding_settings


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path) -> Settings:
    return hash_embedding_settings(module_database_url, hash_embedding_dimensions=64,
                                   data_dir=tmp_path / "state")
