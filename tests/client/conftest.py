"""The real API for the client and the framework integrations: uvicorn on a loopback port
(tests/support/live_server.py) over a fresh migrated database of the module, with the hash
embedding (deterministic, no model to load). Keys are made in SQL, as an operator would
with ``memory-platform keys create``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_platform.foundation.settings import Settings
from tests.api.conftest import KeyMaker, key_maker, make_settings
from tests.support.live_server import LiveServer

READ, WRITE, REVIEW, ADMIN = "memory:read", "memory:write", "memory:review", "admin"


def live_settings(database_url: str, data_dir: Path, **overrides: object) -> Settings:
    return make_settings(database_url, data_dir, **overrides)


@pytest.fixture(scope="module")
def live_api(module_database_url: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One API for the module (each test uses users of its own, so tests stay apart)."""
    settings = live_settings(module_database_url, tmp_path_factory.mktemp("client-api"),
                             webhook_allow_private_targets=True)  # a loopback webhook
    with LiveServer(settings) as server:
        yield server


@pytest.fixture(scope="module")
def keys(module_database_url: str) -> KeyMaker:
    """``keys(user, scopes=..., runtime=..., agent=...)`` -> a live token of that user."""
    return key_maker(module_database_url)
