"""The first pass of an import: is the file whole, and is it what its header says?

It reads the file once, streaming, before the import writes anything, so a damaged or
crafted file fails with its line number and the target is left exactly as it was:

* every line is read with a bounded reader (:data:`format.MAX_LINE_BYTES`) and parsed with
  bounded nesting (:data:`format.MAX_DEPTH`; ``RecursionError`` and ``MemoryError`` are a
  refused line, never a traceback);
* line 1 is the header, the last line the footer (a file without one was cut short), the
  rows come in the order of :data:`format.KINDS`;
* the footer's SHA-256 of every byte before it and its line and row counts match (a file
  without a checksum is refused unless the caller says ``verify=False``);
* an audience export (``private:U``, ``channel:K``, ``team``, ``workspace``) holds rows of
  that audience only: a ``private:mallory`` file with a team row or another user's session
  or membership is not an export of mallory's data, whatever else it is.

It also notes what the file brings (sessions with history, channels with rows), which the
import's membership rule (portability/gate.py) is decided by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from memory_platform.features.portability.format import (
    BY_NAME,
    FOOTER,
    FORMAT,
    HEADER,
    LINK,
    LINK_TARGETS,
    MAX_DEPTH,
    MAX_LINE_BYTES,
    ORDER,
    SESSION_KINDS,
    VERSION,
)
from memory_platform.foundation.errors import InvalidInput

# Session kinds whose rows are the session's history (a session the file "brings").
_HISTORY = ("session", "session_run", "session_item", "session_summary")
# Columns of a row naming a channel thread or room.
_CHANNEL_COLUMNS = ("channel_thread_key", "group_room_id")


class DamagedFile(InvalidInput):
    """The file is cut, altered, malformed or not what its header says; nothing imported."""

    code = "damaged_import"


@dataclass
class FileSummary:
    """What the first pass learnt: the header, what the file brings, and its checksum."""

    header: dict[str, Any]
    lines: int = 0
    sha256: str = ""            # of every byte before the footer line
    verified: bool = False      # the footer's checksum was there and matched
    sessions: set[str] = field(default_factory=set)   # sessions with history in the file
    channels: set[str] = field(default_factory=set)   # channels with rows in the file


def read_lines(handle: IO[bytes], max_line_bytes: int = MAX_LINE_BYTES
               ) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw bytes)`` of each line; a line longer than ``max_line_bytes`` is
    refused with its number before it is read whole."""
    number = 0
    while True:
        raw = handle.readline(max_line_bytes + 1)
        if not raw:
            return
        number += 1
        if len(raw) > max_line_bytes:
            raise DamagedFile(f"line {number} is longer than {max_line_bytes:,} bytes: "
                              "refused (nothing was imported)")
        yield number, raw


def parse_line(number: int, raw: bytes, max_depth: int | None = MAX_DEPTH) -> Any:
    """One line as JSON, nested at most ``max_depth`` levels (None: a line the first pass
    checked; only the parser's own limit); DamagedFile otherwise."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise DamagedFile(f"line {number} is nested more than {max_depth} levels deep: "
                          "refused (nothing was imported)") from None
    except MemoryError:
        raise DamagedFile(f"line {number} is too large to parse: refused (nothing was "
                          "imported)") from None
    except ValueError as exc:   # JSONDecodeError, UnicodeDecodeError
        raise DamagedFile(f"line {number} is not valid JSON ({exc}): the file is damaged "
                          "(nothing was imported)") from None
    if max_depth is not None and _depth_exceeds(value, max_depth):
        raise DamagedFile(f"line {number} is nested more than {max_depth} levels deep: "
                          "refused (nothing was imported)")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))
    return False


def check_header(head: Any) -> dict[str, Any]:
    if not isinstance(head, dict) or head.get("kind") != HEADER \
            or head.get("format") != FORMAT:
        raise InvalidInput(f"not a {FORMAT} file (line 1 is no header)")
    if not isinstance(head.get("version"), int) or head["version"] > VERSION:
        raise InvalidInput(f"format version {head.get('version')!r} is newer than this "
                           f"release reads ({VERSION})")
    if not isinstance(head.get("instance_key"), str) or not head["instance_key"]:
        raise InvalidInput("the header names no instance_key")
    audience = head.get("audience")
    if audience is not None and not (
            isinstance(audience, dict) and isinstance(audience.get("kind"), str)
            and isinstance(audience.get("key"), str)):
        raise InvalidInput("the header's audience is not {\"kind\", \"key\"}")
    return head


def read_header(path: str) -> dict[str, Any]:
    """Line 1 of the file, checked (format, version, instance)."""
    with open(path, "rb") as handle:
        for number, raw in read_lines(handle):
            return check_header(parse_line(number, raw))
    raise InvalidInput("the file is empty (no header)")


class _Audience:
    """The rows an audience export may hold (export.py's selection, checked line by line)."""

    def __init__(self, head: dict[str, Any]) -> None:
        audience = head.get("audience")
        self.kind = audience["kind"] if audience else None
        self.key = audience["key"] if audience else None
        if self.kind in ("team", "workspace") and not self.key:
            self.key = head["instance_key"]
        self.own_sessions: set[str] = set()   # sessions whose history names the audience
        self.seen_sessions: dict[str, int] = {}   # session key -> first line naming it

    def check(self, number: int, name: str, row: dict[str, Any]) -> None:
        if self.kind is None:
            return
        kind = BY_NAME[name]
        if kind.audience == "own":
            found = (row.get(kind.kind_column), row.get("audience_key"))
            if found != (self.kind, self.key):
                self._refuse(number, f"a {name} row of {found[0]}:{found[1]}")
        elif kind.audience == "user":
            if self.kind == "private" and row.get("user_id") != self.key:
                self._refuse(number, f"a {name} row of user {row.get('user_id')!r}")
            if self.kind == "channel" and (name != "channel_member"
                                           or row.get("channel_key") != self.key):
                self._refuse(number, f"a {name} row outside the channel")
        elif kind.audience == "session":
            if self.kind not in ("private", "channel"):
                self._refuse(number, f"a {name} row (a {self.kind} export has no sessions)")
            session = row.get("session_key")
            self.seen_sessions.setdefault(session, number)
            if name in ("session", "session_run", "session_item") and (
                    (self.kind == "private" and row.get("user_id") == self.key)
                    or (self.kind == "channel"
                        and self.key in (row.get(c) for c in _CHANNEL_COLUMNS))):
                self.own_sessions.add(session)

    def finish(self) -> None:
        """Every session of the file is one of the audience's (its history names it)."""
        for session, number in self.seen_sessions.items():
            if session not in self.own_sessions:
                self._refuse(number, f"rows of session {session!r}, which is not one of "
                                     "its sessions")

    def _refuse(self, number: int, what: str) -> None:
        raise DamagedFile(f"line {number}: a {self.kind}:{self.key} export holds {what}: "
                          "refused (the file is not what its header says; nothing was "
                          "imported)")


def verify_file(path: str, *, verify: bool = True, max_line_bytes: int = MAX_LINE_BYTES,
                max_depth: int = MAX_DEPTH) -> FileSummary:
    """Read the whole file once, writing nothing; DamagedFile (with the line number) for
    any line or checksum that does not hold."""
    digest = hashlib.sha256()
    counts: dict[str, int] = {}
    links = 0
    last_kind = -1
    end: tuple[int, dict] | None = None
    summary: FileSummary | None = None
    audience: _Audience | None = None
    with open(path, "rb") as handle:
        for number, raw in read_lines(handle, max_line_bytes):
            if end is not None:
                raise DamagedFile(f"line {number} follows the footer (line {end[0]}): the "
                                  "file is damaged (nothing was imported)")
            if not raw.endswith(b"\n"):   # every line the export writes ends with one
                raise DamagedFile(f"line {number:,} ends without a line end: the file was "
                                  "cut short (nothing was imported)")
            record = parse_line(number, raw, max_depth)
            if number == 1:
                summary = FileSummary(check_header(record))
                audience = _Audience(summary.header)
                digest.update(raw)
                continue
            name = record.get("kind") if isinstance(record, dict) else None
            if name == FOOTER:
                end = (number, record)
                continue
            digest.update(raw)
            if name == LINK:
                kind = BY_NAME.get(record.get("of")) if isinstance(record.get("of"), str) \
                    else None
                if kind is None or record.get("column") not in kind.links \
                        or record["column"] not in LINK_TARGETS:
                    raise DamagedFile(f"line {number}: a link of unknown column "
                                      f"{record.get('column')!r} (nothing was imported)")
                links += 1
                continue
            if name not in BY_NAME:
                raise DamagedFile(f"line {number}: unknown record kind {name!r} (nothing "
                                  "was imported)")
            if ORDER[name] < last_kind:
                raise DamagedFile(f"line {number}: a {name} record out of order (nothing "
                                  "was imported)")
            last_kind = ORDER[name]
            row = record.get("row")
            if not isinstance(row, dict):
                raise DamagedFile(f"line {number}: a {name} record without a row object "
                                  "(nothing was imported)")
            counts[name] = counts.get(name, 0) + 1
            assert audience is not None and summary is not None
            audience.check(number, name, row)
            _brings(summary, name, row)
    if summary is None:
        raise InvalidInput("the file is empty (no header)")
    if end is None:
        raise DamagedFile(f"the file ends at line {number:,} without its footer: it was "
                          "cut short (nothing was imported)")
    assert audience is not None
    audience.finish()
    summary.lines = end[0]
    summary.sha256 = digest.hexdigest()
    _check_footer(summary, end[1], counts, links, verify)
    return summary


def _brings(summary: FileSummary, name: str, row: dict[str, Any]) -> None:
    """Note the sessions with history and the channels with rows of the file."""
    if name in _HISTORY and isinstance(row.get("session_key"), str):
        summary.sessions.add(row["session_key"])
    kind = BY_NAME[name]
    if kind.audience == "own" and row.get(kind.kind_column) == "channel" \
            and isinstance(row.get("audience_key"), str):
        summary.channels.add(row["audience_key"])
    if name in ("memory", "session_run", "session_item") or name in SESSION_KINDS:
        for column in _CHANNEL_COLUMNS:
            if isinstance(row.get(column), str) and row[column]:
                summary.channels.add(row[column])


def _check_footer(summary: FileSummary, end: dict, counts: dict[str, int], links: int,
                  verify: bool) -> None:
    number = summary.lines
    if end.get("lines") != number:
        raise DamagedFile(f"the footer (line {number}) counts {end.get('lines')!r} lines: "
                          "the file is damaged (nothing was imported)")
    declared = end.get("counts") if isinstance(end.get("counts"), dict) else None
    if declared is None or {k: v for k, v in declared.items() if v} != counts \
            or end.get("links") != links:
        raise DamagedFile(f"the footer (line {number}) counts other rows than the file "
                          "holds: the file is damaged (nothing was imported)")
    checksum = end.get("sha256")
    if checksum is None:
        if verify:
            raise DamagedFile("the file has no checksum (an export of an older release): "
                              "export it again, or import it unverified with --no-verify "
                              "(nothing was imported)")
        return
    if checksum != summary.sha256:
        raise DamagedFile("the file's SHA-256 is not the one its footer records: it was "
                          "altered or damaged (nothing was imported)")
    summary.verified = True
