"""A damaged import fails clearly and leaves the target exactly as it was (issue 28).

Each form of damage the security review found is imported through the CLI's entry point
into a database holding a populated instance; the command must exit non-zero with a clear
message (no traceback), and every table of the database must be unchanged (row count and
content, tests/portability/support.py ``fingerprint``). Before the fix: a file cut mid-line
left 837 rows committed, one cut at a line end 1,059 rows (exit 0), a flipped byte breaking a
memory line ended in a ForeignKeyViolation traceback with 96 of 97 memories stored, a flipped
byte inside a text was imported as the altered text, and 100,000 ``[`` crashed with a
RecursionError.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from memory_platform.features.portability import import_export
from memory_platform.foundation.errors import InvalidInput
from tests.portability.support import fingerprint, line, seal
from tests.portability.test_portability import INSTANCE, _connect, _populate, _settings

TARGET = "port-target"


@pytest.fixture
def exported(database_url: str, tmp_path: Path, cli) -> Path:
    with _connect(database_url) as conn:
        _populate(conn, _settings(database_url, tmp_path))
    path = tmp_path / "export.jsonl"
    result = cli("export", path, "--instance", INSTANCE)
    assert result.exit_code == 0, result.output
    return path


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _fails(cli, database_url: str, path: Path, message: str, *options: str) -> str:
    """Import ``path`` into TARGET: it must fail with ``message`` and change nothing."""
    before = fingerprint(database_url)
    result = cli("import", path, "--format", "memory-platform", "--instance", TARGET,
                 "--no-reembed", *options)
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), result.exception   # no traceback
    assert "Traceback" not in result.output
    assert message in result.output, result.output
    assert fingerprint(database_url) == before
    return result.output


def _memory_line(lines: list[bytes]) -> int:
    return next(i for i, raw in enumerate(lines) if raw.startswith(b'{"kind":"memory"'))


def test_a_file_cut_mid_line_imports_nothing(cli, database_url, exported, tmp_path):
    data = exported.read_bytes()
    middle = len(data) // 2
    while data[middle - 1:middle] == b"\n":
        middle += 1
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:middle])
    _fails(cli, database_url, cut, "without a line end: the file was cut short")


def test_a_file_cut_at_a_line_end_imports_nothing(cli, database_url, exported,
                                                  tmp_path):
    lines = _lines(exported)
    for keep in (len(lines) // 2, len(lines) - 1):     # half of it; all but the footer
        cut = tmp_path / f"cut-{keep}.jsonl"
        cut.write_bytes(b"".join(lines[:keep]))
        _fails(cli, database_url, cut, "without its footer: it was cut short")


def test_a_flipped_byte_that_breaks_a_memory_line_imports_nothing(
        cli, database_url, exported, tmp_path):
    lines = _lines(exported)
    index = _memory_line(lines)
    lines[index] = lines[index].replace(b'"row":{', b'"row":}', 1)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines))
    _fails(cli, database_url, broken, f"line {index + 1} is not valid JSON")


def test_a_flipped_byte_inside_a_text_imports_nothing(cli, database_url, exported,
                                                      tmp_path):
    lines = _lines(exported)
    index = _memory_line(lines)
    record = json.loads(lines[index])
    text = record["row"]["content"].encode()
    flipped = bytes([text[0] ^ 0x01]) + text[1:]
    assert flipped != text and json.dumps(flipped.decode()) != json.dumps(text.decode())
    lines[index] = lines[index].replace(text, flipped, 1)
    altered = tmp_path / "altered.jsonl"
    altered.write_bytes(b"".join(lines))
    _fails(cli, database_url, altered, "SHA-256 is not the one its footer records")


def test_a_line_too_deep_or_too_long_is_refused_with_its_number(
        cli, database_url, exported, tmp_path):
    lines = _lines(exported)
    deep = seal(tmp_path / "deep.jsonl", [lines[0], b"[" * 100_000 + b"\n", *lines[1:-1]])
    _fails(cli, database_url, deep, "line 2 is nested more than 64 levels deep")
    nested: dict = {}
    inner = nested
    for _ in range(70):      # valid JSON, shallow enough for the parser, too deep for a row
        inner["a"] = {}
        inner = inner["a"]
    row = line({"kind": "dream", "row": {"id": "x", "stats_json": nested}})
    deep = seal(tmp_path / "nested.jsonl", [lines[0], row, *lines[1:-1]])
    _fails(cli, database_url, deep, "line 2 is nested more than 64 levels deep")
    huge = line({"kind": "dream", "row": {"id": "x", "notes": "y" * (33 * 1024 * 1024)}})
    long = seal(tmp_path / "long.jsonl", [lines[0], huge, *lines[1:-1]])
    _fails(cli, database_url, long, "line 2 is longer than 33,554,432 bytes")


def test_an_export_without_a_checksum_needs_no_verify(cli, database_url, exported,
                                                      tmp_path):
    lines = _lines(exported)
    old = seal(tmp_path / "old.jsonl", lines[:-1], checksum=False)
    _fails(cli, database_url, old, "has no checksum")
    result = cli("import", old, "--format", "memory-platform", "--instance", TARGET,
                 "--no-verify", "--trust-file-states", "--no-reembed")
    assert result.exit_code == 0, result.output
    assert "NOT verified" in result.output
    with psycopg.connect(database_url, autocommit=True) as conn:
        count = "SELECT count(*) FROM agent_memories WHERE instance_key = %s"
        assert conn.execute(count, (TARGET,)).fetchone()[0] == \
            conn.execute(count, (INSTANCE,)).fetchone()[0] > 0


def test_damage_found_only_while_writing_rolls_everything_back(
        cli, database_url, exported, tmp_path):
    """Unverified (no checksum), a flipped digit in a memory's id is valid JSON: the memory
    goes in under another id, and the chunks and links naming the old one are refused. The
    whole import is one transaction: it is rolled back, nothing is left."""
    lines = _lines(exported)
    index = _memory_line(lines)
    memory_id = json.loads(lines[index])["row"]["id"]
    flipped = ("0" if memory_id[0] != "0" else "1") + memory_id[1:]
    lines[index] = lines[index].replace(memory_id.encode(), flipped.encode(), 1)
    damaged = seal(tmp_path / "damaged.jsonl", lines[:-1], checksum=False)
    output = _fails(cli, database_url, damaged, "nothing was imported", "--no-verify")
    assert "chunk: names a memory the file does not hold" in output


def test_a_refused_line_rolls_back_unless_skip_rejected(cli, database_url, exported,
                                                         tmp_path):
    """A crafted file (sealed correctly) with a credential in one memory."""
    lines = _lines(exported)
    index = _memory_line(lines)
    record = json.loads(lines[index])
    record["row"]["content"] = "the deploy key is sk-proj-" + "Ab3dEf9hIj" * 4
    lines[index] = line(record)
    crafted = seal(tmp_path / "secret.jsonl", lines[:-1])
    _fails(cli, database_url, crafted, "nothing was imported (--skip-rejected imports the rest)")
    result = cli("import", crafted, "--format", "memory-platform", "--instance", TARGET,
                 "--skip-rejected", "--trust-file-states", "--no-reembed")
    assert result.exit_code == 1 and f"line {index + 1}: memory content holds" in result.output
    with psycopg.connect(database_url, autocommit=True) as conn:
        count = "SELECT count(*) FROM agent_memories WHERE instance_key = %s"
        assert conn.execute(count, (TARGET,)).fetchone()[0] == \
            conn.execute(count, (INSTANCE,)).fetchone()[0] - 1


def test_the_import_function_refuses_a_long_line_at_its_own_bound(conn, tmp_path):
    body = [line({"kind": "header", "format": "memory-platform-export", "version": 1,
                  "instance_key": "x", "audience": None}),
            line({"kind": "user", "row": {"user_id": "u" * 5000}})]
    path = seal(tmp_path / "long.jsonl", body)
    with pytest.raises(InvalidInput, match="line 2 is longer than 4,096 bytes"):
        import_export(conn, str(path), instance="x", max_line_bytes=4096)
