"""Legacy transcript import: sessions.json resolution, lenient lines, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

from memory_platform.maintenance.legacy import import_transcripts, session_keys


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
        "agent:main:telegram:42": {"sessionId": "abc-123", "updatedAt": 1733000000000},
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
        ("Our Kassel depot closes at 18:00 on Fridays.", "manual", "session", "workspace",
         "agent:main:telegram:42", "user"),
        ("Noted: Kassel closes at 18:00.", "manual", "session", "workspace",
         "agent:main:telegram:42", "assistant"),
    ]
    assert rows[0][6].year == 2025

    again = import_transcripts(db, settings, instance, root)
    assert (again.imported, again.already_imported) == (0, 2)
    assert len(_rows(db, instance)) == 2


def test_import_without_sessions_json_is_workspace_scope(db, settings, instance, tmp_path):
    root = tmp_path / "legacy"
    root.mkdir()
    _lines(root / "old.jsonl",
           {"role": "user", "content": "Invoices go to finance@lindqvist.example.",
            "timestamp": 1740819600})
    result = import_transcripts(db, settings, instance, root)
    assert (result.sessions_resolved, result.imported) == (0, 1)
    (row,) = _rows(db, instance)
    assert row[1:5] == ("manual", "workspace", "workspace", None)


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
    result = import_transcripts(db, settings, instance, root)
    assert (result.lines, result.bad_lines, result.imported, result.rejected) == (4, 2, 1, 1)
    assert [e[1] for e in result.errors] == [1, 2, 5]
    assert [r[0] for r in _rows(db, instance)] == ["Valid line after broken ones."]


def test_session_keys_maps_session_ids_and_files(tmp_path):
    (tmp_path / "sessions.json").write_text(json.dumps({
        "k1": {"sessionId": "one"},
        "k2": {"sessionFile": "/old/state/sessions/two.jsonl"},
        "k3": "not an entry",
    }))
    assert session_keys(tmp_path) == {"one.jsonl": "k1", "two.jsonl": "k2"}


def test_the_last_import_is_reported_by_the_status_of_any_process(db, settings, instance,
                                                                    tmp_path):
    from memory_platform.operator_status import memory_status

    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / "s1.jsonl").write_text(
        '{"role": "user", "content": "The archive server moves to Leipzig in May."}\n'
        "not json\n")
    assert memory_status(db, instance)["legacyImport"] is None
    import_transcripts(db, settings, instance, folder)
    reported = memory_status(db, instance)["legacyImport"]
    assert reported["imported"] == 1 and reported["badLines"] == 1
