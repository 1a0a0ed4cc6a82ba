"""A Dream launcher for API tests: it records each call and answers a real ``LaunchedRun``
(queued, as when a Dagster daemon runs) without starting anything."""

from __future__ import annotations

from typing import Any

from memory_platform.launch import LaunchedRun


class RecordingLauncher:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.error: Exception | None = None       # raised by the next calls when set

    def __call__(self, settings, partition_keys, *, model=None, dry_run=False) -> LaunchedRun:
        self.calls.append({"settings": settings, "partitions": list(partition_keys),
                           "model": model, "dryRun": dry_run})
        if self.error is not None:
            raise self.error
        return LaunchedRun(f"run-{len(self.calls)}", "queued", "dream_batch",
                           list(partition_keys))
