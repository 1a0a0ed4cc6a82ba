"""Turn a model's raw text into exactly one JSON object, or fail closed.

Two provider habits are normalised, each at most once and only when what remains parses as
exactly one JSON object:

- one leading Markdown fence (```` ```json ```` or a bare ```` ``` ````), with or without its
  closing fence;
- one redundant anonymous wrapper object: ``{"response": {...payload...}}`` where the single
  value is itself the contract payload (it has ``schemaVersion``).

Everything else fails closed with :class:`ModelError` ``malformed_output`` and a reason:
commentary before or after the object, several objects, a top-level array or scalar,
malformed or truncated JSON, duplicate keys, NaN/Infinity. Whether the object satisfies the
contract (unknown fields, caps, citations) is the validator's business, not this module's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memory_platform.shared.llm.base import ModelError

PAYLOAD_MARKER = "schemaVersion"
_OPENING_FENCE = re.compile(r"\A```[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[ \t]*\r?\n")
_CLOSING_FENCE = re.compile(r"\r?\n?[ \t]*```[ \t]*\Z")
_PREVIEW_CHARS = 80


def _fail(reason: str, text: str, **extra: Any) -> ModelError:
    preview = text[:_PREVIEW_CHARS]
    return ModelError("malformed_output", reason,
                      diagnostic={"chars": len(text), "preview": preview, **extra})


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)


def strip_fence(text: str) -> tuple[str, bool]:
    """Remove one leading json (or bare) Markdown fence and, if present, its closing fence."""
    match = _OPENING_FENCE.match(text)
    if match is None:
        return text, False
    if match.group("lang") and match.group("lang").lower() != "json":
        return text, False  # ```python ... is not a JSON answer; the parse below rejects it
    body = text[match.end():]
    closing = _CLOSING_FENCE.search(body)
    if closing is not None:
        body = body[: closing.start()]
    return body, True


def looks_truncated(body: str) -> bool:
    """True if ``body`` reads like the cut-off beginning of a JSON value: it ends inside a
    string or with brackets still open, and no bracket was closed out of order before."""
    stack: list[str] = []
    in_string = escaped = False
    for char in body:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]":
            if not stack or stack.pop() != char:
                return False
    return in_string or bool(stack)


def unwrap(data: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Remove one anonymous wrapper whose single value is the contract payload."""
    if PAYLOAD_MARKER in data or len(data) != 1:
        return data, None
    [(key, inner)] = data.items()
    if isinstance(inner, dict) and PAYLOAD_MARKER in inner:
        return inner, key
    return data, None


def parse_model_json(text: str) -> dict[str, Any]:
    """Exactly one JSON object from ``text`` (see the module docstring), else ModelError."""
    if not isinstance(text, str) or not text.strip():
        raise ModelError("empty", "the model returned no content",
                         diagnostic={"chars": len(text or "")})
    body, fenced = strip_fence(text.strip().lstrip("\ufeff"))
    body = body.strip()
    if not body:
        raise _fail("only a Markdown fence, no JSON", text)
    if body[0] != "{":
        if body[0] == "[":
            raise _fail("the top level is an array, not one object", text)
        if body.startswith("```"):
            raise _fail("more than one Markdown fence" if fenced
                        else "a Markdown fence that is not json", text)
        raise _fail("text before the JSON object (commentary or a non-JSON answer)", text)
    try:
        data, end = _DECODER.raw_decode(body)
    except json.JSONDecodeError as exc:
        reason = "truncated JSON" if looks_truncated(body) else "malformed JSON"
        raise _fail(f"{reason}: {exc.msg} at char {exc.pos}", text) from None
    except ValueError as exc:  # duplicate keys, NaN/Infinity
        raise _fail(f"malformed JSON: {exc}", text) from None
    rest = body[end:].strip()
    if rest:
        if rest[0] in "{[":
            what = "several JSON values"
        elif rest.strip("`").strip():
            what = "text after the JSON object (commentary)"
        else:
            what = "a stray Markdown fence after the JSON object"
        raise _fail(what, text, trailing=rest[:_PREVIEW_CHARS])
    data, _wrapper = unwrap(data)
    return data
