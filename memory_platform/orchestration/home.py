"""DAGSTER_HOME of the platform: instance storage in its own database on the same server.

Dagster's storage URL uses ``postgresql+psycopg2://``: with SQLAlchemy 2.1 a plain
``postgresql://`` URL selects psycopg 3, under which Dagster's LISTEN/NOTIFY run watcher fails.

Concurrency: every step that writes the platform database runs in the pool
``memory_postgres_writers`` (``pools.default_limit`` caps it: the only pool we use), and runs
tagged ``memory-platform/dreaming`` are queued one at a time, because the engine's
runtime-wide advisory lock would refuse a second concurrent Dream anyway.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from memory_platform.db.connection import ensure_database
from memory_platform.settings import Settings


def dagster_storage_url(settings: Settings) -> str:
    url = ensure_database(settings, settings.dagster_database_name)
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql+psycopg2"))


WRITER_POOL = "memory_postgres_writers"
DREAMING_RUN_TAG = "memory-platform/dreaming"


def dagster_yaml(storage_url: str, *, writer_pool_limit: int) -> str:
    # JSON is valid YAML and quotes the URL safely.
    config = {
        "storage": {"postgres": {"postgres_url": storage_url}},
        "run_monitoring": {"enabled": True, "poll_interval_seconds": 30},
        "concurrency": {
            "pools": {"default_limit": writer_pool_limit, "granularity": "op"},
            "runs": {"tag_concurrency_limits": [{"key": DREAMING_RUN_TAG, "limit": 1}]},
        },
        "telemetry": {"enabled": False},
        # Raw stdout/stderr capture tails files through `tail -F` subprocesses, which can hang
        # the clean-up of runs executed in a background thread (API/CLI launches in the dev
        # profile). Everything a Dream reports goes through the structured event log instead.
        "compute_logs": {
            "module": "dagster._core.storage.noop_compute_log_manager",
            "class": "NoOpComputeLogManager",
        },
    }
    return json.dumps(config, indent=2) + "\n"


def prepare_dagster_home(settings: Settings) -> Path:
    """Write DAGSTER_HOME/dagster.yaml for the configured database; answer the directory."""
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml(
        dagster_storage_url(settings), writer_pool_limit=settings.dagster_writer_pool_limit))
    return home
