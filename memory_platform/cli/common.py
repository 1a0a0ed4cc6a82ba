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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memory_platform.settings import get_settings


def error_message(exc: BaseException) -> str | None:
    """What the operator is told about ``exc``; None for an error that is a bug (it keeps
    its traceback)."""
    from memory_platform.errors import DreamLocked, MemoryPlatformError

    if isinstance(exc, DreamLocked):
        return f"{exc.message}; try again when the running Dream ends"
    if isinstance(exc, MemoryPlatformError):
        return exc.message
    # Failures outside the domain that the operator can act on (imported only now: most
    # commands never meet them).
    from memory_platform.db.backup import BackupError
    from memory_platform.db.migrations import MigrationError
    from memory_platform.embeddings.base import EmbeddingError

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
    from memory_platform.db import migrations
    from memory_platform.db.connection import connect

    settings = settings or get_settings()
    conn = connect(settings, autocommit=True)
    try:
        migrations.ensure_current(conn, settings.migrations_dir)
    except migrations.MigrationError:
        conn.close()
        raise
    return conn
