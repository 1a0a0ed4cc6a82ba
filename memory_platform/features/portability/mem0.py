"""Migration from mem0: its documented memory export into imported memories.

mem0 (https://docs.mem0.ai) returns memories from ``get_all`` (the platform client and the
open-source ``Memory``) as ``{"results": [item, ...]}`` (older platform versions: a bare
list) with items ``{"id", "memory", "hash", "metadata", "categories", "user_id",
"agent_id", "run_id", "app_id", "created_at", "updated_at"}``. This module reads such a file
(one JSON document, or JSON Lines of items or of pages) and turns every item into a row of
the bulk import (memories/bulk), so each gets the full rules of a write: validation,
credential refusal, dedup, chunking, a source envelope and a ``fact`` assertion of trust
``imported`` under the write-path policy (ledger/policy.py: imported facts wait for review).

The field mapping is docs/migrating-from-mem0.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from memory_platform.features.memories.bulk.reader import MalformedLine, NumberedRow
from memory_platform.foundation.errors import InvalidInput

VISIBILITIES = ("private", "derived", "team")
# Item fields that are copied into metadata.mem0 (provenance; nothing is lost).
PROVENANCE = ("id", "hash", "categories", "agent_id", "run_id", "app_id", "actor_id",
              "role", "created_at", "updated_at", "expiration_date", "immutable")


def _items(document: Any) -> Iterator[Any]:
    if isinstance(document, list):
        for entry in document:
            yield from _items(entry) if isinstance(entry, list) else (entry,)
    elif isinstance(document, dict) and isinstance(document.get("results"), list):
        yield from document["results"]
    elif isinstance(document, dict) and isinstance(document.get("memories"), list):
        yield from document["memories"]
    else:
        yield document


def read_mem0(path: str) -> Iterator[NumberedRow | MalformedLine]:
    """The items of a mem0 export file, numbered (a JSON document's items by position, a
    JSON Lines file's by line; a page line ``{"results": [...]}`` gives its items that
    line's number)."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield MalformedLine(1, f"the file is not UTF-8 (byte {exc.start})")
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if document is not None:
        for position, item in enumerate(_items(document), 1):
            yield NumberedRow(position, item)
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield MalformedLine(number, f"malformed JSON: {exc.msg} (column {exc.colno})")
            continue
        for item in _items(value):
            yield NumberedRow(number, item)


def _timestamp(value: Any) -> str | None:
    """mem0 writes ISO-8601 with an offset; a naive time is taken as UTC."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace(" ", "T", 1)
    if text.endswith("Z") or "+" in text[10:] or "-" in text[10:]:
        return text
    return text + "+00:00"


def to_bulk_row(item: Any, *, visibility: str = "private") -> dict[str, Any]:
    """One mem0 item as a bulk-import row; InvalidInput for an item without text."""
    if not isinstance(item, dict):
        raise InvalidInput("a mem0 memory must be an object")
    text = item.get("memory")
    if text is None:
        text = item.get("text", item.get("data"))
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("a mem0 memory needs its text (field 'memory')")
    user = item.get("user_id") or None
    agent = item.get("agent_id") or None
    provenance = {k: item[k] for k in PROVENANCE if item.get(k) not in (None, "", [])}
    original = item.get("metadata")
    if isinstance(original, dict) and original:
        provenance["metadata"] = original
    row: dict[str, Any] = {
        "content": text,
        "source_type": "fact",
        "trust_class": "imported",
        "metadata": {"mem0": provenance},
    }
    if user:
        row["user_id"] = str(user)
        if visibility != "derived":
            row["visibility"] = visibility
    else:
        row["visibility"] = "workspace"     # an agent's or app's memory: instance-wide
    if agent:
        row["subject_refs"] = {"agent": str(agent)}
    occurred = _timestamp(item.get("created_at"))
    if occurred:
        row["occurred_at"] = occurred
    return row


def bulk_rows(items: Iterable[NumberedRow | MalformedLine], *,
              visibility: str = "private") -> Iterator[NumberedRow | MalformedLine]:
    """mem0 items as numbered bulk rows; an item that cannot be mapped becomes a
    :class:`MalformedLine` (reported by the import, never fatal)."""
    if visibility not in VISIBILITIES:
        raise InvalidInput(f"visibility must be one of {', '.join(VISIBILITIES)}")
    for entry in items:
        if isinstance(entry, MalformedLine):
            yield entry
            continue
        try:
            yield NumberedRow(entry.line, to_bulk_row(entry.value, visibility=visibility))
        except InvalidInput as exc:
            yield MalformedLine(entry.line, str(exc))
