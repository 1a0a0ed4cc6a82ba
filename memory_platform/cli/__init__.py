"""``memory-platform``: the command line of the platform, one module per command group.

Every command reads the same settings (``MEMORY_*`` environment, ``.env``); run any of them
with ``--help``.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from memory_platform.cli.common import PlatformGroup


@click.group(cls=PlatformGroup,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memory-platform")
def main() -> None:
    """Durable, auditable memory for LLM agents: PostgreSQL + pgvector ledger, Dagster
    maintenance, Starlette API."""


def _command_modules() -> list:
    """Every module of this package that declares ``COMMANDS`` (one per command group; a new
    group is a module, listed nowhere else; ``--help`` sorts the commands by name)."""
    modules = [importlib.import_module(f"{__name__}.{info.name}")
               for info in pkgutil.iter_modules(__path__)]
    return [module for module in modules if hasattr(module, "COMMANDS")]


for _module in _command_modules():
    for _command in _module.COMMANDS:
        main.add_command(_command)
