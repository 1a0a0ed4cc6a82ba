"""What every command group shares: a connection to a current database."""

from __future__ import annotations

import click

from memory_platform.settings import get_settings


def platform_connection(settings=None):
    """An autocommit connection to a database whose schema is exactly the code's; a clear
    error (run `db migrate`, or restore an edited migration) otherwise."""
    from memory_platform.db import migrations
    from memory_platform.db.connection import connect

    settings = settings or get_settings()
    conn = connect(settings, autocommit=True)
    try:
        migrations.ensure_current(conn, settings.migrations_dir)
    except migrations.MigrationError as exc:
        conn.close()
        raise click.ClickException(str(exc)) from exc
    return conn
