"""Workspace memory sync (specification, "Workspace memory sync", "Prompt-file memory").

The workspace directory is authoritative file-based long-term memory: every markdown file
under ``memory/`` (any depth) and the bootstrap files at its top (:data:`BOOTSTRAP_FILES`)
are mirrored into ``agent_memories`` as workspace rows with ``source_type = prompt_file``
and ``metadata.importSource`` = the file's path relative to the directory.

* A file is identified by its relative path and compared by the SHA-256 of its bytes
  (``metadata.fileHash``): an unchanged file changes nothing (a second sync is a no-op).
* A new file is written through the write path (``store_memory``: validation, credential
  refusal, chunking, embedding). A changed file replaces its row: the new row is written
  first, then the old one is deleted (its chunks cascade). When the new text cannot be
  stored (too long, a credential, control characters) the old row is deleted all the same
  (the file no longer says it) and the reason is reported.
* Rows whose file disappeared (or is no longer acceptable: a symlink out of the directory,
  over the size cap) are deleted.
* Bounded: at most :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES` bytes each; a
  file or directory whose real path leaves the workspace (a symlink escape) is refused.
* Each row carries ``subject_refs.documentId = "workspace:<path>"``, so two files with the
  same text are two rows (the write path dedups per subject) and a user's own workspace
  memory with the same text never becomes "the file's row".

``sync_workspace`` commits its own units (``db/units.py``): call it outside a transaction.
Its result (counts, refused files with their reasons) is stored per instance in
``app_settings`` (:func:`stored_last_sync`), so the status report of any process shows it.
``sync_workspace_cached`` answers the last result of the same directory for
:data:`SYNC_TTL_SECONDS` unless forced.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from memory_platform.features.memories.store import MemoryWrite, store_memory
from memory_platform.foundation.db.units import (
    commit_if_idle,
    committed_unit,
    require_idle,
    rollback_if_open,
)
from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.settings import Settings
from memory_platform.shared.access import AccessContext
from memory_platform.shared.embeddings.base import EmbeddingProvider

BOOTSTRAP_FILES = ("AGENTS.md", "IDENTITY.md", "SOUL.md", "USER.md", "MEMORY.md", "TOOLS.md")
MEMORY_DIR = "memory"
# Proposed settings (the integrator may move them to settings.py): the file size cap, the
# number of files one sync considers, and the short TTL of the cached result.
MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 2_000
SYNC_TTL_SECONDS = 60.0
SOURCE_TYPE = "prompt_file"
ORIGIN = "workspace_sync"          # metadata.origin of every synced row
_DOCUMENT_PREFIX = "workspace:"


@dataclass
class SyncResult:
    instance_key: str
    directory: str
    files: int = 0                 # acceptable files seen
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0               # rows removed: their file disappeared (or is refused now)
    refused: list[tuple[str, str]] = field(default_factory=list)   # (path, reason)
    truncated: bool = False        # more than MAX_FILES candidate files
    seconds: float = 0.0
    synced_at: float = 0.0         # time.time() of the end

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.deleted)

    def as_dict(self) -> dict:
        return {"instanceKey": self.instance_key, "directory": self.directory,
                "syncedAt": (datetime.fromtimestamp(self.synced_at, UTC).isoformat()
                             if self.synced_at else None),
                "files": self.files, "added": self.added, "updated": self.updated,
                "unchanged": self.unchanged, "deleted": self.deleted,
                "refused": [{"path": p, "reason": r} for p, r in self.refused],
                "truncated": self.truncated, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class _File:
    relative: str
    path: Path


def fingerprint(directory: str | os.PathLike[str]) -> str:
    """A hash of the workspace's candidate files (path, size, modification time): what a
    sensor compares to decide whether a sync is due, without reading the files."""
    digest = hashlib.sha256()
    for file in workspace_files(directory):
        stat = file.path.stat()
        digest.update(f"{file.relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _inside(root: Path, path: Path) -> bool:
    try:
        return path.resolve(strict=True).is_relative_to(root)
    except (OSError, RuntimeError):   # dangling link, loop
        return False


def workspace_files(directory: str | os.PathLike[str],
                    result: SyncResult | None = None) -> list[_File]:
    """The candidate files of the workspace, sorted by relative path: the bootstrap files
    and ``memory/**/*.md``. Refused (recorded in ``result``): anything whose real path is
    outside the directory, non-regular files, files over :data:`MAX_FILE_BYTES`. At most
    :data:`MAX_FILES` are answered (``result.truncated`` then)."""
    root = Path(directory).resolve(strict=True)
    if not root.is_dir():
        raise InvalidInput(f"workspace directory {str(directory)!r} is not a directory",
                           details={"field": "directory"})
    refused = result.refused if result is not None else []
    candidates: list[tuple[str, Path]] = []
    for name in BOOTSTRAP_FILES:
        path = root / name
        if path.exists() or path.is_symlink():
            candidates.append((name, path))
    memory = root / MEMORY_DIR
    if memory.is_dir() and not _inside(root, memory):
        refused.append((MEMORY_DIR, "outside the workspace (symlink)"))
    elif memory.is_dir():
        for current, dirs, names in os.walk(memory, followlinks=False):
            here = Path(current)
            # Symlinked directories are not followed by os.walk; a link that stays inside
            # is reached by its real path anyway, one that leaves is refused here.
            for d in sorted(dirs):
                if (here / d).is_symlink() and not _inside(root, here / d):
                    refused.append(((here / d).relative_to(root).as_posix(),
                                    "outside the workspace (symlink)"))
            dirs.sort()
            for name in sorted(names):
                if name.endswith(".md"):
                    path = here / name
                    candidates.append((path.relative_to(root).as_posix(), path))
            if len(candidates) > MAX_FILES + len(BOOTSTRAP_FILES):
                break
    candidates.sort()
    files: list[_File] = []
    for relative, path in candidates:
        if not _inside(root, path):
            refused.append((relative, "outside the workspace (symlink)"))
        elif not path.resolve().is_file():
            refused.append((relative, "not a regular file"))
        elif path.stat().st_size > MAX_FILE_BYTES:
            refused.append((relative, f"larger than {MAX_FILE_BYTES} bytes"))
        elif len(files) >= MAX_FILES:
            if result is not None:
                result.truncated = True
            break
        else:
            files.append(_File(relative, path))
    return files


def _synced_rows(conn: psycopg.Connection, instance_key: str) -> dict[str, list[tuple]]:
    """The synced rows of the instance by relative path: [(id, fileHash)]."""
    rows = conn.execute(
        "SELECT id, metadata->>'importSource', metadata->>'fileHash' FROM agent_memories"
        " WHERE instance_key = %s AND source_type = %s AND visibility_scope = 'workspace'"
        "   AND metadata->>'origin' = %s ORDER BY created_at",
        (instance_key, SOURCE_TYPE, ORIGIN),
    ).fetchall()
    by_path: dict[str, list[tuple]] = {}
    for memory_id, relative, digest in rows:
        by_path.setdefault(relative, []).append((memory_id, digest))
    return by_path


def _delete(conn: psycopg.Connection, instance_key: str, ids: list[uuid.UUID]) -> int:
    if not ids:
        return 0
    with committed_unit(conn):
        return conn.execute(
            "DELETE FROM agent_memories WHERE instance_key = %s AND id = ANY(%s)",
            (instance_key, ids),
        ).rowcount


def _read_text(path: Path) -> str:
    data = path.read_bytes()[:MAX_FILE_BYTES + 1]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("not UTF-8 text") from exc


def sync_workspace(conn: psycopg.Connection, settings: Settings, instance_key: str,
                   directory: str | os.PathLike[str], *,
                   embedder: EmbeddingProvider | None = None) -> SyncResult:
    """Mirror the workspace's memory files into ``instance_key``'s workspace memories (see
    the module doc). Idempotent; one sync of an instance at a time (a session advisory
    lock: a concurrent sync waits)."""
    require_idle(conn, "sync_workspace")
    started = time.perf_counter()
    result = SyncResult(instance_key, str(directory))
    files = workspace_files(directory, result)
    result.files = len(files)
    ctx = AccessContext(instance_key)
    lock = f"workspace-sync:{instance_key}"
    conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (lock,))
    try:
        existing = _synced_rows(conn, instance_key)
        for file in files:
            rows = existing.pop(file.relative, [])
            try:
                raw = file.path.read_bytes()
            except OSError as exc:
                result.refused.append((file.relative, f"unreadable: {exc.strerror}"))
                continue
            digest = hashlib.sha256(raw).hexdigest()
            if len(rows) == 1 and rows[0][1] == digest:
                result.unchanged += 1
                continue
            old_ids = [memory_id for memory_id, _ in rows]
            try:
                text = _read_text(file.path)
                if not text.strip():
                    raise InvalidInput("empty file")
                stored = store_memory(conn, settings, ctx, MemoryWrite(
                    content=text, source_type=SOURCE_TYPE, memory_class="explicit",
                    visibility="workspace", trust_class="system",
                    subject_refs={"documentId": _DOCUMENT_PREFIX + file.relative},
                    title=file.relative,
                    metadata={"importSource": file.relative, "fileHash": digest,
                              "origin": ORIGIN},
                ), embedder=embedder)
            except InvalidInput as exc:   # CredentialDetected is one too
                result.refused.append((file.relative, str(exc)))
                result.deleted += _delete(conn, instance_key, old_ids)
                continue
            if stored.deduplicated:
                # Only case or whitespace changed (the write path's dedup found the row): the
                # row stays and records the new bytes, so the next sync sees it unchanged.
                with committed_unit(conn):
                    conn.execute("UPDATE agent_memories SET metadata = metadata"
                                 " || jsonb_build_object('fileHash', %s::text)"
                                 " WHERE instance_key = %s AND id = %s",
                                 (digest, instance_key, stored.id))
            stale = [i for i in old_ids if i != stored.id]
            _delete(conn, instance_key, stale)
            if rows:
                result.updated += 1
            else:
                result.added += 1
        gone = [memory_id for rows in existing.values() for memory_id, _ in rows]
        if not result.truncated:   # a truncated listing does not prove a file gone
            result.deleted += _delete(conn, instance_key, gone)
    finally:
        rollback_if_open(conn)   # only reads can be open here: every write is committed
        conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (lock,))
        commit_if_idle(conn)
    result.seconds = time.perf_counter() - started
    result.synced_at = time.time()
    with committed_unit(conn):
        conn.execute(
            "INSERT INTO app_settings (instance_key, key, value) VALUES (%s, %s, %s)"
            " ON CONFLICT (instance_key, key) DO UPDATE SET value = EXCLUDED.value",
            (instance_key, LAST_SYNC_KEY, json.dumps(result.as_dict())))
    return result


LAST_SYNC_KEY = "workspace_sync_last"


def stored_last_sync(conn: psycopg.Connection, instance_key: str) -> dict | None:
    """The last sync's result as any process stored it (``app_settings``): counts, refused
    files with their reasons, when; None before the first sync."""
    row = conn.execute("SELECT value FROM app_settings WHERE instance_key = %s AND key = %s",
                       (instance_key, LAST_SYNC_KEY)).fetchone()
    return json.loads(row[0]) if row and row[0] else None


_cache: dict[tuple[str, str], SyncResult] = {}
_cache_lock = threading.Lock()


def sync_workspace_cached(conn: psycopg.Connection, settings: Settings, instance_key: str,
                          directory: str | os.PathLike[str], *, force: bool = False,
                          ttl_seconds: float = SYNC_TTL_SECONDS,
                          embedder: EmbeddingProvider | None = None) -> SyncResult:
    """The last sync of this instance and directory when younger than ``ttl_seconds``, else
    a new sync (``force`` always syncs: the admin's "synchronise now")."""
    key = (instance_key, str(Path(directory).resolve()))
    with _cache_lock:
        last = _cache.get(key)
    if not force and last is not None and time.time() - last.synced_at < ttl_seconds:
        return last
    result = sync_workspace(conn, settings, instance_key, directory, embedder=embedder)
    with _cache_lock:
        _cache[key] = result
    return result
