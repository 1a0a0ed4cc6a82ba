"""`db backup` / `db restore` against the real server: a restore gives back exactly the state
at backup time (rows and search results), a backup taken under concurrent writes is
consistent, a non-empty target or a bad file is refused and changes nothing."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from memory_platform.cli import main
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.db import backup as backup_module
from memory_platform.foundation.db.backup import BackupError, backup, restore
from memory_platform.foundation.db.connection import with_database
from memory_platform.foundation.settings import PROJECT_ROOT, get_settings
from memory_platform.shared.access import AccessContext
from tests.conftest import drop_database
from tests.support.settings import hash_embedding_settings

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
QUERY = "When is the VAT filing of Mandant Nord due?"
FIRST = [
    "The VAT filing for Mandant Nord is due on the tenth of each month.",
    "Mandant Nord pays its invoices by bank transfer within fourteen days.",
    "The quarterly VAT return of Mandant Sued is prepared by Bob.",
    "Lunch is served at noon in the cafeteria on the second floor.",
    "Die Rechnung für Kunde Müller wurde am Montag bezahlt.",
]
LATER = [
    "Mandant Nord moved its VAT filing to the fifth of each month.",
    "The VAT filing deadline of Mandant Nord is strict.",
]


@pytest.fixture
def target(server_url: str) -> Iterator[str]:
    """URL of a database that does not exist yet (dropped afterwards if a test made it)."""
    name = f"restored_{uuid.uuid4().hex[:12]}"
    yield with_database(server_url, name)
    drop_database(server_url, name)


@pytest.fixture
def ctx() -> AccessContext:
    return AccessContext(f"backup-{uuid.uuid4().hex[:12]}", user_id="ada")


def _name(url: str) -> str:
    return conninfo_to_dict(url)["dbname"]


def _connect(url: str) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    register_vector(conn)
    return conn


def _write(url: str, settings, ctx: AccessContext, texts: list[str]) -> None:
    with _connect(url) as conn:
        for text in texts:
            store_memory(conn, settings, ctx, MemoryWrite(text, source_type="manual"))


def _search(url: str, ctx: AccessContext, tmp_path: Path) -> list[tuple[uuid.UUID, float]]:
    """The hits (ids, scores) of QUERY. Word rarity weights come from planner statistics
    (pg_stats): gathered first, as the restore does, so both sides score with the same."""
    settings = hash_embedding_settings(url, data_dir=tmp_path / "state")
    with _connect(url) as conn:
        conn.execute("ANALYZE")
        hits = search_memories(conn, settings, ctx, QUERY, stamp=False)
    return [(hit.memory_id, hit.score) for hit in hits]


def _snapshot(url: str) -> dict[str, list[str]]:
    """Every row of every table of the platform schema, as text, sorted."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")]
        return {table: conn.execute(sql.SQL(
            "SELECT coalesce(array_agg(t::text ORDER BY t::text), '{{}}') FROM {} t"
        ).format(sql.Identifier(table))).fetchone()[0] for table in tables}


def test_restore_gives_back_the_state_at_backup_time_not_later_writes(
        database_url, target, ctx, tmp_path):
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST)
    at_backup = _snapshot(database_url)
    hits_at_backup = _search(database_url, ctx, tmp_path)
    assert len(at_backup["agent_memories"]) == len(FIRST) and hits_at_backup
    messages: list[str] = []

    result = backup(database_url, tmp_path / "platform.dump", progress=messages.append)
    _write(database_url, settings, ctx, LATER)  # after the backup: not in it
    restored = restore(target, tmp_path / "platform.dump", migrations_dir=MIGRATIONS_DIR,
                       create=True, progress=messages.append)

    assert result.bytes > 0 and result.tables >= 30
    assert any("dumping contents of table" in m for m in messages)
    assert restored.created and restored.pending_migrations == []
    assert restored.counts["agent_memories"] == len(FIRST)
    assert restored.counts["agent_memory_chunks"] == len(at_backup["agent_memory_chunks"])
    assert _snapshot(target) == at_backup
    assert _snapshot(database_url) != at_backup  # the later writes are in the original only
    assert _search(target, ctx, tmp_path) == hits_at_backup
    assert _search(database_url, ctx, tmp_path) != hits_at_backup


def test_the_script_path_for_servers_before_17_restores_the_same_state(
        database_url, target, ctx, tmp_path, monkeypatch):
    """Servers before PostgreSQL 17 do not know pg_restore 18's transaction_timeout: the
    archive goes through psql as a script without it (forced here on the test's server),
    in one transaction, stopping at the first error."""
    from memory_platform.foundation.db import backup as backup_module

    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST)
    at_backup = _snapshot(database_url)
    backup(database_url, tmp_path / "platform.dump")
    monkeypatch.setattr(backup_module, "TRANSACTION_TIMEOUT_SINCE", 10**9)
    messages: list[str] = []

    restored = restore(target, tmp_path / "platform.dump", migrations_dir=MIGRATIONS_DIR,
                       create=True, progress=messages.append)

    assert restored.counts["agent_memories"] == len(FIRST)
    assert _snapshot(target) == at_backup
    assert any("processing data for table" in m for m in messages)
    truncated = tmp_path / "truncated.dump"
    truncated.write_bytes((tmp_path / "platform.dump").read_bytes()[:-2000])
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")
    with pytest.raises(BackupError):
        restore(target, truncated, migrations_dir=MIGRATIONS_DIR)
    with psycopg.connect(target) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchone()[0] == 0          # one transaction: nothing left


def test_a_backup_under_concurrent_writes_is_one_consistent_snapshot(
        database_url, target, ctx, tmp_path):
    """Memories written while pg_dump runs are in the archive whole or not at all."""
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST)
    stop, written = threading.Event(), []

    def writer() -> None:
        with _connect(database_url) as conn:
            n = 0
            while not stop.is_set():
                text = f"Concurrent note {n}: ticket {uuid.uuid4().hex} was closed. " * 3
                written.append(store_memory(conn, settings, ctx,
                                            MemoryWrite(text, source_type="manual")).id)
                n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        while len(written) < 3:  # the writer is going
            threading.Event().wait(0.05)
        backup(database_url, tmp_path / "busy.dump")
    finally:
        stop.set()
        thread.join(timeout=60)
    restore(target, tmp_path / "busy.dump", migrations_dir=MIGRATIONS_DIR, create=True)

    chunks = ("SELECT m.id, count(c.id) FROM agent_memories m"
              " LEFT JOIN agent_memory_chunks c ON c.memory_id = m.id GROUP BY m.id")
    with psycopg.connect(database_url) as conn:
        original = dict(conn.execute(chunks).fetchall())
    with psycopg.connect(target) as conn:
        restored = dict(conn.execute(chunks).fetchall())
    assert len(FIRST) + 3 <= len(restored) <= len(original)
    assert all(count > 0 for count in restored.values())
    assert {m: original[m] for m in restored} == restored  # each memory whole, as committed
    print(f"{len(written)} memories written during the run, {len(restored) - len(FIRST)} "
          "of them in the backup")


def test_restore_refuses_a_non_empty_database_and_changes_nothing(database_url, ctx,
                                                                   tmp_path):
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST[:2])
    backup(database_url, tmp_path / "a.dump")
    _write(database_url, settings, ctx, LATER)
    before = _snapshot(database_url)

    with pytest.raises(BackupError, match="is not empty.*nothing was changed.*--force"):
        restore(database_url, tmp_path / "a.dump", migrations_dir=MIGRATIONS_DIR)
    assert _snapshot(database_url) == before


def test_force_replaces_a_non_empty_database(database_url, ctx, tmp_path, server_url):
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST[:2])
    at_backup = _snapshot(database_url)
    backup(database_url, tmp_path / "a.dump")
    _write(database_url, settings, ctx, LATER)

    result = restore(database_url, tmp_path / "a.dump", migrations_dir=MIGRATIONS_DIR,
                     force=True)
    assert result.counts["agent_memories"] == 2
    assert _snapshot(database_url) == at_backup


@pytest.mark.parametrize("content", [None, b"", b"PGDMP\x01\x0e garbage" * 50,
                                     b"not a dump at all"])
def test_a_missing_or_corrupt_file_is_refused_and_nothing_is_created(
        content, target, tmp_path, server_url):
    path = tmp_path / "bad.dump"
    if content is not None:
        path.write_bytes(content)

    with pytest.raises(BackupError, match="nothing was changed|does not exist"):
        restore(target, path, migrations_dir=MIGRATIONS_DIR, create=True)
    with psycopg.connect(server_url) as conn:
        assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                            (_name(target),)).fetchone() is None


def test_a_truncated_archive_fails_in_one_transaction_and_leaves_the_target_empty(
        database_url, empty_database_url, ctx, tmp_path):
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST)
    backup(database_url, tmp_path / "full.dump")
    data = (tmp_path / "full.dump").read_bytes()
    (tmp_path / "cut.dump").write_bytes(data[: len(data) * 3 // 4])

    with pytest.raises(BackupError):
        restore(empty_database_url, tmp_path / "cut.dump", migrations_dir=MIGRATIONS_DIR)
    assert _snapshot(empty_database_url) == {}


def test_a_failed_backup_leaves_no_file(tmp_path, server_url):
    missing = with_database(server_url, f"missing_{uuid.uuid4().hex[:8]}")
    with pytest.raises(BackupError, match="pg_dump failed"):
        backup(missing, tmp_path / "x.dump")
    assert list(tmp_path.iterdir()) == []


def test_the_password_goes_through_the_environment_never_argv(tmp_path, monkeypatch):
    seen = tmp_path / "seen"
    fake = tmp_path / "pg_dump"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{seen}"\n'
                    f'printf "PGPASSWORD=%s\\n" "$PGPASSWORD" >> "{seen}"\nexit 1\n')
    fake.chmod(0o755)
    monkeypatch.setattr(backup_module, "client_binary", lambda name: str(fake))
    messages: list[str] = []

    with pytest.raises(BackupError):
        backup("postgresql://app:topsecret@127.0.0.1:1/memory", tmp_path / "x.dump",
               progress=messages.append)

    recorded = seen.read_text()
    *args, env = recorded.splitlines()
    assert "topsecret" not in "\n".join(args) and env == "PGPASSWORD=topsecret"
    assert "--dbname=user=app dbname=memory host=127.0.0.1 port=1" in args
    assert "topsecret" not in "\n".join(messages)


@pytest.fixture
def cli_env(monkeypatch):
    def use(url: str) -> CliRunner:
        monkeypatch.setenv("MEMORY_DATABASE_URL", url)
        get_settings.cache_clear()
        return CliRunner()

    yield use
    get_settings.cache_clear()


def test_cli_backup_and_restore_end_to_end(cli_env, database_url, target, ctx, tmp_path):
    settings = hash_embedding_settings(database_url, data_dir=tmp_path / "state")
    _write(database_url, settings, ctx, FIRST)
    at_backup = _snapshot(database_url)
    runner = cli_env(database_url)
    file = tmp_path / "cli.dump"

    made = runner.invoke(main, ["db", "backup", str(file)])
    assert made.exit_code == 0, made.output
    assert "backup complete" in made.output
    again = runner.invoke(main, ["db", "backup", str(file)])
    assert again.exit_code == 1 and "exists" in again.output and "--force" in again.output

    name = _name(target)
    missing = runner.invoke(main, ["db", "restore", str(file), "--database", name])
    assert missing.exit_code == 1 and "--create" in missing.output
    restored = runner.invoke(main, ["db", "restore", str(file), "--database", name,
                                    "--create"])
    assert restored.exit_code == 0, restored.output
    assert f"restored into database {name} (created)" in restored.output
    assert f"agent_memories{' ' * 26} {len(FIRST)}" in restored.output
    assert _snapshot(target) == at_backup

    refused = runner.invoke(main, ["db", "restore", str(file)])  # the platform db: not empty
    assert refused.exit_code == 1 and "not empty" in refused.output

    assert "consistent" in runner.invoke(main, ["db", "backup", "--help"]).output
