"""One JSON error shape for every failure: ``{"error": {"code", "message", "details"}}``,
and the one place where exception types become HTTP statuses."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pydantic
from psycopg_pool import PoolTimeout, TooManyRequests
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from api.threads import Overloaded
from memory_platform.foundation.errors import (
    AccessDenied,
    Conflict,
    CredentialDetected,
    InvalidInput,
    MemoryPlatformError,
    NotFound,
    QuotaExceeded,
)

log = logging.getLogger("api")


class ApiError(Exception):
    """A failure the client can act on, with its HTTP status and a stable code."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers  # e.g. Retry-After, or Connection: close after a 408


# Domain error class -> HTTP status (most specific class first).
DOMAIN_STATUS: tuple[tuple[type[MemoryPlatformError], int], ...] = (
    (Conflict, 409),
    (CredentialDetected, 422),
    (InvalidInput, 400),
    (QuotaExceeded, 413),
    (AccessDenied, 403),
    (NotFound, 404),
)


def error_response(status: int, code: str, message: str, details: Any = None,
                   headers: dict[str, str] | None = None) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details}}
    return JSONResponse(body, status_code=status, headers=headers)


def validation_details(exc: pydantic.ValidationError) -> list[dict[str, str]]:
    return [{"field": ".".join(str(p) for p in err["loc"]) or "(body)", "problem": err["msg"]}
            for err in exc.errors(include_url=False, include_input=False)]


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status, exc.code, exc.message, exc.details, exc.headers)


async def _domain_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemoryPlatformError)
    status = next((s for cls, s in DOMAIN_STATUS if isinstance(exc, cls)), 400)
    return error_response(status, exc.code, exc.message, exc.details)


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, pydantic.ValidationError)
    details = validation_details(exc)
    first = details[0] if details else {"field": "(body)", "problem": "invalid"}
    return error_response(400, "validation_error",
                          f"{first['field']}: {first['problem']}", details)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)


# Seconds a client is asked to wait when every database connection stayed busy.
BUSY_RETRY_AFTER_SECONDS = 1


def _retry_later(code: str, message: str, **details: Any) -> JSONResponse:
    """503 with ``Retry-After``: the server cannot serve this now, and nothing changed."""
    return error_response(503, code, message,
                          {"retryAfterSeconds": BUSY_RETRY_AFTER_SECONDS, **details},
                          headers={"Retry-After": str(BUSY_RETRY_AFTER_SECONDS)})


async def _database_busy(request: Request, exc: Exception) -> JSONResponse:
    """No pool connection came in time (``PoolTimeout``: every one busy, or the database
    down and the pool reconnecting) or the pool's queue is full (``TooManyRequests``)."""
    log.warning("database busy on %s %s: %s", request.method, request.url.path,
                type(exc).__name__)
    return _retry_later("database_busy", "no database connection came free in time (the "
                        "database is overloaded or restarting); retry after "
                        f"{BUSY_RETRY_AFTER_SECONDS} s")


async def _overloaded(request: Request, exc: Exception) -> JSONResponse:
    """Admission control refused the request before it touched the database
    (``api.threads``): shed, not queued."""
    assert isinstance(exc, Overloaded)
    return _retry_later("overloaded", "the server is at capacity and refused this request "
                        f"before doing anything; retry after {BUSY_RETRY_AFTER_SECONDS} s",
                        reason=exc.reason)


async def _database_unavailable(request: Request, exc: Exception) -> JSONResponse:
    """The connection broke or the server refused work mid-request (restart, shutdown,
    failover; ``psycopg.OperationalError``): the transaction did not commit, the pool drops
    the broken connection and opens a new one; the client may retry the same request (a
    write with the same content deduplicates)."""
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path,
                type(exc).__name__)
    return _retry_later("database_unavailable", "the database connection failed during the "
                        "request (nothing was committed); retry after "
                        f"{BUSY_RETRY_AFTER_SECONDS} s")


async def _query_timeout(request: Request, exc: Exception) -> JSONResponse:
    """A statement ran past the API's ``statement_timeout`` or waited past its
    ``lock_timeout`` (settings ``api_statement_timeout_ms``, ``api_lock_timeout_ms``):
    PostgreSQL cancelled it and the request's transaction was rolled back."""
    log.warning("query timeout on %s %s: %s", request.method, request.url.path,
                type(exc).__name__)
    return _retry_later("query_timeout", "the database query took too long and was cancelled "
                        "(its transaction rolled back); narrow the request or retry later")


async def _transaction_conflict(request: Request, exc: Exception) -> JSONResponse:
    """A serialization failure or deadlock: PostgreSQL rolled the transaction back."""
    log.warning("transaction conflict on %s %s: %s", request.method, request.url.path,
                type(exc).__name__)
    return _retry_later("transaction_conflict", "a concurrent transaction conflicted with "
                        "this one (nothing was committed); retry after "
                        f"{BUSY_RETRY_AFTER_SECONDS} s")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "unexpected server error; see the server log")


EXCEPTION_HANDLERS = {
    ApiError: _api_error,
    MemoryPlatformError: _domain_error,
    pydantic.ValidationError: _validation_error,
    HTTPException: _http_error,
    PoolTimeout: _database_busy,
    TooManyRequests: _database_busy,
    Overloaded: _overloaded,
    psycopg.errors.QueryCanceled: _query_timeout,
    psycopg.errors.LockNotAvailable: _query_timeout,
    psycopg.errors.TransactionRollback: _transaction_conflict,
    psycopg.OperationalError: _database_unavailable,
    Exception: _unexpected,
}
