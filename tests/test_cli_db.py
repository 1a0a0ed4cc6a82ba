"""`memory-platform db migrate|status|url|psql|repair-indexes` against a real database."""

from __future__ import annotations

import json
import os

import psycopg
import pytest
from click.testing import CliRunner

from api.schemas import StatusResponse
from memory_platform.cli import main
from memory_platform.cli.db import psql_target
from memory_platform.features.memories.bulk.indexes import (
    BULK_INDEX_TABLES,
    FULLTEXT_INDEXES,
    drop_fulltext_indexes,
    fulltext_index_exists,
    index_state,
    install_placeholders,
)
from memory_platform.features.operator_status import memory_status
from memory_platform.foundation.settings import get_settings
from memory_platform.shared.embeddings.generations import register_generation
from memory_platform.shared.embeddings.hashing import HashEmbeddingProvider


@pytest.fixture
def cli_env(monkeypatch):
    def use(url: str) -> CliRunner:
        monkeypatch.setenv("MEMORY_DATABASE_URL", url)
        get_settings.cache_clear()
        return CliRunner()

    yield use
    get_settings.cache_clear()


def test_db_migrate_then_status_lists_every_migration_as_applied(cli_env, empty_database_url):
    runner = cli_env(empty_database_url)
    migrated = runner.invoke(main, ["db", "migrate"])
    assert migrated.exit_code == 0, migrated.output
    assert "applying 0001_" in migrated.output

    status = runner.invoke(main, ["db", "status", "--json"])
    assert status.exit_code == 0, status.output
    report = json.loads(status.output)
    assert report["vector"].startswith("0.8.")
    assert report["server_version"].startswith("18")
    assert report["migrations"] and all(m["state"] == "applied" for m in report["migrations"])


def test_db_status_on_an_empty_database_says_what_to_do(cli_env, empty_database_url):
    result = cli_env(empty_database_url).invoke(main, ["db", "status"])
    assert result.exit_code == 0
    assert "pending" in result.output and "memory-platform db migrate" in result.output


def test_db_url_redacts_the_password(cli_env):
    result = cli_env("postgresql://app:topsecret@127.0.0.1:1/memory").invoke(main, ["db", "url"])
    assert result.exit_code == 0
    assert "topsecret" not in result.output and "app:**********@" in result.output


def test_f19_db_psql_passes_the_password_in_the_environment_not_on_argv(
        cli_env, tmp_path, monkeypatch):
    """F19: a process's arguments are readable by every local user: psql gets the connection
    string without the password, and the password through PGPASSWORD."""
    bindir, seen = tmp_path / "bin", tmp_path / "seen"
    bindir.mkdir()
    fake = bindir / "psql"  # a real executable that records what psql would receive
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{seen}"\n'
                    f'printf "PGPASSWORD=%s\\n" "$PGPASSWORD" >> "{seen}"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PGPASSWORD", raising=False)

    result = cli_env("postgresql://app:topsecret@127.0.0.1:1/memory?sslmode=disable").invoke(
        main, ["db", "psql", "-c", "select 1"])

    assert result.exit_code == 0, result.output
    *args, env = seen.read_text().splitlines()
    assert args == ["user=app dbname=memory host=127.0.0.1 port=1 sslmode=disable",
                    "-c", "select 1"]
    assert env == "PGPASSWORD=topsecret"


@pytest.mark.parametrize("url", ["postgresql://app@127.0.0.1:1/memory?password=topsecret",
                                 "host=127.0.0.1 port=1 user=app password=topsecret"])
def test_f19_a_password_in_the_query_string_or_a_dsn_stays_off_argv(url):
    target, password = psql_target(url)
    assert "topsecret" not in target and password == "topsecret"


def test_f16_status_reports_a_killed_imports_indexes_and_repair_indexes_rebuilds_them(
        cli_env, database_url):
    """F16: placeholders (HNSW) and dropped GIN indexes left by a killed import show in the
    operator status with the repair command; `db repair-indexes` rebuilds them."""
    provider = HashEmbeddingProvider(16)
    with psycopg.connect(database_url, autocommit=True) as conn:
        generation = register_generation(conn, "default", provider.provider, provider.model,
                                         provider.dimensions)
        key = generation.generation_key
        assert memory_status(conn, "default")["indexes"] == {
            "healthy": True, "broken": [], "repair": None}
        assert install_placeholders(conn, key, BULK_INDEX_TABLES)  # a killed import's state
        assert drop_fulltext_indexes(conn, FULLTEXT_INDEXES) == list(FULLTEXT_INDEXES)

        report = memory_status(conn, "default")
        StatusResponse.model_validate(report)  # the API's status document carries it
        indexes = report["indexes"]
        assert not indexes["healthy"] and "memory-platform db repair-indexes" in indexes["repair"]
        assert {(b["table"], b["kind"], b["state"]) for b in indexes["broken"]} == {
            ("agent_memory_chunks", "hnsw", "placeholder"),
            ("agent_memory_assertion_embeddings", "hnsw", "placeholder"),
            ("agent_memory_chunks", "fulltext", "missing"),
            ("agent_memory_assertions", "fulltext", "missing")}
        assert memory_status(conn, "other")["indexes"]["broken"] == [
            b for b in indexes["broken"] if b["kind"] == "fulltext"]

    result = cli_env(database_url).invoke(main, ["db", "repair-indexes"])

    assert result.exit_code == 0, result.output
    assert "4 index(es) rebuilt" in result.output
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert memory_status(conn, "default")["indexes"]["healthy"]
        assert {index_state(conn, table, key) for table in BULK_INDEX_TABLES} == {"hnsw"}
        assert all(fulltext_index_exists(conn, name) for name in FULLTEXT_INDEXES)
    again = cli_env(database_url).invoke(main, ["db", "repair-indexes"])
    assert again.exit_code == 0 and "0 index(es) rebuilt" in again.output


def test_f16_installing_placeholders_gives_up_on_a_busy_table_instead_of_queueing(
        database_url):
    """F16: DROP INDEX waits for an exclusive lock; behind a long reader it would stall every
    new query on the table. The import's swap gives up after a few seconds and keeps the
    indexes."""
    import time

    provider = HashEmbeddingProvider(16)
    with psycopg.connect(database_url, autocommit=True) as conn, \
            psycopg.connect(database_url) as reader:
        key = register_generation(conn, "default", provider.provider, provider.model,
                                  provider.dimensions).generation_key
        reader.execute("SELECT count(*) FROM agent_memory_chunks")  # a long read, still open
        started = time.monotonic()
        assert install_placeholders(conn, key, BULK_INDEX_TABLES) is False
        assert time.monotonic() - started < 10
        reader.rollback()
        assert {index_state(conn, table, key) for table in BULK_INDEX_TABLES} == {"hnsw"}
