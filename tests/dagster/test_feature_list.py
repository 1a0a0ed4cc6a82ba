"""The route table, the code location and the command line are collected from their feature
modules: a module that declares definitions but is missing from the list (or a list entry
without a module) fails here instead of silently dropping out of the API, Dagster or the
CLI."""

from __future__ import annotations

import pkgutil

import click

import api.routes as routes_package
import api.schemas as schemas_package
import memory_platform.assets as assets_package
import memory_platform.cli as cli_package
import memory_platform.sensors as sensors_package
from memory_platform.cli import main
from memory_platform.definitions import build_definitions
from memory_platform.foundation.features import FEATURES, modules
from memory_platform.foundation.settings import get_settings


def _module_names(package) -> set[str]:
    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_every_feature_module_of_an_adapter_folder_is_a_listed_feature():
    assert _module_names(assets_package) <= set(FEATURES)
    assert _module_names(sensors_package) <= set(FEATURES)
    assert _module_names(routes_package) - {"__init__"} <= set(FEATURES)
    assert _module_names(schemas_package) - {"common"} <= set(FEATURES)
    every = (_module_names(assets_package) | _module_names(sensors_package)
             | _module_names(routes_package))
    assert set(FEATURES) <= every, set(FEATURES) - every


def test_the_code_location_holds_what_every_feature_module_declares():
    settings = get_settings()
    definitions = build_definitions(settings=settings)
    repository = definitions.get_repository_def()
    jobs = {job.name for job in repository.get_all_jobs()}
    sensors = {sensor.name for sensor in repository.sensor_defs}
    for module in modules("memory_platform.assets"):
        declared = getattr(module, "DEFINITIONS", None)
        if declared is None:
            assert getattr(module, "STEPS", ()), f"{module.__name__}: no DEFINITIONS, no STEPS"
            continue
        assert {job.name for job in declared.jobs} <= jobs, module.__name__
    for module in modules("memory_platform.sensors"):
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
