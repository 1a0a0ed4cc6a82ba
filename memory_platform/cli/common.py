"""What every command group shares: a connection to a current database, and the one place
where an error the platform reports to its operator becomes a CLI error.

Every group is a :class:`PlatformGroup` and every command a :class:`PlatformCommand` (a
group's commands are, by ``command_class``): a domain error (``errors.MemoryPlatformError``:
invalid input, not found, access denied, conflict, ...) and the operator-facing failures of
the database, a backup or an embedding provider end the command with ``Error: <message>``
on stderr and exit status 1, never a traceback; :func:`error_message` says what is told.
A command maps an error itself only to say more than this (``click.BadParameter`` naming
the option it came from).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memory_platform.foundation.settings import get_settings


def error_message(exc: BaseException) -> str | None:
    """What the operator is told about ``exc``; None for an error that is a bug (it keeps
    its traceback)."""
    from memory_platform.foundation.errors import DreamLocked, MemoryPlatformError

    if isinstance(exc, DreamLocked):
        return f"{exc.message}; try again when the running Dream ends"
    if isinstance(exc, MemoryPlatformError):
        return exc.message
    # Failures outside the domain that the operator can act on (imported only now: most
    # commands never meet them).
    from memory_platform.foundation.db.backup import BackupError
    from memory_platform.foundation.db.migrations import MigrationError
    from memory_platform.shared.embeddings.base import EmbeddingError

    if isinstance(exc, BackupError | MigrationError | EmbeddingError):
        return str(exc)
    return None


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn an error the operator is told about into a ``click.ClickException``."""
    try:
        yield
    except click.ClickException:
        raise
    except Exception as exc:
        message = error_message(exc)
        if message is None:
            raise
        raise click.ClickException(message) from exc


class PlatformCommand(click.Command):
    """A command whose errors are reported by :func:`reported_errors`."""

    def invoke(self, ctx: click.Context) -> Any:
        with reported_errors():
            return super().invoke(ctx)


class PlatformGroup(click.Group):
    """A group whose callback, commands and subgroups report errors by
    :func:`reported_errors` (invoked on its own, as the tests do, as well as under ``main``)."""

    command_class = PlatformCommand
    group_class = type          # click: subgroups are of this class too

    def invoke(self, ctx: click.Context) -> Any:
        with reported_errors():
            return super().invoke(ctx)


def platform_connection(settings=None):
    """An autocommit connection to a database whose schema is exactly the code's; a clear
    error (run `db migrate`, or restore an edited migration) otherwise."""
    from memory_platform.foundation.db import migrations
    from memory_platform.foundation.db.connection import connect

    settings = settings or get_settings()
    conn = connect(settings, autocommit=True)
    try:
        migrations.ensure_current(conn, settings.migrations_dir)
    except migrations.MigrationError:
        conn.close()
        raise
    return conn


def with_provider(settings, provider: str | None):
    """``settings`` with the embedding provider a command's --provider names (if any)."""
    return settings.model_copy(update={"embedding_provider": provider}) if provider else settings


class ProgressLine:
    """A progress line on stderr: rewritten in place on a terminal, one line every few
    seconds otherwise (logs)."""

    def __init__(self, every: float = 5.0) -> None:
        self.tty = sys.stderr.isatty()
        self.every = 0.2 if self.tty else every
        self.started = time.perf_counter()
        self.last = 0.0

    def show(self, text: str, *, force: bool = False) -> None:
        """Show ``text`` unless the last line is younger than the interval (or ``force``)."""
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        self.last = now
        if self.tty:
            click.echo(f"\r\033[K{text}", err=True, nl=False)
        else:
            click.echo(text, err=True)

    def done(self) -> None:
        """End the rewritten line so the next output starts on its own line."""
        if self.tty and self.last:
            click.echo("", err=True)

    def rate(self, count: int) -> float:
        """``count`` per second since the line was created."""
        elapsed = time.perf_counter() - self.started
        return count / elapsed if elapsed > 0 else 0.0
