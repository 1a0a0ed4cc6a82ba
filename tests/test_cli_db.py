"""`memory-platform db migrate|status` against a real database."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memory_platform.cli import main
from memory_platform.settings import get_settings


@pytest.fixture
def cli_env(monkeypatch):
    def use(url: str) -> CliRunner:
        monkeypatch.setenv("MEMORY_DATABASE_URL", url)
        get_settings.cache_clear()
        return CliRunner()

    yield use
    get_settings.cache_clear()


def test_db_migrate_then_status_lists_every_migration_as_applied(cli_env, empty_database_url):
    runner = cli_env(empty_database_url)
    migrated = runner.invoke(main, ["db", "migrate"])
    assert migrated.exit_code == 0, migrated.output
    assert "applying 0001_" in migrated.output

    status = runner.invoke(main, ["db", "status", "--json"])
    assert status.exit_code == 0, status.output
    report = json.loads(status.output)
    assert report["vector"].startswith("0.8.")
    assert report["server_version"].startswith("18")
    assert report["migrations"] and all(m["state"] == "applied" for m in report["migrations"])


def test_db_status_on_an_empty_database_says_what_to_do(cli_env, empty_database_url):
    result = cli_env(empty_database_url).invoke(main, ["db", "status"])
    assert result.exit_code == 0
    assert "pending" in result.output and "memory-platform db migrate" in result.output


def test_db_url_redacts_the_password(cli_env):
    result = cli_env("postgresql://app:topsecret@127.0.0.1:1/memory").invoke(main, ["db", "url"])
    assert result.exit_code == 0
    assert "topsecret" not in result.output and "app:**********@" in result.output
