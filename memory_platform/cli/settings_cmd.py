"""`memory-platform settings`: the persisted per-instance settings a person changes at runtime.

`settings set maintenance-model MODEL` persists the instance's Dreaming model (the
``memory_dreaming_model`` row of ``app_settings``; '' or ``auto`` = automatic); `settings
show` prints it with the model a Dream would use now and where that choice comes from
(explicit > app_settings > MEMORY_MAINTENANCE_MODEL > MEMORY_MAINTENANCE_DEFAULT_MODEL).
"""

from __future__ import annotations

import json

import click

from memory_platform.cli.common import PlatformGroup, platform_connection
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import get_settings

AUTOMATIC = "auto"


@click.group("settings", cls=PlatformGroup)
def settings_group() -> None:
    """Persisted runtime settings of an instance (the Dreaming maintenance model)."""


@settings_group.command("set")
@click.argument("name", type=click.Choice(["maintenance-model"]))
@click.argument("value")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
def settings_set(name: str, value: str, instance: str | None) -> None:
    """Persist a setting. maintenance-model: the exact model every Dream of the instance uses
    unless a run names one (`auto` or '' = automatic: the environment's model)."""
    from memory_platform.shared.llm.selection import set_dreaming_model

    settings = get_settings()
    key = instance or settings.instance_key
    try:
        with platform_connection(settings) as conn:
            stored = set_dreaming_model(conn, key, "" if value == AUTOMATIC else value)
    except (ValueError, InvalidInput) as exc:
        raise click.BadParameter(str(exc), param_hint="VALUE") from exc
    click.echo(f"{key}: maintenance-model = {stored or '(automatic)'}")


@settings_group.command("show")
@click.option("--instance", default=None, help="Instance (default MEMORY_INSTANCE_KEY).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def settings_show(instance: str | None, as_json: bool) -> None:
    """The persisted maintenance model and the model a Dream would use now, with its source."""
    from memory_platform.features.dreaming.model import resolve_model_name
    from memory_platform.shared.llm.selection import read_dreaming_model

    settings = get_settings()
    key = instance or settings.instance_key
    with platform_connection(settings) as conn:
        stored = read_dreaming_model(conn, settings, key)
        model, source = resolve_model_name(conn, settings, key)
    if as_json:
        click.echo(json.dumps({"instance": key, "maintenanceModel": stored or None,
                               "effectiveModel": model, "source": source}, indent=2))
        return
    click.echo(f"instance:          {key}")
    click.echo(f"maintenance-model: {stored or '(automatic)'}")
    click.echo(f"effective model:   {model or '-'} (from {source})")


COMMANDS = (settings_group,)  # collected by memory_platform.cli
