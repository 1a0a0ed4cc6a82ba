"""Fixtures of the write-path tests: one migrated database per module, one instance per test.

Creating a database costs about half a second, so the tests of a module share one and keep
apart by writing under an instance key of their own (every table is keyed by instance, and
every read filters on it). Tests that change the schema (rename a table, add a failing
trigger) undo the change before they return.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_platform.foundation.settings import Settings
from tests.support.settings import hash_embedding_settings


@pytest.fixture
def hash_settings(module_database_url: str, tmp_path: Path) -> Settings:
    return hash_embedding_settings(module_database_url, data_dir=tmp_path / "state")
