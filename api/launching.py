"""The API's port to the Dream launcher: the one call it makes to start a Dream run.

The launcher is injected: ``create_app(launcher=...)``, or else the callable the
``api_dream_launcher`` setting names (``module:name``, the Dagster launcher by default),
imported on the first launch. The API never imports the orchestrator's code itself; an app
with no launcher answers a launch request 503.
"""

from __future__ import annotations

import logging
import pkgutil
import threading
from collections.abc import Sequence
from typing import Protocol

from api.errors import ApiError
from memory_platform.errors import MemoryPlatformError
from memory_platform.settings import Settings

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


class ConfiguredLauncher:
    """The launcher a setting names, imported on its first call (the orchestrator's imports
    cost seconds, and most API processes never launch a Dream)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._launch: DreamLauncher | None = None
        self._lock = threading.Lock()

    def __call__(self, settings: Settings, partition_keys: Sequence[str], *,
                 model: str | None, dry_run: bool) -> LaunchedRun:
        with self._lock:
            if self._launch is None:
                self._launch = pkgutil.resolve_name(self.name)
        return self._launch(settings, partition_keys, model=model, dry_run=dry_run)


def configured_launcher(settings: Settings) -> DreamLauncher | None:
    """The launcher ``settings.api_dream_launcher`` names, or None when it names none."""
    return ConfiguredLauncher(settings.api_dream_launcher) if settings.api_dream_launcher \
        else None


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
