"""Fixtures of the Dreaming tests: one migrated database per module, one instance per test,
hash embeddings (deterministic, offline) and a clean model-resolution cache.

The Dreaming lock is one advisory lock per database, so the tests of a module (which run one
after another) share it without interfering.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.db.connection import with_database
from memory_platform.llm.resolution import clear_model_cache
from memory_platform.settings import Settings
from tests.conftest import create_database, drop_database


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    for name in [name for name in os.environ if name.startswith(("MEMORY_", "OPENAI_"))
                 and not name.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    clear_model_cache()
    yield
    clear_model_cache()


@pytest.fixture(scope="module")
def module_database_url(server_url: str, template_database: str) -> Iterator[str]:
    name = create_database(server_url, template=template_database)
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture(scope="module")
def db(module_database_url: str) -> Iterator[psycopg.Connection]:
    """Autocommit connection to the module's migrated database."""
    with psycopg.connect(module_database_url, autocommit=True) as connection:
        register_vector(connection)
        yield connection


@pytest.fixture
def instance() -> str:
    return f"inst-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(module_database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=module_database_url, embedding_provider="hash",
                    hash_embedding_dimensions=64, data_dir=tmp_path / "state",
                    _env_file=None)  # type: ignore[call-arg]
