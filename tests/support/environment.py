"""An environment without stray MEMORY_*/OPENAI_* values and with empty settings and
model-resolution caches, for tests that resolve settings or models themselves.

Use it as an autouse fixture in a conftest: ``from tests.support.environment import
clean_environment  # noqa: F401``.
"""

from __future__ import annotations

import os

import pytest

from memory_platform.features.dreaming.model import clear_model_cache
from memory_platform.foundation.settings import get_settings


def _clear_caches() -> None:
    clear_model_cache()
    get_settings.cache_clear()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in [name for name in os.environ if name.startswith(("MEMORY_", "OPENAI_"))
                 and not name.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    _clear_caches()
    yield
    _clear_caches()
