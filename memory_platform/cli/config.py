"""`memory-platform config`: the effective settings."""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup
from memory_platform.foundation.settings import get_settings


@click.group(cls=PlatformGroup)
def config() -> None:
    """Inspect the effective configuration."""


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def config_show(as_json: bool) -> None:
    """Print the effective settings (environment + .env + defaults), secrets redacted."""
    values = get_settings().redacted()
    if as_json:
        click.echo(json.dumps(values, indent=2, default=str))
        return
    width = max(len(name) for name in values)
    for name, value in values.items():
        click.echo(f"MEMORY_{name.upper():<{width}}  {value}")


COMMANDS = (config,)  # collected by memory_platform.cli
