"""``memory-platform``: the command line of the platform, one module per command group.

Every command reads the same settings (``MEMORY_*`` environment, ``.env``); run any of them
with ``--help``.
"""

from __future__ import annotations

import click

from memory_platform.cli.bench import bench
from memory_platform.cli.common import PlatformGroup
from memory_platform.cli.config import config
from memory_platform.cli.db import db
from memory_platform.cli.demo import demo
from memory_platform.cli.dream import dream
from memory_platform.cli.graph import graph
from memory_platform.cli.imports import embeddings, import_command
from memory_platform.cli.keys import keys
from memory_platform.cli.members import members, sessions
from memory_platform.cli.portability import export_command
from memory_platform.cli.review import review
from memory_platform.cli.serve import api_command, dev_command, mcp_command
from memory_platform.cli.settings_cmd import settings_group
from memory_platform.cli.users import users
from memory_platform.cli.workspace import import_transcripts_command, workspace


@click.group(cls=PlatformGroup,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memory-platform")
def main() -> None:
    """Durable, auditable memory for LLM agents: PostgreSQL + pgvector ledger, Dagster
    maintenance, Starlette API."""


for command in (config, db, api_command, dev_command, bench, keys, members, sessions,
                mcp_command, import_command, embeddings, dream, graph, demo, workspace,
                import_transcripts_command, users, review, settings_group, export_command):
    main.add_command(command)
