"""The API's ports to the orchestrator: the two calls it makes into Dagster.

* the **Dream launcher** starts a Dream run (``POST /internal/memory/dreams``);
* the **rollback recorder** shows a rollback made through the API on the Dream's partition
  in the Dagster UI, as a rollback launched there shows (``POST .../{id}/rollback``).

Each is injected (``create_app(launcher=..., rollback_recorder=...)``) or else the callable
a setting names (``api_dream_launcher``, ``api_rollback_recorder``: ``module:name``, the
Dagster implementations by default), imported on its first call. The API never imports the
orchestrator's code itself; an app with no launcher answers a launch request 503, one with
no recorder leaves Dagster's view of a rolled-back partition as it was.
"""

from __future__ import annotations

import logging
import pkgutil
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from api.errors import ApiError
from memory_platform.features.dreaming.rollback import RollbackResult
from memory_platform.foundation.errors import MemoryPlatformError
from memory_platform.foundation.settings import Settings

log = logging.getLogger("api")


class LaunchedRun(Protocol):
    run_id: str
    mode: str          # 'queued' (the orchestrator's daemon starts it) | 'in_process'


class DreamLauncher(Protocol):
    def __call__(self, settings: Settings, partition_keys: Sequence[str], *,
                 model: str | None, dry_run: bool) -> LaunchedRun:
        """Start ONE run for ``partition_keys`` and answer at once, without waiting for it.
        Domain errors (e.g. ``Conflict``) are answered as such; anything else is a failure
        to launch."""
        ...


class RollbackRecorder(Protocol):
    def __call__(self, settings: Settings, result: RollbackResult) -> bool:
        """Show a done rollback in the orchestrator; True when something was shown."""
        ...


class Configured:
    """The callable a setting names (``module:name``), imported on its first call (the
    orchestrator's imports cost seconds, and most API processes never need them)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._target: Callable[..., Any] | None = None
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._target is None:
                self._target = pkgutil.resolve_name(self.name)
        return self._target(*args, **kwargs)


def configured_launcher(settings: Settings) -> DreamLauncher | None:
    """The launcher ``settings.api_dream_launcher`` names, or None when it names none."""
    return Configured(settings.api_dream_launcher) if settings.api_dream_launcher else None


def configured_rollback_recorder(settings: Settings) -> RollbackRecorder | None:
    """The recorder ``settings.api_rollback_recorder`` names, or None when it names none."""
    return Configured(settings.api_rollback_recorder) if settings.api_rollback_recorder \
        else None


def record_rollback(recorder: RollbackRecorder | None, settings: Settings,
                    result: RollbackResult) -> bool:
    """Whether the rollback now shows in the orchestrator. Best effort: the ledger change
    stands whatever the orchestrator's storage says, so a failure is logged, not raised."""
    if recorder is None or result.status != "rolled_back":
        return False
    try:
        return bool(recorder(settings, result))
    except Exception:
        log.exception("showing the rollback of dream %s in Dagster failed", result.dream_id)
        return False


def erase_in_orchestrator(settings: Settings, instance_key: str,
                          user_id: str) -> dict[str, Any]:
    """Dagster's part of an erasure, through the callable ``settings.api_dagster_eraser``
    names (imported on this first call): its content-free result, ``status`` ``skipped``
    when the setting is empty, ``unreachable`` when it raised (the platform erasure stands;
    erasing again finishes it)."""
    if not settings.api_dagster_eraser:
        return {"status": "skipped", "message": "MEMORY_API_DAGSTER_ERASER is empty: "
                "Dagster's storage was not cleaned"}
    try:
        return dict(Configured(settings.api_dagster_eraser)(settings, instance_key, user_id))
    except Exception as exc:
        log.exception("erasing a person from Dagster failed")
        return {"status": "unreachable", "error": type(exc).__name__,
                "message": "Dagster's storage could not be cleaned; erase the person again "
                "once it is reachable"}


def launch_dreams(launcher: DreamLauncher | None, settings: Settings,
                  partition_keys: Sequence[str], *, model: str | None,
                  dry_run: bool) -> LaunchedRun:
    """The run ``launcher`` started; 503 ``launch_unavailable`` without a launcher, 503
    ``launch_failed`` (with the launcher's reason) when it raises anything but a domain
    error."""
    if launcher is None:
        raise ApiError(503, "launch_unavailable",
                       "this API process has no Dream launcher (MEMORY_API_DREAM_LAUNCHER is "
                       "empty): leave it at its default, as `memory-platform api` does, or run "
                       "`memory-platform dream run`")
    try:
        return launcher(settings, partition_keys, model=model, dry_run=dry_run)
    except MemoryPlatformError:
        raise
    except Exception as exc:
        log.exception("launching a Dream run for %s failed", list(partition_keys))
        raise ApiError(503, "launch_failed",
                       f"Dagster did not accept the run: {type(exc).__name__}: {exc}"[:500],
                       {"partitions": list(partition_keys)}) from exc
