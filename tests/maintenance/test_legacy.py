"""Legacy transcript import: sessions.json resolution, lenient lines, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_platform.features.maintenance.legacy import (
    SessionEntry,
    import_transcripts,
    session_entries,
)
from memory_platform.features.retrieval.search import search_memories
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext

MIGRATION = (Path(__file__).resolve().parents[2] / "migrations"
             / "0036_legacy_imports_withheld.sql")


def _lines(path: Path, *objects) -> None:
    path.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects)
                    + "\n")


def _rows(db, instance):
    return db.execute(
        "SELECT content, source_type, memory_scope, visibility_scope, session_key,"
        "       metadata->>'role', occurred_at"
        "  FROM agent_memories WHERE instance_key = %s ORDER BY occurred_at NULLS LAST, content",
        (instance,)).fetchall()


def test_import_with_sessions_json_uses_session_scope_and_is_idempotent(
        db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    (root / "sessions.json").write_text(json.dumps({
        "agent:main:telegram:42": {"sessionId": "abc-123", "updatedAt": 1733000000000,
                                   "userId": "ute"},
    }))
    _lines(root / "abc-123.jsonl",
           {"type": "session", "id": "abc-123"},
           {"role": "user", "content": "Our Kassel depot closes at 18:00 on Fridays.",
            "timestamp": "2025-03-01T09:00:00Z"},
           {"type": "message", "timestamp": "2025-03-01T09:00:05Z",
            "message": {"role": "assistant",
                        "content": [{"type": "text", "text": "Noted: Kassel closes at 18:00."}]}},
           {"role": "tool", "content": "ignored tool output"})
    result = import_transcripts(db, settings, instance, root)
    assert (result.files, result.sessions_resolved, result.imported, result.ignored,
            result.bad_lines) == (1, 1, 2, 2, 0)
    rows = _rows(db, instance)
    assert [(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("Our Kassel depot closes at 18:00 on Fridays.", "manual", "session", "private",
         "agent:main:telegram:42", "user"),
        ("Noted: Kassel closes at 18:00.", "manual", "session", "private",
         "agent:main:telegram:42", "assistant"),
    ]
    assert rows[0][6].year == 2025

    again = import_transcripts(db, settings, instance, root)
    assert (again.imported, again.already_imported) == (0, 2)
    assert len(_rows(db, instance)) == 2


def _recalled(db, settings, instance, user, query):
    ctx = AccessContext(instance, user_id=user)
    return [h.content for h in search_memories(db, settings, ctx, query, stamp=False)]


def test_a_transcript_nobody_is_named_for_is_not_imported_and_says_what_to_pass(
        db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    _lines(root / "old.jsonl",
           {"role": "user", "content": "Invoices go to finance@lindqvist.example.",
            "timestamp": 1740819600})
    result = import_transcripts(db, settings, instance, root)
    assert (result.lines, result.imported, result.unowned) == (1, 0, 1)
    assert result.refused_files == [("old.jsonl", result.refused_files[0][1])]
    assert "--user" in result.refused_files[0][1]
    assert _rows(db, instance) == []


def test_a_transcript_is_private_to_the_user_the_operator_names(db, settings, instance,
                                                                tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    _lines(root / "old.jsonl",
           {"role": "user", "content": "Invoices go to finance@lindqvist.example.",
            "timestamp": 1740819600})
    result = import_transcripts(db, settings, instance, root, user_id="ole")
    assert (result.sessions_resolved, result.imported, result.unowned) == (0, 1, 0)
    (row,) = _rows(db, instance)
    assert row[1:5] == ("manual", "user", "private", None)
    assert _recalled(db, settings, instance, "ole", "where do invoices go") == [
        "Invoices go to finance@lindqvist.example."]
    assert _recalled(db, settings, instance, "mia", "where do invoices go") == []


def test_an_operator_may_name_the_workspace_for_every_line(db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    _lines(root / "old.jsonl", {"role": "user", "content": "The office wifi is lindqvist-5g."})
    result = import_transcripts(db, settings, instance, root, audience="workspace")
    assert result.imported == 1
    assert _rows(db, instance)[0][3] == "workspace"
    with pytest.raises(InvalidInput, match="audience 'channel'"):
        import_transcripts(db, settings, instance, root, audience="channel")
    with pytest.raises(InvalidInput, match="user"):
        import_transcripts(db, settings, instance, root, user_id="bad\x00id")


def test_lines_an_old_import_gave_everyone_are_withheld_until_an_owner_is_named(
        db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    _lines(root / "s.jsonl", {"role": "user", "content": "My locker code is in the blue binder."},
           {"role": "assistant", "content": "Noted: the locker code is in the blue binder."})
    # What imports did before migration 0036: every line in the workspace audience.
    import_transcripts(db, settings, instance, root, audience="workspace")
    db.commit()
    assert len(_recalled(db, settings, instance, "mia", "locker code binder")) == 2
    update = next(s for s in MIGRATION.read_text().split(";") if s.strip().startswith("UPDATE"))
    db.execute(update + " AND instance_key = %s", (instance,))
    db.commit()
    assert [r[0] for r in db.execute(
        "SELECT DISTINCT memory_state FROM agent_memories WHERE instance_key = %s",
        (instance,))] == ["withheld"]
    assert _recalled(db, settings, instance, "mia", "locker code binder") == []

    again = import_transcripts(db, settings, instance, root, user_id="ole")
    assert (again.imported, again.assigned, again.already_imported) == (0, 2, 0)
    assert sorted(db.execute(
        "SELECT visibility_scope, memory_state FROM agent_memories WHERE instance_key = %s",
        (instance,)).fetchall()) == [("private", "active")] * 2 + [("workspace",
                                                                    "superseded")] * 2
    assert len(_recalled(db, settings, instance, "ole", "locker code binder")) == 2
    assert _recalled(db, settings, instance, "mia", "locker code binder") == []
    assert import_transcripts(db, settings, instance, root, user_id="ole").already_imported == 2


def test_malformed_lines_are_counted_and_skipped(db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    (root / "nested").mkdir(parents=True)
    (root / "nested" / "sessions.json").write_text("{not json")
    _lines(root / "nested" / "s1.jsonl",
           "{broken json",
           "[1, 2, 3]",
           {"role": "user", "content": "Valid line after broken ones."},
           "",
           {"role": "user", "content": "token sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3})
    result = import_transcripts(db, settings, instance, root, user_id="ole")
    assert (result.lines, result.bad_lines, result.imported, result.rejected) == (4, 2, 1, 1)
    assert [e[1] for e in result.errors] == [1, 2, 5]
    assert [r[0] for r in _rows(db, instance)] == ["Valid line after broken ones."]


def test_session_entries_map_session_ids_files_and_users(tmp_path):
    (tmp_path / "sessions.json").write_text(json.dumps({
        "k1": {"sessionId": "one", "userId": "ute"},
        "k2": {"sessionFile": "/old/state/sessions/two.jsonl"},
        "k3": "not an entry",
    }))
    assert session_entries(tmp_path) == {"one.jsonl": SessionEntry("k1", "ute"),
                                         "two.jsonl": SessionEntry("k2", None)}


def test_the_last_import_is_reported_by_the_status_of_any_process(db, settings, instance,
                                                                    tmp_path):
    from memory_platform.features.operator_status import memory_status

    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "s1.jsonl").write_text(
        '{"role": "user", "content": "The archive server moves to Leipzig in May."}\n'
        "not json\n")
    assert memory_status(db, instance)["legacyImport"] is None
    import_transcripts(db, settings, instance, folder, user_id="ole")
    reported = memory_status(db, instance)["legacyImport"]
    assert reported["imported"] == 1 and reported["badLines"] == 1
