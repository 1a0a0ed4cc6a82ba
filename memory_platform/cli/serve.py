"""`memory-platform api|dev|mcp`: run the services. The composition root of the HTTP API: the
app it serves gets the Dagster Dream launcher."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from memory_platform.errors import Conflict
from memory_platform.settings import Settings, get_settings, redact_url

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from api.launching import DreamLauncher, LaunchedRun


def _database_identity(settings: Settings) -> tuple[str, str]:
    if settings.database_url is not None:
        return redact_url(settings.database_url.get_secret_value()), settings.database_name
    return f"embedded server at {settings.pgdata}", settings.database_name


def refuse_another_database(settings: Settings) -> None:
    """Conflict (``orchestration_settings_mismatch``) when a Dagster run would dream another
    database than ``settings`` names: the runs (queued to the daemon, or executed in this
    process) build their resources from the process environment (MEMORY_*), not from the
    app's settings object. That only happens when the app was created with explicit
    settings (tests, embedding)."""
    ours, theirs = _database_identity(settings), _database_identity(get_settings())
    if ours != theirs:
        raise Conflict("Dagster runs use the database of this process's environment "
                       f"({theirs[0]}, database {theirs[1]}), but this API serves "
                       f"{ours[0]}, database {ours[1]}: launch from a process whose MEMORY_* "
                       "settings match, or run `memory-platform dream run`",
                       code="orchestration_settings_mismatch")


def same_database_only(launch: DreamLauncher) -> DreamLauncher:
    """``launch``, called only after :func:`refuse_another_database` let the run through."""

    def checked(settings: Settings, partition_keys: Sequence[str], *, model: str | None,
                dry_run: bool) -> LaunchedRun:
        refuse_another_database(settings)
        return launch(settings, partition_keys, model=model, dry_run=dry_run)

    return checked


def launch_through_dagster(settings: Settings, partition_keys: Sequence[str], *,
                           model: str | None, dry_run: bool) -> LaunchedRun:
    """One Dagster run for ``partition_keys``, answered at once (see ``launch_dream_run``)."""
    from memory_platform.launch import launch_dream_run

    return launch_dream_run(settings, partition_keys, model=model, dry_run=dry_run)


def create_api_app() -> Starlette:
    """The uvicorn factory of `memory-platform api`: the API for the environment's settings,
    launching Dreams through Dagster."""
    from api.app import create_app

    return create_app(get_settings(), launcher=same_database_only(launch_through_dagster))


@click.command("api")
@click.option("--host", default=None, help="Bind address (default MEMORY_API_HOST).")
@click.option("--port", type=int, default=None, help="Port (default MEMORY_API_PORT).")
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes.")
def api_command(host: str | None, port: int | None, workers: int) -> None:
    """Run the HTTP API alone (uvicorn)."""
    import uvicorn

    settings = get_settings()
    uvicorn.run(
        "memory_platform.cli.serve:create_api_app",
        factory=True,
        host=host or settings.api_host,
        port=port or settings.api_port,
        workers=workers,
        log_level="info",
        access_log=False,  # one log line per request costs CPU; /metrics counts requests
    )


@click.command("dev")
@click.option("--no-dagster", is_flag=True, help="Run the API only.")
def dev_command(no_dagster: bool) -> None:
    """Run everything locally: database, migrations, Dagster UI + daemon, API.

    Ctrl-C (or SIGTERM) stops all of it, the embedded database included. When the API port
    (MEMORY_API_PORT) or the Dagster port (MEMORY_DAGSTER_PORT) is taken, it says which one,
    offers free ones and exits with status 1 before starting anything."""
    from memory_platform.devserver import run_dev

    sys.exit(run_dev(get_settings(), with_dagster=not no_dagster))


@click.command("mcp")
def mcp_command() -> None:
    """Run the stdio MCP server for coding agents (Codex, Claude Code) over the HTTP API.

    Environment: MEMORY_API_URL (default http://127.0.0.1:8080); MEMORY_READ_TOKEN (a
    memory:read key) lists memory_search and memory_get; the separate MEMORY_WRITE_TOKEN (a
    memory:write key) lists memory_store. stdout is the protocol; diagnostics go to stderr."""
    from api.mcp import run

    run()
