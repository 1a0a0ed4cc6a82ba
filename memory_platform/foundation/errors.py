"""Domain errors. Each has a stable ``code``; the API maps the classes to HTTP statuses in
one place (api/errors.py)."""

from __future__ import annotations

from typing import Any


class MemoryPlatformError(Exception):
    code = "error"

    def __init__(self, message: str, *, details: Any = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if code:
            self.code = code


class InvalidInput(MemoryPlatformError):
    """The caller sent something the platform will not store or cannot interpret."""

    code = "invalid_input"


class CredentialDetected(InvalidInput):
    """The content looks like a secret; secrets never go into memory."""

    code = "credential_detected"


class QuotaExceeded(MemoryPlatformError):
    """A write would take stored text past the user's or the instance's storage quota;
    nothing of it was stored."""

    code = "storage_quota_exceeded"


class AccessDenied(MemoryPlatformError):
    """The access context cannot do this (e.g. a private write without a user)."""

    code = "access_denied"


class NotFound(MemoryPlatformError):
    """No visible row with that id (whether it exists invisibly is not revealed)."""

    code = "not_found"


class Conflict(MemoryPlatformError):
    """The request is valid but the current state forbids it (retry after the state changes)."""

    code = "conflict"


class DreamLocked(Conflict):
    """Another Dream holds the Dreaming lock; nothing was changed."""

    code = "dream_locked"
