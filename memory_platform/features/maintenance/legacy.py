"""Legacy transcript import (specification, "Legacy transcript import").

A migration path, never the main write path: runs only when called explicitly
(``memory-platform import-transcripts DIR``). It reads the ``.jsonl`` session transcripts of a
directory (and its subdirectories, bounded), one JSON object per line, leniently:

* a message is ``{"role", "content", "timestamp"}`` at the top level or under ``"message"``;
  ``content`` is a string or a list of parts whose ``text`` is joined; only ``user`` and
  ``assistant`` messages are imported (tool output, system prompts and header lines are
  ignored and counted as ``ignored``);
* a line that is not a JSON object is counted in ``bad_lines`` and skipped; a message the
  write path refuses (a credential, too long) is counted in ``rejected`` and skipped.

The sessionKey of a transcript comes from ``sessions.json`` in the same directory when it
maps the file: an entry (keyed by sessionKey) whose ``sessionId`` is the file's stem or whose
``sessionFile``/``transcriptPath`` names the file. Each message becomes a ``manual`` memory
(trust class ``imported``) with memory scope ``session`` when the sessionKey was resolved;
its event time is the line's timestamp.

**Whose lines they are** (issue 32.8): a transcript is one person's conversation, so its
lines are *private to the transcript's user*: the ``userId`` of its ``sessions.json`` entry,
else the user the operator names (``--user``). An operator may name another audience for all
of them (``--audience team``: written as that user, visible to the team; ``--audience
workspace``: every user of the instance, only when asked for). A transcript with no user and
no audience named is not imported: its lines are counted in ``unowned`` and the result says
what to pass. Nothing becomes workspace-visible by default. Lines imported before this rule
(all workspace) were made ``withheld`` by migration 0036 (kept, never recalled); importing
the same directory again with an owner assigns them (``assigned``): the owner's copy is
written and the withheld row superseded by it (retention purges it like any superseded
row; its source stays in the audience it was written in).

Idempotent: every imported line carries ``metadata.legacyKey`` (a hash of the transcript's
relative path, the line number and the line), and a line whose key is already imported is
skipped (``already_imported``). Each message is its own committed unit (``db/units.py``):
call it outside a transaction. The last result is kept in memory for a status report.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import psycopg

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.db.units import commit_if_idle, committed_unit, require_idle
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext, AudienceKind
from memory_platform.shared.embeddings.base import EmbeddingProvider
from memory_platform.shared.users import checked_user_id

# Proposed settings (the integrator may move them to settings.py).
MAX_TRANSCRIPT_FILES = 1_000
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
MAX_LINE_BYTES = 1024 * 1024
MAX_SESSIONS_JSON_BYTES = 16 * 1024 * 1024
ROLES = ("user", "assistant")
SOURCE_TYPE = "manual"
IMPORT_SOURCE = "legacy_transcript"
# The audiences an operator may name for imported transcripts (a channel has no owner here).
IMPORT_AUDIENCES: tuple[AudienceKind, ...] = ("private", "team", "workspace")
WITHHELD = "withheld"  # migration 0036: imported before owners were asked for
UNOWNED_HINT = ("no user for this transcript: name it with --user USER (or userId in its "
                "sessions.json entry), or an audience with --audience")


@dataclass
class ImportResult:
    instance_key: str
    directory: str
    files: int = 0
    sessions_resolved: int = 0     # transcripts whose sessionKey came from sessions.json
    lines: int = 0
    imported: int = 0
    deduplicated: int = 0          # the write path found the same memory (same text)
    already_imported: int = 0      # lines of an earlier import
    ignored: int = 0               # valid JSON but no user/assistant message with text
    bad_lines: int = 0
    rejected: int = 0              # refused by the write path
    unowned: int = 0               # lines of transcripts nobody was named for: not imported
    assigned: int = 0              # withheld lines of an earlier import given their owner
    errors: list[tuple[str, int, str]] = field(default_factory=list)   # (file, line, reason)
    refused_files: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    finished_at: float = 0.0

    def as_dict(self) -> dict:
        return {"instanceKey": self.instance_key, "directory": self.directory,
                "files": self.files, "sessionsResolved": self.sessions_resolved,
                "lines": self.lines, "imported": self.imported,
                "deduplicated": self.deduplicated, "alreadyImported": self.already_imported,
                "ignored": self.ignored, "badLines": self.bad_lines, "rejected": self.rejected,
                "unowned": self.unowned, "assigned": self.assigned,
                "errors": [{"file": f, "line": n, "reason": r} for f, n, r in self.errors[:50]],
                "refusedFiles": [{"file": f, "reason": r} for f, r in self.refused_files],
                "seconds": round(self.seconds, 3)}


_MAX_ERRORS = 200


def _error(result: ImportResult, relative: str, line: int, reason: str) -> None:
    if len(result.errors) < _MAX_ERRORS:
        result.errors.append((relative, line, reason))


class SessionEntry(NamedTuple):
    """What ``sessions.json`` says of one transcript."""

    session_key: str
    user_id: str | None  # the entry's ``userId`` (or ``user``), when it names one


def session_entries(directory: Path) -> dict[str, SessionEntry]:
    """file name -> its :class:`SessionEntry` from ``directory/sessions.json`` ({} when
    absent or unreadable). Entries are keyed by sessionKey; an entry maps
    ``<sessionId>.jsonl`` and the base name of its ``sessionFile`` / ``transcriptPath``."""
    path = directory / "sessions.json"
    try:
        if not path.is_file() or path.stat().st_size > MAX_SESSIONS_JSON_BYTES:
            return {}
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    entries = data.get("sessions") if isinstance(data.get("sessions"), dict) else data
    mapping: dict[str, SessionEntry] = {}
    for key, entry in entries.items():
        if not isinstance(key, str) or not key or not isinstance(entry, dict):
            continue
        session_key = entry.get("sessionKey") if isinstance(entry.get("sessionKey"), str) \
            else key
        names = []
        if isinstance(entry.get("sessionId"), str) and entry["sessionId"]:
            names.append(f"{entry['sessionId']}.jsonl")
        for name_field in ("sessionFile", "transcriptPath", "file"):
            if isinstance(entry.get(name_field), str) and entry[name_field]:
                names.append(Path(entry[name_field]).name)
        user = next((entry[f] for f in ("userId", "user")
                     if isinstance(entry.get(f), str) and entry[f].strip()), None)
        for name in names:
            mapping.setdefault(name, SessionEntry(session_key, user))
    return mapping


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text") for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") == "text")]
        texts = [p for p in parts if isinstance(p, str) and p.strip()]
        return "\n".join(texts) if texts else None
    return None


def _timestamp(value: Any) -> datetime | None:
    try:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            seconds = value / 1000 if value > 10_000_000_000 else value
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(value, str) and value:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def parse_line(obj: dict) -> tuple[str, str, datetime | None] | None:
    """(role, text, event time) of a transcript line, or None when it is no importable
    message."""
    message = obj.get("message") if isinstance(obj.get("message"), dict) else obj
    role = message.get("role")
    if role not in ROLES:
        return None
    text = _text(message.get("content"))
    if text is None or not text.strip():
        return None
    when = _timestamp(obj.get("timestamp", message.get("timestamp")))
    now = datetime.now(UTC)
    if when is not None and when > now:   # the write path refuses future event times
        when = None
    return role, text.strip(), when


def transcript_files(root: Path, result: ImportResult) -> list[tuple[str, Path]]:
    """The ``.jsonl`` files under ``root`` (relative path, path), sorted; symlinks out of the
    directory and files over the size cap are refused; at most MAX_TRANSCRIPT_FILES."""
    files: list[tuple[str, Path]] = []
    for current, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith(".jsonl"):
                continue
            path = Path(current) / name
            relative = path.relative_to(root).as_posix()
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):
                result.refused_files.append((relative, "unreadable"))
                continue
            if not real.is_relative_to(root) or not real.is_file():
                result.refused_files.append((relative, "outside the directory (symlink)"))
            elif real.stat().st_size > MAX_TRANSCRIPT_BYTES:
                result.refused_files.append((relative,
                                             f"larger than {MAX_TRANSCRIPT_BYTES} bytes"))
            else:
                files.append((relative, path))
            if len(files) >= MAX_TRANSCRIPT_FILES:
                return files
    return files


def _imported_keys(conn: psycopg.Connection, instance_key: str) -> dict[str, str | None]:
    """legacyKey -> the id of its withheld row (None: imported and owned)."""
    rows = conn.execute(
        "SELECT metadata->>'legacyKey', CASE WHEN memory_state = %s THEN id::text END"
        "  FROM agent_memories"
        " WHERE instance_key = %s AND source_type = %s AND metadata->>'importSource' = %s",
        (WITHHELD, instance_key, SOURCE_TYPE, IMPORT_SOURCE),
    ).fetchall()
    commit_if_idle(conn)
    return {r[0]: r[1] for r in rows if r[0]}


def _owner(instance_key: str, session_key: str | None, user_id: str | None,
           audience: AudienceKind | None) -> tuple[AccessContext, AudienceKind] | None:
    """The context a transcript's lines are written in and their audience, or None when
    nobody was named: private to its user unless the operator named an audience (team needs
    a user too: the team fact is that user's)."""
    ctx = AccessContext(instance_key, user_id=user_id, session_key=session_key)
    if audience == "workspace":
        return ctx, audience
    if user_id is None:
        return None
    return ctx, audience or "private"


def checked_audience(value: str | None) -> AudienceKind | None:
    """An operator's ``--audience``: one of :data:`IMPORT_AUDIENCES`, or None."""
    if value is None or value in IMPORT_AUDIENCES:
        return value  # type: ignore[return-value]
    raise InvalidInput(f"audience {value!r} is not one of {', '.join(IMPORT_AUDIENCES)}",
                       details={"field": "audience"})


def import_transcripts(conn: psycopg.Connection, settings: Settings, instance_key: str,
                       directory: str | os.PathLike[str], *, user_id: str | None = None,
                       audience: str | None = None,
                       embedder: EmbeddingProvider | None = None) -> ImportResult:
    """Import the legacy transcripts under ``directory`` (see the module doc): each private
    to its ``sessions.json`` user, else to ``user_id``; ``audience`` (private, team,
    workspace) names another audience for all of them."""
    require_idle(conn, "import_transcripts")
    kind = checked_audience(audience)
    default_user = checked_user_id(user_id, "user") if user_id is not None else None
    started = time.perf_counter()
    root = Path(directory).resolve(strict=True)
    if not root.is_dir():
        raise InvalidInput(f"transcript directory {str(directory)!r} is not a directory",
                           details={"field": "directory"})
    result = ImportResult(instance_key, str(directory))
    files = transcript_files(root, result)
    result.files = len(files)
    done = _imported_keys(conn, instance_key)
    maps: dict[Path, dict[str, SessionEntry]] = {}
    for relative, path in files:
        folder = path.parent
        if folder not in maps:
            maps[folder] = session_entries(folder)
        entry = maps[folder].get(path.name)
        if entry:
            result.sessions_resolved += 1
        entry_user = _entry_user(entry, result, relative)
        owner = _owner(instance_key, entry.session_key if entry else None,
                       entry_user or default_user, kind)
        if owner is None:
            result.refused_files.append((relative, UNOWNED_HINT))
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                result.lines += 1
                if owner is None:
                    result.unowned += 1
                    continue
                _import_line(conn, settings, owner, result, done, relative, number, raw,
                             embedder)
    result.seconds = time.perf_counter() - started
    result.finished_at = time.time()
    # Persisted too: the status endpoint of another process (the API) reports it.
    conn.execute(
        "INSERT INTO app_settings (instance_key, key, value) VALUES (%s, %s, %s)"
        " ON CONFLICT (instance_key, key) DO UPDATE SET value = EXCLUDED.value",
        (instance_key, LAST_IMPORT_KEY, json.dumps(result.as_dict(), default=str)))
    commit_if_idle(conn)
    return result


def _entry_user(entry: SessionEntry | None, result: ImportResult,
                relative: str) -> str | None:
    """The user ``sessions.json`` names for a transcript, when it is a valid user id."""
    if entry is None or entry.user_id is None:
        return None
    try:
        return checked_user_id(entry.user_id, "userId")
    except InvalidInput as exc:
        result.refused_files.append((relative, f"sessions.json: {exc}"))
        return None


def _import_line(conn, settings: Settings, owner: tuple[AccessContext, AudienceKind],
                 result: ImportResult, done: dict[str, str | None], relative: str,
                 number: int, raw: bytes, embedder: EmbeddingProvider | None) -> None:
    if len(raw) > MAX_LINE_BYTES:
        result.bad_lines += 1
        _error(result, relative, number, f"line longer than {MAX_LINE_BYTES} bytes")
        return
    try:
        obj = json.loads(raw)
    except ValueError:
        result.bad_lines += 1
        _error(result, relative, number, "not JSON")
        return
    if not isinstance(obj, dict):
        result.bad_lines += 1
        _error(result, relative, number, "not a JSON object")
        return
    message = parse_line(obj)
    if message is None:
        result.ignored += 1
        return
    key = hashlib.sha256(f"{relative}\0{number}\0".encode() + raw.strip()).hexdigest()
    ctx, kind = owner
    withheld = done.get(key)
    if key in done and withheld is None:
        result.already_imported += 1
        return
    role, text, when = message
    metadata = {"importSource": IMPORT_SOURCE, "legacyFile": relative, "legacyLine": number,
                "legacyKey": key, "role": role}
    try:
        stored = store_memory(conn, settings, ctx, MemoryWrite(
            content=text, source_type=SOURCE_TYPE, memory_class="explicit",
            visibility=kind, trust_class="imported", metadata=metadata,
            occurred_at=when,
        ), embedder=embedder)
    except InvalidInput as exc:
        result.rejected += 1
        _error(result, relative, number, str(exc))
        return
    done[key] = None
    with committed_unit(conn):
        if ctx.session_key and not stored.deduplicated:
            # The write path gives a manual row its audience's scope; a transcript with a
            # resolved session belongs to that session.
            conn.execute("UPDATE agent_memories SET memory_scope = 'session'"
                         " WHERE instance_key = %s AND id = %s",
                         (ctx.instance_key, stored.id))
        if withheld is not None:
            # The line an import before migration 0036 gave everyone: superseded by the
            # owner's copy (its source stays in its own audience), purged by retention.
            conn.execute("UPDATE agent_memories SET memory_state = 'superseded',"
                         "       superseded_by_memory_id = %s"
                         " WHERE instance_key = %s AND id = %s AND memory_state = %s",
                         (stored.id, ctx.instance_key, withheld, WITHHELD))
    if withheld is not None:
        result.assigned += 1
    elif stored.deduplicated:
        result.deduplicated += 1
    else:
        result.imported += 1


LAST_IMPORT_KEY = "legacy_import_last"


def stored_last_import(conn: psycopg.Connection, instance_key: str) -> dict | None:
    """The last import's result as any process stored it (``app_settings``), or None."""
    row = conn.execute("SELECT value FROM app_settings WHERE instance_key = %s AND key = %s",
                       (instance_key, LAST_IMPORT_KEY)).fetchone()
    return json.loads(row[0]) if row and row[0] else None
