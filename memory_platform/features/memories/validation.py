"""What may be stored: non-empty text within the size limit, no control characters, and no
credentials in any stored string (secrets never enter memory: they would be retrieved into
prompts; ``memory_platform.foundation.secrets`` recognises them)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_platform.foundation.errors import InvalidInput
from memory_platform.foundation.secrets import assignment_text, find_secret, refuse_secret

# Control characters (Cc) and lone surrogates (Cs), except tab and line breaks: what no
# stored text holds (PostgreSQL refuses NUL; the rest corrupts what an agent reads back).
_REFUSED_TEXT_CHARACTER = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def refused_text_character(text: str) -> str | None:
    """The first character a stored text may not hold, or None (linear time)."""
    found = _REFUSED_TEXT_CHARACTER.search(text)
    return found.group() if found else None


def clean_content(text: object, *, max_chars: int, field: str = "content") -> str:
    """The content to store (trimmed), or a specific InvalidInput/CredentialDetected."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be a string", details={"field": field})
    text = text.strip()
    if not text:
        raise InvalidInput(f"{field} is empty", details={"field": field})
    if len(text) > max_chars:
        raise InvalidInput(
            f"{field} has {len(text)} characters; the limit is {max_chars}",
            details={"field": field, "limit": max_chars, "length": len(text)},
        )
    bad = refused_text_character(text)
    if bad is not None:
        raise InvalidInput(
            f"{field} contains the control character U+{ord(bad):04X}",
            details={"field": field, "character": f"U+{ord(bad):04X}"},
        )
    _refuse_overlong_words(text, field)
    refuse_secret(text, field=field)
    return text


# PostgreSQL's full text search refuses a lexeme over 2,047 bytes, and a few letters grow when
# lower-cased (U+023A: 2 -> 3 bytes), so a long enough run of them passes the raw check and
# breaks the stored tsvector on some server versions. Words this long are blobs, never prose.
MAX_WORD_BYTES = 1000
_LONG_RUN = re.compile(r"[^\W_]{256,}")


def _refuse_overlong_words(text: str, field: str) -> None:
    for match in _LONG_RUN.finditer(text):
        size = len(match.group().lower().encode())
        if size > MAX_WORD_BYTES:
            raise InvalidInput(
                f"{field} holds a word of {size} bytes; the limit is {MAX_WORD_BYTES} (a blob "
                "or an encoded value: store a reference to it instead)",
                code="word_too_long", details={"field": field, "limit": MAX_WORD_BYTES})


TITLE_MAX_CHARS = 300
METADATA_MAX_BYTES = 16 * 1024

# The event time of a memory (``occurredAt``): when what it says happened, as opposed to when
# it was written (``created_at``). A little clock skew between the writer and us is fine;
# an event a day or more ahead is a mistake (a wrong year, a local time read as UTC twice).
OCCURRED_AT_MAX_AHEAD = timedelta(days=1)
# RFC 3339 date-time: a full date, "T", hours and minutes (seconds and up to 6 fraction
# digits optional), and an explicit offset ("Z" or +hh:mm). Nothing looser: a date alone, a
# space instead of "T", the basic format or a missing offset would each be read differently
# by somebody.
_ISO_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})")


def parse_occurred_at(text: object, *, field: str = "occurredAt") -> datetime:
    """The timezone-aware datetime (in UTC) of an ISO-8601 / RFC 3339 string with an offset,
    or InvalidInput naming ``field``: a string without an offset is refused, not guessed (it
    could be anybody's local time)."""
    if not isinstance(text, str):
        raise InvalidInput(f"{field} must be an ISO-8601 date-time string with an offset",
                           details={"field": field})
    if not _ISO_DATETIME.fullmatch(text):
        raise InvalidInput(
            f"{field} must be an ISO-8601 date-time with an offset, e.g. "
            "2024-05-01T09:30:00+02:00 or 2024-05-01T07:30:00Z", details={"field": field})
    try:
        parsed = datetime.fromisoformat(text)
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise InvalidInput(f"{field} is not a valid date-time: {exc}",
                           details={"field": field}) from exc


def clean_occurred_at(value: object, *, now: datetime,
                      field: str = "occurredAt") -> datetime | None:
    """The event time to store (UTC), or None when there is none. A string is parsed by
    :func:`parse_occurred_at`; a datetime must be timezone-aware (a naive one is refused: it
    could be anybody's local time). Refused too: more than :data:`OCCURRED_AT_MAX_AHEAD`
    after ``now`` (the caller's clock, passed in so the rule stays pure)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_occurred_at(value, field=field)
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be an ISO-8601 date-time string with an offset",
                           details={"field": field})
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} has no timezone offset; send it with one "
                           "(e.g. Z or +02:00)", details={"field": field})
    try:
        value = value.astimezone(UTC)
    except OverflowError as exc:
        raise InvalidInput(f"{field} is out of range", details={"field": field}) from exc
    if value - now > OCCURRED_AT_MAX_AHEAD:
        raise InvalidInput(
            f"{field} is {value.isoformat()}, more than a day after now: an event time "
            "cannot be in the future", code="occurred_at_in_future",
            details={"field": field, "now": now.isoformat()})
    return value


def clean_title(title: object) -> str | None:
    """A title follows the content's rules (it is stored and shown beside it)."""
    if title is None:
        return None
    return clean_content(title, max_chars=TITLE_MAX_CHARS, field="title")


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(field, text) of every string in a JSON value. A key comes first, named by its
    parent's path (a key may be the secret); a string value comes with its key as the JSON
    pair (``secrets.assignment_text``), so ``{"password": "correcthorse"}`` is read as the
    assignment it is."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield f"{path} (a key)", str(key)
            if isinstance(item, str):
                yield f"{path}.{key}", assignment_text(str(key), item)
            else:
                yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def refuse_secrets(strings: list[tuple[str, str]]) -> None:
    """CredentialDetected naming the first (field, text) that holds a secret. The texts are
    checked together first: one pass for the common case of none."""
    if find_secret("\n".join(text for _, text in strings)) is None:
        return
    for field, text in strings:
        refuse_secret(text, field=field)


def clean_metadata(metadata: object) -> dict[str, Any]:
    """Caller metadata: a small JSON object whose strings PostgreSQL can store and that holds
    no secret, in a key or in a value."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInput("metadata must be an object", details={"field": "metadata"})
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"metadata is not plain JSON: {exc}",
                           details={"field": "metadata"}) from exc
    if len(encoded.encode("utf-8", "surrogatepass")) > METADATA_MAX_BYTES:
        raise InvalidInput(f"metadata is larger than {METADATA_MAX_BYTES} bytes",
                           details={"field": "metadata"})
    strings = list(_strings(metadata, "metadata"))
    for _, text in strings:
        if "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text):
            raise InvalidInput("metadata contains a NUL character or an unpaired surrogate",
                               details={"field": "metadata"})
    refuse_secrets(strings)
    return dict(metadata)
