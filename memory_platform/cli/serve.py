"""`memory-platform api|dev|mcp`: run the services. uvicorn starts the API by its module
path (``api.app:create_app``): the platform package never imports the ``api`` package."""

from __future__ import annotations

import sys

import click

from memory_platform.cli.common import PlatformCommand
from memory_platform.foundation.settings import get_settings


@click.command("api", cls=PlatformCommand)
@click.option("--host", default=None, help="Bind address (default MEMORY_API_HOST).")
@click.option("--port", type=int, default=None, help="Port (default MEMORY_API_PORT).")
@click.option("--workers", type=int, default=1, show_default=True, help="Worker processes.")
def api_command(host: str | None, port: int | None, workers: int) -> None:
    """Run the HTTP API alone (uvicorn)."""
    import uvicorn

    from memory_platform.foundation.db.embedded import release_on_signals

    settings = get_settings()
    # uvicorn restores the SIGTERM handler it found and raises the signal again after its
    # graceful shutdown: with the default handler the process would die without releasing
    # the embedded server (atexit does not run on a signal). Installed first, this one is
    # what uvicorn restores, so the server is released (and stopped if this was its last
    # user) before the process dies of the signal.
    release_on_signals()
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host or settings.api_host,
        port=port or settings.api_port,
        workers=workers,
        log_level="info",
        access_log=False,  # one log line per request costs CPU; /metrics counts requests
    )


@click.command("dev", cls=PlatformCommand)
@click.option("--no-dagster", is_flag=True, help="Run the API only.")
def dev_command(no_dagster: bool) -> None:
    """Run everything locally: database, migrations, Dagster UI + daemon, API.

    Ctrl-C (or SIGTERM) stops all of it, the embedded database included. One runs per data
    directory (MEMORY_DATA_DIR): while one runs, another on the same directory names it (pid,
    start time, URLs) and exits with status 1 before starting anything. When the API port
    (MEMORY_API_PORT) or the Dagster port (MEMORY_DAGSTER_PORT) is taken, it says which one,
    offers free ones and exits with status 1 before starting anything."""
    from memory_platform.devserver import run_dev

    sys.exit(run_dev(get_settings(), with_dagster=not no_dagster))


@click.command("mcp", cls=PlatformCommand)
def mcp_command() -> None:
    """Run the stdio MCP server for coding agents (Codex, Claude Code) over the HTTP API.

    Environment: MEMORY_API_URL (default http://127.0.0.1:8080); MEMORY_READ_TOKEN (a
    memory:read key) lists memory_search and memory_get; the separate MEMORY_WRITE_TOKEN (a
    memory:write key) lists memory_store. stdout is the protocol; diagnostics go to stderr."""
    from memory_platform.mcp import run

    run()


COMMANDS = (api_command, dev_command, mcp_command,)  # collected by memory_platform.cli
