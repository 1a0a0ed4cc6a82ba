"""Fixtures of the Dagster tests: a fresh migrated database per test, the platform settings
taken from the environment exactly as a Dagster code server takes them (hash embeddings,
the extractive model), an ephemeral Dagster instance, and seeding through store_memory."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from dagster import DagsterInstance, instance_for_test
from pgvector.psycopg import register_vector

from memory_platform.features.dreaming.model import clear_model_cache
from memory_platform.features.dreaming.partitions import Partition
from memory_platform.foundation.db.connection import close_process_pools
from memory_platform.foundation.settings import Settings, get_settings
from memory_platform.orchestration.partitions import AUDIENCES
from memory_platform.resources import default_resources
from memory_platform.shared.access import AccessContext
from memory_platform.shared.users import register_user
from tests.conftest import drop_database
from tests.dreaming.support import HUMAN_FACT, TEAM_SESSIONS, remember


@pytest.fixture(autouse=True)
def _no_inherited_dagster_instance() -> Iterator[None]:
    """Dagster keeps "the current instance's state storage" in a context variable that a
    schedule/sensor context opened without ``with`` (in any earlier test) leaves pointing at
    a disposed instance; loading Definitions then fails. Start every test without one."""
    from dagster._core.storage.defs_state.base import set_defs_state_storage

    with set_defs_state_storage(None):
        yield


@pytest.fixture(scope="session")
def dagster_database(server_url: str) -> Iterator[str]:
    """One Dagster storage database for the session (creating Dagster's schema costs
    seconds; runs of different tests are told apart by run id)."""
    name = f"dagster_{uuid.uuid4().hex[:12]}"
    yield name
    drop_database(server_url, name)


@pytest.fixture
def settings(database_url: str, dagster_database: str, tmp_path: Path,
             monkeypatch) -> Iterator[Settings]:
    """The process settings of a Dagster code server/run worker for this test's database.

    Resources read ``get_settings()`` (the environment), so the test sets the environment
    and clears the settings cache before and after."""
    for name in [n for n in os.environ if n.startswith(("MEMORY_", "OPENAI_"))
                 and not n.startswith("MEMORY_TEST_")]:
        monkeypatch.delenv(name)
    env = {"MEMORY_DATABASE_URL": database_url, "MEMORY_EMBEDDING_PROVIDER": "hash",
           "MEMORY_HASH_EMBEDDING_DIMENSIONS": "64",
           "MEMORY_MAINTENANCE_DEFAULT_MODEL": "extractive",
           "MEMORY_DATA_DIR": str(tmp_path / "state"),
           "MEMORY_DAGSTER_DATABASE_NAME": dagster_database}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # no stray .env file
    get_settings.cache_clear()
    clear_model_cache()
    settings = get_settings()
    assert settings == Settings(database_url=database_url, embedding_provider="hash",
                                hash_embedding_dimensions=64,
                                maintenance_default_model="extractive",
                                data_dir=tmp_path / "state",
                                dagster_database_name=env["MEMORY_DAGSTER_DATABASE_NAME"],
                                _env_file=None)  # type: ignore[call-arg]
    yield settings
    close_process_pools()
    get_settings.cache_clear()
    clear_model_cache()


@pytest.fixture
def db(database_url: str, settings: Settings) -> Iterator[psycopg.Connection]:
    with psycopg.connect(database_url, autocommit=True) as connection:
        register_vector(connection)
        yield connection


@pytest.fixture
def resources(settings: Settings) -> dict:
    """The code location's own resources (settings from the environment)."""
    return default_resources()


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with DagsterInstance.ephemeral() as dagster_instance:
        yield dagster_instance


@pytest.fixture
def referenced_instance() -> Iterator[DagsterInstance]:
    """A temporary instance with an instance ref (a schedule context needs one; an
    ephemeral instance has none)."""
    with instance_for_test() as dagster_instance:
        yield dagster_instance


def new_instance_key() -> str:
    return f"inst-{uuid.uuid4().hex[:10]}"


def seed_team(db, settings, instance_key: str) -> Partition:
    """Four human session summaries and one direct human fact in the team audience, by the
    registered team members ada and bob (a registered user's profile is stored)."""
    for user in ("ada", "bob"):
        register_user(db, instance_key, user, created_by="test")
    for session, texts in TEAM_SESSIONS.items():
        ctx = AccessContext(instance_key, user_id="ada", session_key=session)
        for text in texts:
            remember(db, settings, ctx, text, visibility="team")
    remember(db, settings, AccessContext(instance_key, user_id="bob"), HUMAN_FACT,
             source_type="fact", visibility="team")
    return Partition(instance_key, "team", instance_key)


def seed_private(db, settings, instance_key: str, user: str, count: int = 3) -> Partition:
    ctx = AccessContext(instance_key, user_id=user, session_key=f"chat:{user}-1")
    notes = ["I prefer dark mode in every editor I use.",
             "My standing rule: never deploy on Fridays after noon.",
             "I decided to keep my notes in Markdown files under version control.",
             "Remember that my dentist appointment is always on the first Monday."]
    for text in notes[:count]:
        remember(db, settings, ctx, text, visibility="private")
    return Partition(instance_key, "private", user)


def add_partitions(instance: DagsterInstance, *partitions: Partition) -> None:
    instance.add_dynamic_partitions(AUDIENCES, [p.partition_key for p in partitions])
