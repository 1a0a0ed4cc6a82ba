"""The input of a bulk import: JSON Lines numbered by line, and the access context a row
describes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memory_platform.shared.access import AccessContext


@dataclass(frozen=True)
class NumberedRow:
    """A decoded row and the line it came from."""

    line: int
    value: object


@dataclass(frozen=True)
class MalformedLine:
    """A line that is not a JSON value; reported, never fatal."""

    line: int
    reason: str


def _no_constants(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def read_jsonl(lines: Iterable[bytes | str]) -> Iterator[NumberedRow | MalformedLine]:
    """Decode JSON Lines, numbering lines from 1; blank lines are skipped, a line that is not
    UTF-8 or not JSON becomes a :class:`MalformedLine`."""
    for number, raw in enumerate(lines, 1):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield MalformedLine(number, f"line is not valid UTF-8 (byte {exc.start})")
                continue
        text = raw.strip()
        if not text:
            continue
        try:
            value = json.loads(text, parse_constant=_no_constants)
        except json.JSONDecodeError as exc:
            yield MalformedLine(number, f"malformed JSON: {exc.msg} (column {exc.colno})")
            continue
        except (ValueError, RecursionError) as exc:
            yield MalformedLine(number, f"malformed JSON: {exc}")
            continue
        yield NumberedRow(number, value)


def numbered(rows: Iterable[Any]) -> Iterator[NumberedRow | MalformedLine]:
    """``rows`` with line numbers: :func:`read_jsonl` items as they are, plain rows numbered
    by position from 1."""
    for position, item in enumerate(rows, 1):
        if isinstance(item, NumberedRow | MalformedLine):
            yield item
        else:
            yield NumberedRow(position, item)


def context_from_row(default_instance: str) -> Callable[[Mapping[str, Any]], AccessContext]:
    """The access context a row describes: its own access fields, in its own instance or
    ``default_instance``."""

    def ctx_for_row(row: Mapping[str, Any]) -> AccessContext:
        return AccessContext(
            instance_key=row.get("instance_key") or default_instance,
            user_id=row.get("user_id"),
            session_key=row.get("session_key"),
            group_room_id=row.get("group_room_id"),
            channel_thread_key=row.get("channel_thread_key"),
            channel_type=row.get("channel_type"),
        )

    return ctx_for_row
