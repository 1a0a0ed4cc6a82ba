"""DAGSTER_HOME of the platform: instance storage in its own database on the same server.

Dagster's storage URL uses ``postgresql+psycopg2://``: with SQLAlchemy 2.1 a plain
``postgresql://`` URL selects psycopg 3, under which Dagster's LISTEN/NOTIFY run watcher fails.

Concurrency: every step that writes the platform database runs in the pool
``memory_postgres_writers`` (``pools.default_limit`` caps it: the only pool we use), and runs
tagged ``memory-platform/dreaming`` are queued one at a time, because the engine's
runtime-wide advisory lock would refuse a second concurrent Dream anyway.

Run logs: runs launched by the daemon (the UI, schedules, sensors, queued API launches) run
in a process of their own, whose stdout/stderr are captured under ``DAGSTER_HOME/logs`` and
shown on the run page. Runs executed inside another process (``dream run`` in the CLI, an API
process without a webserver) capture nothing: capturing redirects the file descriptors of the
whole process, which would swallow the API's own output; their structured event log is
complete either way.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef

from memory_platform.foundation.db.connection import ensure_database
from memory_platform.foundation.settings import Settings


def dagster_storage_url(settings: Settings) -> str:
    url = ensure_database(settings, settings.dagster_database_name)
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme="postgresql+psycopg2"))


WRITER_POOL = "memory_postgres_writers"
DREAMING_RUN_TAG = "memory-platform/dreaming"

_NO_CAPTURE = {"module": "dagster._core.storage.noop_compute_log_manager",
               "class": "NoOpComputeLogManager"}


def dagster_yaml(storage_url: str, *, writer_pool_limit: int, logs_dir: Path) -> str:
    # JSON is valid YAML and quotes the URL safely.
    config = {
        "storage": {"postgres": {"postgres_url": storage_url}},
        "run_monitoring": {"enabled": True, "poll_interval_seconds": 30},
        "concurrency": {
            "pools": {"default_limit": writer_pool_limit, "granularity": "op"},
            "runs": {"tag_concurrency_limits": [{"key": DREAMING_RUN_TAG, "limit": 1}]},
        },
        "telemetry": {"enabled": False},
        "nux": {"enabled": False},
        "compute_logs": {
            "module": "dagster._core.storage.local_compute_log_manager",
            "class": "LocalComputeLogManager",
            "config": {"base_dir": str(logs_dir)},
        },
    }
    return json.dumps(config, indent=2) + "\n"


def prepare_dagster_home(settings: Settings) -> Path:
    """Write DAGSTER_HOME/dagster.yaml for the configured database; answer the directory."""
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(dagster_yaml(
        dagster_storage_url(settings), writer_pool_limit=settings.dagster_writer_pool_limit,
        logs_dir=home / "logs"))
    return home


def dagster_instance(settings: Settings) -> DagsterInstance:
    """The platform's instance as a process other than a run worker opens it (to execute
    runs in-process, submit them or read them): DAGSTER_HOME/dagster.yaml written for
    ``settings`` first, stdout/stderr capture off (see the module docstring)."""
    ref = InstanceRef.from_dir(str(prepare_dagster_home(settings)),
                               overrides={"compute_logs": _NO_CAPTURE})
    return DagsterInstance.from_ref(ref)
