"""The code location and the command line are collected from their feature modules: a module
that declares definitions but is missing from the list (or a list entry without a module)
fails here instead of silently dropping out of Dagster or the CLI."""

from __future__ import annotations

import pkgutil

import click

import memory_platform.assets as assets_package
import memory_platform.cli as cli_package
import memory_platform.sensors as sensors_package
from memory_platform.cli import main
from memory_platform.definitions import build_definitions
from memory_platform.feature_modules import modules_named
from memory_platform.orchestration.features import FEATURES
from memory_platform.settings import get_settings


def _module_names(package) -> set[str]:
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_every_assets_and_sensors_module_is_a_listed_feature():
    assert _module_names(assets_package) <= set(FEATURES)
    assert _module_names(sensors_package) <= set(FEATURES)
    assert set(FEATURES) <= _module_names(assets_package) | _module_names(sensors_package)


def test_the_code_location_holds_what_every_feature_module_declares():
    settings = get_settings()
    definitions = build_definitions(settings=settings)
    repository = definitions.get_repository_def()
    jobs = {job.name for job in repository.get_all_jobs()}
    sensors = {sensor.name for sensor in repository.sensor_defs}
    for module in modules_named("memory_platform.assets", FEATURES):
        declared = getattr(module, "DEFINITIONS", None)
        if declared is None:
            assert getattr(module, "STEPS", ()), f"{module.__name__}: no DEFINITIONS, no STEPS"
            continue
        assert {job.name for job in declared.jobs} <= jobs, module.__name__
    for module in modules_named("memory_platform.sensors", FEATURES):
        automations = module.automations(settings)
        assert {sensor.name for sensor in automations.sensors} <= sensors, module.__name__


def test_every_command_module_adds_its_commands_to_the_cli():
    registered = set(main.commands.values())
    modules = _module_names(cli_package) - {"common"}
    for name in modules:
        module = __import__(f"memory_platform.cli.{name}", fromlist=["COMMANDS"])
        commands = getattr(module, "COMMANDS", None)
        assert commands, f"memory_platform/cli/{name}.py declares no COMMANDS"
        assert all(isinstance(c, click.Command) for c in commands)
        assert set(commands) <= registered, name
