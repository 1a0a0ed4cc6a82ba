"""The migration runner: order, idempotency, checksum refusal, concurrency, atomicity."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import psycopg
import pytest

from memory_platform.foundation.db import migrations
from tests.conftest import MIGRATIONS_DIR


@pytest.fixture
def migrations_copy(tmp_path: Path) -> Path:
    target = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, target)
    return target


def _connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


def test_all_migrations_apply_in_order_from_an_empty_database(empty_database_url):
    with _connect(empty_database_url) as conn:
        applied = migrations.migrate(conn, MIGRATIONS_DIR)
        versions = [m.version for m in applied]
        assert versions == sorted(versions) and versions[0] == 1
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == versions
        assert all(s.state == "applied" for s in migrations.status(conn, MIGRATIONS_DIR))


def test_migrate_twice_applies_nothing_the_second_time(empty_database_url):
    with _connect(empty_database_url) as conn:
        first = migrations.migrate(conn, MIGRATIONS_DIR)
        assert first
        assert migrations.migrate(conn, MIGRATIONS_DIR) == []
        migrations.ensure_current(conn, MIGRATIONS_DIR)


def test_schema_migrations_records_name_checksum_and_time(empty_database_url):
    with _connect(empty_database_url) as conn:
        migrations.migrate(conn, MIGRATIONS_DIR)
        version, name, checksum, applied_at = conn.execute(
            "SELECT version, name, checksum, applied_at FROM schema_migrations WHERE version = 1"
        ).fetchone()
    first = migrations.discover(MIGRATIONS_DIR)[0]
    assert (version, name, checksum) == (1, first.name, first.checksum)
    assert applied_at is not None


def test_an_edited_applied_migration_is_refused(empty_database_url, migrations_copy):
    with _connect(empty_database_url) as conn:
        migrations.migrate(conn, migrations_copy)
        edited = migrations_copy / "0002_platform.sql"
        edited.write_text(edited.read_text() + "\n-- edited after it was applied\n")
        with pytest.raises(migrations.ChecksumMismatch, match="0002_platform"):
            migrations.migrate(conn, migrations_copy)
        with pytest.raises(migrations.ChecksumMismatch):
            migrations.ensure_current(conn, migrations_copy)
        states = {s.version: s.state for s in migrations.status(conn, migrations_copy)}
        assert states[2] == "changed"


def test_a_deleted_applied_migration_is_refused(empty_database_url, migrations_copy):
    with _connect(empty_database_url) as conn:
        migrations.migrate(conn, migrations_copy)
        last = migrations.discover(migrations_copy)[-1]
        last.path.unlink()
        with pytest.raises(migrations.ChecksumMismatch, match="missing-file"):
            migrations.migrate(conn, migrations_copy)


def test_a_failing_migration_leaves_nothing_behind(empty_database_url, migrations_copy):
    bad = migrations_copy / "9999_broken.sql"
    bad.write_text("CREATE TABLE half_done (id int);\nSELECT * FROM no_such_table;\n")
    with _connect(empty_database_url) as conn:
        with pytest.raises(migrations.MigrationError, match="9999_broken.sql"):
            migrations.migrate(conn, migrations_copy)
        assert conn.execute("SELECT to_regclass('half_done')").fetchone()[0] is None
        applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        assert 9999 not in applied and 1 in applied


def test_pending_migrations_make_the_database_not_current(empty_database_url):
    with _connect(empty_database_url) as conn:
        with pytest.raises(migrations.PendingMigrations, match="db migrate"):
            migrations.ensure_current(conn, MIGRATIONS_DIR)


def test_concurrent_migrate_calls_apply_each_migration_once(empty_database_url):
    results: list[list[int]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def run() -> None:
        try:
            with _connect(empty_database_url) as conn:
                barrier.wait()
                results.append([m.version for m in migrations.migrate(conn, MIGRATIONS_DIR)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = [m.version for m in migrations.discover(MIGRATIONS_DIR)]
    assert sorted(v for r in results for v in r) == expected  # each applied exactly once
    with _connect(empty_database_url) as conn:
        count = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
    assert count == len(expected)


def test_misnamed_migration_files_are_rejected(migrations_copy):
    (migrations_copy / "12_bad-name.sql").write_text("SELECT 1;")
    with pytest.raises(migrations.MigrationError, match="NNNN_lower_snake"):
        migrations.discover(migrations_copy)


def test_duplicate_versions_are_rejected(migrations_copy):
    (migrations_copy / "0001_again.sql").write_text("SELECT 1;")
    with pytest.raises(migrations.MigrationError, match="share version 0001"):
        migrations.discover(migrations_copy)


def test_migrate_requires_an_autocommit_connection(empty_database_url):
    with psycopg.connect(empty_database_url) as conn:
        with pytest.raises(migrations.MigrationError, match="autocommit"):
            migrations.migrate(conn, MIGRATIONS_DIR)
