"""The Dagster code location declares the ledger tables, and its instance storage works on our
PostgreSQL."""

from __future__ import annotations

import uuid

import yaml
from dagster import DagsterInstance

from memory_platform.definitions import defs
from memory_platform.orchestration.home import prepare_dagster_home
from tests.conftest import drop_database


def test_ledger_tables_are_declared_as_external_assets():
    keys = {key.to_user_string() for key in defs().resolve_all_asset_keys()}
    assert {"agent_memories", "agent_memory_assertions", "wiki_change_proposals"} <= keys


def test_dagster_home_uses_psycopg2_storage_that_dagster_can_open(settings, server_url):
    # A storage database of its own: other tests launch Dagster runs into the default one.
    name = f"dagster_{uuid.uuid4().hex[:12]}"
    settings = settings.model_copy(update={"dagster_database_name": name})
    home = prepare_dagster_home(settings)
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    url = config["storage"]["postgres"]["postgres_url"]
    assert url.startswith("postgresql+psycopg2://")
    assert config["run_monitoring"]["enabled"] is True
    instance = DagsterInstance.from_config(str(home))
    try:
        assert instance.get_runs() == []  # tables created, queries answer
    finally:
        instance.dispose()
        drop_database(server_url, name)
