"""What every maintenance model offers Dreaming: one strict JSON completion per request.

A model either returns a :class:`Completion` whose ``data`` is exactly one JSON object (not
yet validated against the contract: that is the validator's job) or raises
:class:`ModelError` with a stable ``code``. There is no fallback to another model anywhere:
the caller records the error on the dream row and the partition fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

ERROR_CODES = frozenset({
    "timeout",           # the phase deadline passed (whole call, retries included)
    "idle_timeout",      # no byte from the provider for the idle timeout
    "model_mismatch",    # the provider reported another effective model than requested
    "truncated",         # the stream ended without finish_reason / [DONE], or was cut
    "length",            # finish_reason 'length': the completion budget ran out
    "malformed_output",  # not exactly one JSON object (after fence/wrapper normalisation)
    "http_error",        # an HTTP error status or a provider error event
    "unavailable",       # not configured, unreachable, or unusable for this request
    "empty",             # the model produced no content
})


class ModelError(RuntimeError):
    """A maintenance-model call failed closed.

    ``code`` is one of :data:`ERROR_CODES`; ``reason`` is a readable sentence and
    ``diagnostic`` a JSON-serialisable dict for the dream row (model, status, attempts,
    elapsed seconds, ...). Neither ever holds an API key or a URL password.
    """

    def __init__(
        self, code: str, reason: str | None = None, *, diagnostic: dict[str, Any] | None = None
    ) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown ModelError code {code!r}")
        self.code = code
        self.reason = reason or code.replace("_", " ")
        self.diagnostic: dict[str, Any] = {"code": code, "reason": self.reason,
                                           **(diagnostic or {})}
        super().__init__(f"{code}: {self.reason}")


@dataclass
class Completion:
    """One finished model call. ``model`` is the exact requested model reference,
    ``effective_model`` what the provider reported (equal, or the same model with a
    snapshot date suffix), ``text`` the raw collected output, ``data`` the parsed object."""

    model: str
    text: str
    data: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, Any]
    duration_seconds: float
    events: int
    attempts: int = 1
    effective_model: str | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass
class JsonRequest:
    """A strict JSON generation. ``system`` already contains the exact JSON contract;
    ``schema`` goes into the provider's response format as well. ``inputs`` are the
    partition rows (``{"memoryId", "content", "sourceType", "createdAt", ...}``) for models
    that work on structured input (the extractive baseline); ``topic`` names the partition
    (used for a Wiki slug by models that cannot invent one)."""

    system: str
    user: str
    schema: dict[str, Any]
    schema_name: str
    inputs: list[dict[str, Any]] | None = None
    max_completion_tokens: int | None = None
    topic: str | None = None


@runtime_checkable
class MaintenanceModel(Protocol):
    name: str  # the exact model reference; the dream row records it before generation

    def complete_json(self, request: JsonRequest) -> Completion: ...
