"""Fixtures of the maintenance-model tests: the scripted OpenAI-compatible server, clean
settings (no MEMORY_/OPENAI_ variables from the environment) and a clean model cache."""

from __future__ import annotations

import os

import pytest

from memory_platform.llm.resolution import clear_model_cache
from tests.support.openai_server import openai_server, openai_server_session  # noqa: F401


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    for name in [name for name in os.environ if name.startswith(("MEMORY_", "OPENAI_"))
                 and not name.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    clear_model_cache()
    yield
    clear_model_cache()

