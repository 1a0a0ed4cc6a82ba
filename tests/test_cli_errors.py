"""The command line maps errors in one place (``cli.common``): every group and command
reports a domain error (``errors.MemoryPlatformError``) and the operator-facing failures of
the database, a backup or an embedding provider as ``Error: <message>`` on stderr with exit
status 1, never a traceback, whichever command meets it and whether it runs under
``memory-platform`` or as its own group."""

from __future__ import annotations

import uuid

import click
import pytest
from click.testing import CliRunner

from memory_platform.cli import main
from memory_platform.cli.common import PlatformCommand, PlatformGroup, error_message
from memory_platform.cli.keys import keys
from memory_platform.foundation.db.migrations import PendingMigrations
from memory_platform.foundation.errors import DreamLocked, InvalidInput, NotFound
from memory_platform.foundation.settings import get_settings
from memory_platform.shared.embeddings.base import EmbeddingError


def _commands(command: click.Command, path: str = "memory-platform"):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, f"{path} {name}")


def test_every_group_and_command_reports_errors_in_the_one_handler():
    for path, command in _commands(main):
        expected = PlatformGroup if isinstance(command, click.Group) else PlatformCommand
        assert isinstance(command, expected), f"{path} is a {type(command).__name__}"


@pytest.fixture
def cli(monkeypatch, database_url):
    """``cli(group, *args)``: a command against the test database (stdout and stderr apart)."""
    monkeypatch.setenv("MEMORY_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "hash")
    monkeypatch.delenv("MEMORY_INSTANCE_KEY", raising=False)
    get_settings.cache_clear()
    yield lambda group, *args: CliRunner().invoke(group, list(args))
    get_settings.cache_clear()


def _assert_reported(result, message: str) -> None:
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception   # not a traceback
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout == ""


def test_a_domain_error_gets_the_same_message_and_status_in_any_command(cli):
    unknown = uuid.uuid4()
    # NotFound from `keys revoke`, InvalidInput from `graph search` (a traceback before).
    _assert_reported(cli(main, "keys", "revoke", str(unknown)),
                     f"no API key {str(unknown)!r}")
    _assert_reported(cli(main, "graph", "search", " "), "query is empty")


def test_a_group_run_on_its_own_reports_the_same(cli):
    unknown = str(uuid.uuid4())
    under_main = cli(main, "keys", "revoke", unknown)
    alone = cli(keys, "revoke", unknown)
    assert (alone.exit_code, alone.stderr) == (under_main.exit_code, under_main.stderr)
    _assert_reported(alone, f"no API key {unknown!r}")


@pytest.mark.parametrize(("error", "told"), [
    (InvalidInput("limit must be 1-100"), "limit must be 1-100"),
    (NotFound("no dream 1"), "no dream 1"),
    (DreamLocked("another Dream holds the lock"),
     "another Dream holds the lock; try again when the running Dream ends"),
    (EmbeddingError("no MEMORY_OPENAI_API_KEY configured"),
     "no MEMORY_OPENAI_API_KEY configured"),
    (PendingMigrations("2 migrations pending: run `memory-platform db migrate`"),
     "2 migrations pending: run `memory-platform db migrate`"),
    (ValueError("a bug"), None),
])
def test_what_the_operator_is_told(error, told):
    assert error_message(error) == told
