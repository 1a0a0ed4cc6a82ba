"""Workspace memory sync: files in, rows out, idempotent, bounded, no symlink escapes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_platform.features.maintenance import workspace as ws
from memory_platform.features.maintenance.workspace import sync_workspace, sync_workspace_cached
from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.features.retrieval.search import search_memories
from memory_platform.shared.access import AccessContext


def _rows(db, instance) -> dict[str, dict]:
    rows = db.execute(
        "SELECT m.id, m.metadata->>'importSource', m.content, m.source_type, m.memory_scope,"
        "       m.visibility_scope, count(c.id)"
        "  FROM agent_memories m LEFT JOIN agent_memory_chunks c ON c.memory_id = m.id"
        " WHERE m.instance_key = %s GROUP BY m.id", (instance,)).fetchall()
    return {r[1]: {"id": r[0], "content": r[2], "source_type": r[3], "scope": r[4],
                   "visibility": r[5], "chunks": r[6]} for r in rows}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    (root / "memory" / "projects").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Agents follow the house rules of Lindqvist Logistics.\n")
    (root / "SOUL.md").write_text("Calm, precise, answers in the user's language.\n")
    (root / "memory" / "2026-11-30.md").write_text("The warehouse in Kassel moved to Halle 4.\n")
    (root / "memory" / "projects" / "atlas.md").write_text("Project Atlas ships in March.\n")
    (root / "memory" / "notes.txt").write_text("not markdown, not synced\n")
    (root / "README.md").write_text("not a bootstrap file\n")
    return root


def test_sync_adds_changes_deletes_and_is_idempotent(db, settings, instance, workspace):
    first = sync_workspace(db, settings, instance, workspace)
    assert (first.added, first.updated, first.deleted, first.refused) == (4, 0, 0, [])
    rows = _rows(db, instance)
    assert set(rows) == {"AGENTS.md", "SOUL.md", "memory/2026-11-30.md",
                         "memory/projects/atlas.md"}
    assert all(r["source_type"] == "prompt_file" and r["scope"] == "workspace"
               and r["visibility"] == "workspace" and r["chunks"] >= 1 for r in rows.values())

    again = sync_workspace(db, settings, instance, workspace)
    assert (again.added, again.updated, again.deleted, again.unchanged) == (0, 0, 0, 4)
    assert not again.changed
    assert _rows(db, instance) == rows

    (workspace / "memory" / "projects" / "atlas.md").write_text(
        "Project Atlas slipped to May.\n")
    (workspace / "SOUL.md").unlink()
    (workspace / "memory" / "projects" / "zeppelin.md").write_text("Zeppelin is paused.\n")
    changed = sync_workspace(db, settings, instance, workspace)
    assert (changed.added, changed.updated, changed.deleted, changed.unchanged) == (1, 1, 1, 2)
    after = _rows(db, instance)
    assert set(after) == {"AGENTS.md", "memory/2026-11-30.md", "memory/projects/atlas.md",
                          "memory/projects/zeppelin.md"}
    atlas = after["memory/projects/atlas.md"]
    assert atlas["id"] != rows["memory/projects/atlas.md"]["id"]
    assert "May" in atlas["content"] and atlas["chunks"] >= 1
    old_chunks = db.execute("SELECT count(*) FROM agent_memory_chunks WHERE memory_id = %s",
                            (rows["memory/projects/atlas.md"]["id"],)).fetchone()[0]
    assert old_chunks == 0
    assert after["AGENTS.md"]["id"] == rows["AGENTS.md"]["id"]

    # Searchable through the normal read path, by any caller of the instance.
    hits = search_memories(db, settings, AccessContext(instance), "Atlas slipped May")
    assert any("May" in h.content for h in hits)

    assert not sync_workspace(db, settings, instance, workspace).changed


def test_identical_files_are_two_rows_and_a_users_memory_is_never_taken(
        db, settings, instance, tmp_path):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    text = "The VPN gateway is vpn.lindqvist.example.\n"
    store_memory(db, settings, AccessContext(instance), MemoryWrite(
        content=text, source_type="manual", visibility="workspace"))
    (root / "memory" / "a.md").write_text(text)
    (root / "memory" / "b.md").write_text(text)
    result = sync_workspace(db, settings, instance, root)
    assert result.added == 2
    (root / "memory" / "a.md").unlink()
    assert sync_workspace(db, settings, instance, root).deleted == 1
    left = db.execute("SELECT source_type, metadata->>'importSource' FROM agent_memories"
                      " WHERE instance_key = %s ORDER BY 1", (instance,)).fetchall()
    assert left == [("manual", None), ("prompt_file", "memory/b.md")]


def test_symlink_escapes_are_refused(db, settings, instance, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("Outside text that must never be synced.\n")
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "inside.md").write_text("Inside text.\n")
    os.symlink(outside / "secret.md", root / "memory" / "leak.md")
    os.symlink(outside, root / "memory" / "linked")
    os.symlink(outside / "secret.md", root / "USER.md")
    result = sync_workspace(db, settings, instance, root)
    assert result.added == 1
    refused = {path for path, _ in result.refused}
    assert {"memory/leak.md", "memory/linked", "USER.md"} <= refused
    assert set(_rows(db, instance)) == {"memory/inside.md"}
    # The whole memory directory as a link out of the workspace.
    other = tmp_path / "ws2"
    other.mkdir()
    os.symlink(outside, other / "memory")
    result = sync_workspace(db, settings, f"{instance}-2", other)
    assert result.added == 0 and [p for p, _ in result.refused] == ["memory"]


def test_oversized_and_refused_files_are_reported_and_drop_their_row(
        db, settings, instance, tmp_path, monkeypatch):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "big.md").write_text("small at first\n")
    assert sync_workspace(db, settings, instance, root).added == 1
    monkeypatch.setattr(ws, "MAX_FILE_BYTES", 64)
    (root / "memory" / "big.md").write_text("x " * 100)
    result = sync_workspace(db, settings, instance, root)
    assert result.deleted == 1 and result.refused[0][0] == "memory/big.md"
    assert _rows(db, instance) == {}
    monkeypatch.setattr(ws, "MAX_FILE_BYTES", 256 * 1024)
    (root / "memory" / "big.md").write_text("bad \x00 control character\n")
    result = sync_workspace(db, settings, instance, root)
    assert result.added == 0 and result.refused and _rows(db, instance) == {}


def test_the_cached_sync_answers_within_the_ttl_unless_forced(db, settings, instance,
                                                              workspace):
    first = sync_workspace_cached(db, settings, instance, workspace)
    (workspace / "memory" / "new.md").write_text("A new note.\n")
    assert sync_workspace_cached(db, settings, instance, workspace) is first
    forced = sync_workspace_cached(db, settings, instance, workspace, force=True)
    assert forced.added == 1
    assert sync_workspace_cached(db, settings, instance, workspace) is forced


def test_cli_workspace_sync_and_import_transcripts(db, module_database_url, instance, workspace,
                                                   tmp_path, monkeypatch):
    from click.testing import CliRunner

    from memory_platform.cli.workspace import import_transcripts_command
    from memory_platform.cli.workspace import workspace as workspace_group
    from memory_platform.foundation.settings import get_settings

    monkeypatch.setenv("MEMORY_DATABASE_URL", module_database_url)
    monkeypatch.setenv("MEMORY_EMBEDDING_PROVIDER", "hash")
    monkeypatch.setenv("MEMORY_HASH_EMBEDDING_DIMENSIONS", "64")
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "t.jsonl").write_text('{"role": "user", "content": "hello from 2024"}\nnope\n')
    get_settings.cache_clear()
    try:
        sync = CliRunner().invoke(workspace_group,
                                  ["sync", "--dir", str(workspace), "--instance", instance])
        imported = CliRunner().invoke(import_transcripts_command,
                                      [str(legacy), "--instance", instance, "--user", "ole",
                                       "--json"])
    finally:
        get_settings.cache_clear()
    assert sync.exit_code == 0, sync.output
    assert f"{instance}: 4 files: 4 added, 0 updated, 0 unchanged, 0 rows deleted" in sync.stdout
    assert imported.exit_code == 1, imported.output     # one malformed line
    assert '"imported": 1' in imported.stdout and '"badLines": 1' in imported.stdout


def test_a_case_or_whitespace_change_keeps_the_row_and_stays_idempotent(
        db, settings, instance, tmp_path):
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "a.md").write_text("Standup is at nine.\n")
    sync_workspace(db, settings, instance, root)
    before = _rows(db, instance)["memory/a.md"]["id"]
    (root / "memory" / "a.md").write_text("STANDUP is at nine.   \n")
    assert sync_workspace(db, settings, instance, root).updated == 1
    assert _rows(db, instance)["memory/a.md"]["id"] == before
    again = sync_workspace(db, settings, instance, root)
    assert (again.unchanged, again.changed) == (1, False)
