"""The Python client of the memory-platform API (sync and async, over httpx).

Importable without the server's dependencies (no Dagster, no psycopg): it needs httpx and
pydantic only. ``models`` holds the API's request and response models, generated from
``/openapi.json`` (scripts/client_models.py).
"""

from memory_platform.client import models
from memory_platform.client.clients import AsyncMemoryClient, MemoryClient
from memory_platform.client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    MemoryApiError,
    MemoryClientError,
    MemoryConnectionError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
)
from memory_platform.client.models import CallerContext
from memory_platform.client.retrying import NO_RETRY, RetryPolicy

__all__ = [
    "NO_RETRY", "AsyncMemoryClient", "BadRequest", "CallerContext", "Conflict", "Forbidden",
    "MemoryApiError", "MemoryClient", "MemoryClientError", "MemoryConnectionError", "NotFound",
    "PayloadTooLarge", "RateLimited", "RetryPolicy", "ServerError", "Unauthorized",
    "Unavailable", "models",
]
