"""Which maintenance model a session task uses, and one call of it under a deadline.

Session maintenance (summaries, flush, shared facts) uses the deployment's maintenance model:
``MEMORY_MAINTENANCE_MODEL``, else ``MEMORY_MAINTENANCE_DEFAULT_MODEL`` (``extractive`` in the
dev profile). The instance's persisted Dreaming selection is Dreaming's alone. The name is
exact, as everywhere: an unreachable model fails the task (retryable); another model is never
tried instead.

``extractive`` is not an HTTP model here: its session tasks are the deterministic functions
of :mod:`memory_platform.features.sessions.extractive`, so :attr:`SessionModel.client` is None for
it
and the task calls those functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_platform.features.dreaming.extractive import NAME as EXTRACTIVE
from memory_platform.features.dreaming.model import model_client, normalise_model_name
from memory_platform.foundation.settings import Settings
from memory_platform.shared.llm.base import Completion, JsonRequest, MaintenanceModel, ModelError


@dataclass(frozen=True)
class SessionModel:
    name: str
    client: MaintenanceModel | None   # None: the offline extractive functions

    @property
    def offline(self) -> bool:
        return self.client is None


def session_model_name(settings: Settings) -> str:
    return normalise_model_name(settings.maintenance_model) \
        or normalise_model_name(settings.maintenance_default_model)


def session_model(settings: Settings, *, timeout_seconds: float | None = None) -> SessionModel:
    """The client of the maintenance model; ``timeout_seconds`` bounds every call of it
    (the whole call, retries included). Raises ``ModelError('unavailable')`` when the model
    cannot be reached as configured."""
    name = session_model_name(settings)
    if name == EXTRACTIVE:
        return SessionModel(name, None)
    options: dict[str, Any] = {}
    if timeout_seconds is not None:
        options["phase_timeout_seconds"] = max(0.001, timeout_seconds)
    return SessionModel(name, model_client(settings, name, **options))


def complete(model: SessionModel, request: JsonRequest) -> Completion:
    """One strict JSON completion of an HTTP model (not for the offline model)."""
    if model.client is None:
        raise ModelError("unavailable", "the extractive model has no HTTP client")
    return model.client.complete_json(request)
