"""Helpers of the damaged- and crafted-import tests: files written (and sealed with a
checksum) as an attacker would, and a fingerprint of every table of a database (the target
must be exactly as before a failed import)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import psycopg
from psycopg import sql


def header(instance: str, audience: tuple[str, str] | None = None) -> dict:
    return {"kind": "header", "format": "memory-platform-export", "version": 1,
            "schema_version": 26, "exported_at": "2026-01-01T00:00:00+00:00",
            "instance_key": instance,
            "audience": {"kind": audience[0], "key": audience[1]} if audience else None,
            "embedding": None}


def line(record: dict) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def seal(path: Path, body: list[bytes], *, checksum: bool = True) -> Path:
    """Write ``body`` (header and rows, raw lines) and the footer the export would write for
    it: counts, line count and (unless not ``checksum``) the SHA-256. Anyone can seal a file:
    the checksum finds damage, not intent."""
    counts: dict[str, int] = {}
    links = 0
    for raw in body[1:]:
        if not raw.startswith(b'{"kind":"'):
            continue            # a line no row kind: the test's damage
        kind = raw[9:raw.index(b'"', 9)].decode()
        if kind == "link":
            links += 1
        else:
            counts[kind] = counts.get(kind, 0) + 1
    end = {"kind": "footer", "counts": counts, "links": links, "lines": len(body) + 1}
    if checksum:
        end["sha256"] = hashlib.sha256(b"".join(body)).hexdigest()
    path.write_bytes(b"".join(body) + line(end))
    return path


def fingerprint(target: str | psycopg.Connection) -> dict[str, tuple[int, str]]:
    """(rows, md5 of all rows) of every table of the database: equal means unchanged."""
    if isinstance(target, str):
        with psycopg.connect(target, autocommit=True) as conn:
            return fingerprint(conn)
    tables = [r[0] for r in target.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema ="
        " current_schema() AND table_type = 'BASE TABLE' ORDER BY 1")]
    result = {}
    for table in tables:
        result[table] = target.execute(sql.SQL(
            "SELECT count(*), coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '')"
            " FROM {} t").format(sql.Identifier(table))).fetchone()
    return result
