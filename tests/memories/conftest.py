"""Fixtures of the write-path tests: one migrated database per module, one instance per test.

Creating a database costs about half a second, so the tests of a module share one and keep
apart by writing under an instance key of their own (every table is keyed by instance, and
every read filters on it). Tests that change the schema (rename a table, add a failing
trigger) undo the change before they return.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from pgvector.psycopg import register_vector

from memory_platform.db.connection import with_database
from memory_platform.settings import Settings
from tests.conftest import create_database, drop_database


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
    """An instance key no other test uses."""
    return f"inst-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def hash_settings(module_database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=module_database_url, embedding_provider="hash",
                    data_dir=tmp_path / "state", _env_file=None)  # type: ignore[call-arg]
