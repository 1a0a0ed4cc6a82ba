"""The `memory-platform` command through its entry point, for the import tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result


@pytest.fixture
def cli(database_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Result]]:
    """``cli("import", FILE, ...)``: the `memory-platform` command against ``database_url``."""
    from memory_platform.cli import main
    from memory_platform.foundation.settings import get_settings

    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("MEMORY_DATA_DIR", str(tmp_path / "state"))
    get_settings.cache_clear()
    try:
        yield lambda *args: CliRunner().invoke(main, [str(a) for a in args])
    finally:
        get_settings.cache_clear()
