"""Reading request input safely: size limit, media type, strict UTF-8, strict JSON, model."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel
from starlette.requests import Request

from api.errors import ApiError

Model = TypeVar("Model", bound=BaseModel)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


MAX_DEPTH = 32


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _unstorable(value: object, path: str = "", depth: int = 0) -> str | None:
    """Path of the first string PostgreSQL cannot store (NUL, lone surrogates), if any."""
    if depth > MAX_DEPTH:
        raise ApiError(400, "malformed_json", f"JSON nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        if "\x00" in value or any("\ud800" <= c <= "\udfff" for c in value):
            return path or "(value)"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = (_unstorable(key, path, depth + 1)
                     or _unstorable(item, f"{path}.{key}" if path else key, depth + 1))
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _unstorable(item, f"{path}[{index}]", depth + 1)
            if found:
                return found
    return None


def _reject_unstorable(data: object) -> None:
    where = _unstorable(data)
    if where:
        raise ApiError(400, "invalid_characters",
                       f"{where} contains a NUL character or an unpaired surrogate",
                       {"field": where})


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "body_too_large", f"request body exceeds {limit} bytes",
                       {"limit": limit})
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise ApiError(413, "body_too_large", f"request body exceeds {limit} bytes",
                           {"limit": limit})
    return bytes(body)


async def read_json(request: Request, model: type[Model]) -> Model:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json":
        raise ApiError(415, "unsupported_media_type", "send the body as application/json")
    raw = await read_body(request, request.state.settings.api_max_body_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "invalid_encoding",
                       f"request body is not valid UTF-8 (byte {exc.start})") from exc
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError as exc:
        raise ApiError(400, "malformed_json",
                       f"JSON nested deeper than {MAX_DEPTH} levels") from exc
    except (json.JSONDecodeError, ValueError) as exc:
        raise ApiError(400, "malformed_json", f"request body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError(400, "malformed_json", "request body must be a JSON object")
    _reject_unstorable(data)
    return model.model_validate(data)


def read_query(request: Request, model: type[Model]) -> Model:
    params = request.query_params
    duplicated = sorted({k for k in params.keys() if len(params.getlist(k)) > 1})
    if duplicated:
        raise ApiError(400, "validation_error", f"parameter given twice: {duplicated[0]}",
                       [{"field": k, "problem": "given more than once"} for k in duplicated])
    values = dict(params)
    _reject_unstorable(values)
    return model.model_validate(values)
