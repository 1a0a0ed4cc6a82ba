"""The API's error answers as exceptions: one class per status family, each carrying the
API's ``code``, ``message`` and ``details`` (``{"error": {...}}``, api/errors.py).

Catch :class:`MemoryApiError` for any answer the API refused, or a subclass for one case
(``except NotFound``); :class:`MemoryConnectionError` is a request that got no answer.
"""

from __future__ import annotations

from typing import Any

import httpx


class MemoryClientError(Exception):
    """Anything the client raises on purpose."""


class MemoryConnectionError(MemoryClientError):
    """No answer: the server could not be reached, or the call timed out."""


class MemoryApiError(MemoryClientError):
    """The API answered with an error status."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after


class BadRequest(MemoryApiError):
    """400 / 422: the request was malformed or a field is invalid (nothing changed)."""


class Unauthorized(MemoryApiError):
    """401: no API key, or one that is unknown, revoked or expired."""


class Forbidden(MemoryApiError):
    """403: the key lacks the scope, or names a channel, room or session it is not in."""


class NotFound(MemoryApiError):
    """404: no such id, or none the caller may see."""


class Conflict(MemoryApiError):
    """409: the request conflicts with the current state (e.g. a decision already taken)."""


class PayloadTooLarge(MemoryApiError):
    """413: the body is over the server's size limit."""


class RateLimited(MemoryApiError):
    """429: too many requests for this key."""


class Unavailable(MemoryApiError):
    """503: the server cannot serve this now (overloaded, database busy); retry later."""


class ServerError(MemoryApiError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[MemoryApiError]] = {
    400: BadRequest, 422: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
    409: Conflict, 413: PayloadTooLarge, 429: RateLimited, 503: Unavailable,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The ``Retry-After`` of an answer in seconds (a number of seconds; an HTTP date is
    not sent by this API and is read as absent)."""
    value = response.headers.get("Retry-After")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def api_error(response: httpx.Response) -> MemoryApiError:
    """The exception for an error answer; a body that is not the API's error shape (a proxy's
    page, say) still gives its status, with the text as the message."""
    code, message, details = "http_error", response.text[:500] or response.reason_phrase, None
    try:
        error = response.json().get("error")
        if isinstance(error, dict):
            code = str(error.get("code", code))
            message = str(error.get("message", message))
            details = error.get("details")
    except (ValueError, AttributeError):
        pass
    status = response.status_code
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else MemoryApiError)
    return kind(status, code, message, details, retry_after_seconds(response))
