"""Reading request input safely: size limit, media type, strict UTF-8, strict JSON, the
character rules, then the model.

Character rules, applied to every string of a JSON body (keys included, at any depth) and to
every query parameter (names and values) before the model sees it:

* nowhere: NUL, unpaired surrogates (PostgreSQL cannot store them), and the C0/C1 control
  characters (U+0001-U+001F, U+007F-U+009F) other than tab, line feed and carriage return;
* free text (:data:`FREE_TEXT`, the top-level fields a person writes: content, title, query,
  pattern, responseText; and :data:`FREE_TEXT_PATHS` below the top level: the content of each
  turn item of a session append; and every string of :data:`FREE_TEXT_TREES`: a turn item's
  raw form) may hold tab, line feed and carriage return;
* everything else is an identifier, a key or a reference (context fields, run ids, subject
  refs, partition keys, parameter names): no control character at all, and no invisible
  format character (Unicode Cf, e.g. zero-width space, soft hyphen, bidi overrides, BOM) or
  line/paragraph separator, so two keys that look the same are the same key.

A refusal is ``400 invalid_characters`` naming the field and the character; nothing is read
further, so nothing is written.

Limits: a body holds at most ``api_max_body_bytes`` and :data:`MAX_VALUES` JSON values unless
its operation declares its own (a session append carries hundreds of turn items); it is
received by ``api.admission.receive_body`` (a body slot, a total deadline).
"""

from __future__ import annotations

import gc
import json
import re
import unicodedata
from typing import TypeVar

from pydantic import BaseModel
from starlette.requests import Request

from api.admission import receive_body
from api.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)

MAX_DEPTH = 32
# Most JSON values (objects, arrays, strings, numbers) in one body: far above what any
# request model takes, and a bound on the work of checking them on the event loop.
MAX_VALUES = 2000

# Top-level fields of request bodies and query strings that hold text a person writes.
FREE_TEXT = frozenset({"content", "title", "query", "pattern", "responseText"})
# Free-text fields below the top level, by path with every list index written ``[]``.
FREE_TEXT_PATHS = frozenset({"items[].content"})
# Free-text trees: every string below them, at any depth and in lists, is free text (their
# keys stay keys). A turn item's raw form holds the item's text in the client's own shape.
FREE_TEXT_TREES = ("items[].raw.", "items[].raw[")
_INDEX = re.compile(r"\[\d+\]")

_FREE_TEXT_REFUSED = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# Unicode 14 (Python 3.11) Cf, Zl and Zp; tests/api/test_bad_input.py checks the class
# against unicodedata, so a newer Unicode version cannot leave one out unnoticed.
_INVISIBLE = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
              "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd"
              "\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
              "\U000e0001\U000e0020-\U000e007f")
_IDENTIFIER_REFUSED = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff" + _INVISIBLE + "]")


def refused_character(value: str, *, free_text: bool) -> str | None:
    """The first character ``value`` may not hold (free text or identifier rules), or None."""
    found = (_FREE_TEXT_REFUSED if free_text else _IDENTIFIER_REFUSED).search(value)
    return found.group() if found else None


def is_free_text(path: str) -> bool:
    """Whether the field at ``path`` (``content``, ``items[3].content``) holds free text."""
    if "[" not in path:
        return path in FREE_TEXT
    general = _INDEX.sub("[]", path)
    return general in FREE_TEXT_PATHS or general.startswith(FREE_TEXT_TREES)


def _describe(char: str) -> str:
    code = f"U+{ord(char):04X}"
    if char == "\x00":
        return f"a NUL character ({code})"
    if "\ud800" <= char <= "\udfff":
        return f"an unpaired surrogate ({code})"
    name = unicodedata.name(char, "")
    if unicodedata.category(char) == "Cc":
        return f"the control character {code}"
    return f"the invisible character {code}" + (f" ({name})" if name else "")


def _refuse(field: str, char: str, *, key: bool = False) -> ApiError:
    where = f"a key of {field}" if key else field
    return ApiError(400, "invalid_characters",
                    f"{where} contains {_describe(char)}; identifiers and keys take no "
                    "control or invisible characters, text fields only tab and line breaks",
                    {"field": field, "character": f"U+{ord(char):04X}"})


def _check(value: object, path: str, depth: int, free_text: bool, root: str,
           budget: list[int]) -> None:
    """Raise the refusal of the first string under ``value`` that breaks the rules (or of a
    body deeper than MAX_DEPTH or with more values than allowed: ``budget`` holds the values
    left and the limit)."""
    if depth > MAX_DEPTH:
        raise ApiError(400, "malformed_json", f"JSON nested deeper than {MAX_DEPTH} levels")
    budget[0] -= 1
    if budget[0] < 0:
        raise ApiError(400, "too_many_values",
                       f"{root} holds more than {budget[1]} JSON values", {"limit": budget[1]})
    if isinstance(value, str):
        char = refused_character(value, free_text=free_text)
        if char is not None:
            raise _refuse(path or root, char)
    elif isinstance(value, dict):
        for key, item in value.items():
            char = refused_character(key, free_text=False)
            if char is not None:
                raise _refuse(path or root, char, key=True)
            inner = f"{path}.{key}" if path else key
            _check(item, inner, depth + 1, is_free_text(inner), root, budget)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            inner = f"{path}[{index}]"
            _check(item, inner, depth + 1, is_free_text(inner), root, budget)


def check_characters(data: dict[str, object], root: str, max_values: int = MAX_VALUES) -> None:
    """Refuse (400 invalid_characters) the first string of ``data`` that breaks the
    character rules: keys everywhere and values are identifiers, except the free-text fields
    (:func:`is_free_text`). ``root`` names the whole (``(body)``, ``(query)``) when a
    top-level key is refused. More than ``max_values`` values: 400 too_many_values."""
    _check(data, "", 0, False, root, [max_values, max_values])


def _parsed(text: str, max_values: int = MAX_VALUES) -> dict[str, object]:
    """The JSON object of ``text`` (strict: no NaN or Infinity, finite numbers), its
    characters and size checked, with the cyclic garbage collector paused meanwhile. A parse
    makes only trees, freed by reference counting; collecting while a body of thousands of
    small arrays is parsed or walked would promote them and then walk the whole heap, on
    the event loop (80 ms a body instead of 5 ms: docs/benchmarks.md, hostile input)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
        except RecursionError as exc:
            raise ApiError(400, "malformed_json",
                           f"JSON nested deeper than {MAX_DEPTH} levels") from exc
        except (json.JSONDecodeError, ValueError) as exc:
            raise ApiError(400, "malformed_json",
                           f"request body is not valid JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise ApiError(400, "malformed_json", "request body must be a JSON object")
        check_characters(data, "(body)", max_values)
        return data
    finally:
        if enabled:
            gc.enable()


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


async def read_json(request: Request, model: type[Model], *, max_bytes: int | None = None,
                    max_values: int = MAX_VALUES) -> Model:
    """The body as ``model``: at most ``max_bytes`` (default ``api_max_body_bytes``) and
    ``max_values`` JSON values."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    limit = request.state.settings.api_max_body_bytes if max_bytes is None else max_bytes
    raw = await receive_body(request, limit)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "invalid_encoding",
                       f"request body is not valid UTF-8 (byte {exc.start})") from exc
    return model.model_validate(_parsed(text, max_values))


def read_query(request: Request, model: type[Model]) -> Model:
    params = request.query_params
    duplicated = sorted({k for k in params.keys() if len(params.getlist(k)) > 1})
    if duplicated:
        raise ApiError(400, "validation_error", f"parameter given twice: {duplicated[0]}",
                       [{"field": k, "problem": "given more than once"} for k in duplicated])
    values = dict(params)
    check_characters(values, "(query)")
    return model.model_validate(values)
