"""Dream runs started from outside Dagster (the CLI, the API), always THROUGH Dagster.

Every run lands in the platform's Dagster instance (DAGSTER_HOME from the settings, run
storage in PostgreSQL), so it shows in the UI's run list with its materialisations, checks
and logs. Only partitions the database knows are launched
(:func:`memory_platform.features.dreaming.targets.known_partitions`), so a typo never becomes a
Dagster
partition. Two ways to start a run:

* :func:`execute_dreams` runs in this process, in the foreground (the CLI): one audience
  partition is a run of ``dream_audience_job`` for that partition; several are
  ``dream_batch`` runs of at most ``dream_batch_size`` partitions.
* :func:`launch_dream_run` answers a run id at once (the API). When the Dagster webserver of
  the deployment answers (``make dev`` runs it with the daemon), the run is SUBMITTED through
  its GraphQL API to the instance's run coordinator: the QueuedRunCoordinator queues it
  (one Dreaming run at a time, per dagster.yaml) and the daemon launches a run worker. When no
  webserver answers (a bare API process in the dev profile), the run executes in a background
  thread of the calling process; such a run dies with that process (its dream row is then
  reconciled as failed after ``dream_stale_minutes``).
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import DagsterInstance

from memory_platform.assets.dreaming import (
    DREAM_AUDIENCE_JOB,
    DREAM_BATCH_JOB,
    asset_run_config,
    batch_run_config,
)
from memory_platform.definitions import build_definitions
from memory_platform.features.dreaming.runs import Trigger
from memory_platform.features.dreaming.schedule import batches
from memory_platform.features.dreaming.targets import known_partitions, parse_partition_keys
from memory_platform.foundation.db.connection import connect
from memory_platform.foundation.errors import Conflict
from memory_platform.foundation.settings import Settings, get_settings, redact_url
from memory_platform.orchestration.home import DREAMING_RUN_TAG, dagster_instance
from memory_platform.orchestration.partitions import register_partitions

__all__ = ["LaunchedRun", "RunReport", "execute_dreams", "launch_dream_run", "plan_runs",
           "refuse_unknown_partitions"]

log = logging.getLogger(__name__)

LOCATION_NAME = "memory_platform"        # workspace.yaml
REPOSITORY_NAME = "__repository__"       # the implicit repository of a Definitions object
# Failures are reported by the caller (RunReport.error, the dream rows), not as stack traces.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}

# Dagster's in-process execution is not safe for concurrent runs in one process: every run
# start re-runs logging.config.dictConfig (holding logging's module lock, then each handler's
# lock) while another run's event handler holds its handler lock and asks for the module lock
# (a deadlock, seen under the API's fuzz test). Background runs of one process therefore run
# one after another; they would queue on the Dreaming advisory lock anyway.
_IN_PROCESS_RUNS = threading.Lock()


@dataclass(frozen=True)
class PlannedRun:
    job_name: str
    partition_keys: list[str]
    run_config: dict[str, Any]
    tags: dict[str, str]
    partition_key: str | None = None          # set for the per-partition asset job


@dataclass
class RunReport:
    run_id: str
    job_name: str
    partition_keys: list[str]
    success: bool
    seconds: float
    error: str | None = None


@dataclass
class LaunchedRun:
    run_id: str
    mode: str                                  # 'queued' (daemon) | 'in_process' (thread)
    job_name: str
    partition_keys: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "mode": self.mode, "jobName": self.job_name,
                "partitionKeys": self.partition_keys}


def refuse_unknown_partitions(settings: Settings, partition_keys: Sequence[str]) -> None:
    """InvalidInput for malformed keys, NotFound for partitions the database of
    ``settings`` does not know (nothing is launched or registered then)."""
    with connect(settings, autocommit=True) as conn:
        known_partitions(conn, partition_keys)


def plan_runs(partition_keys: Sequence[str], *, model: str | None = None,
              dry_run: bool = False, trigger: Trigger = "manual",
              batch_size: int) -> list[PlannedRun]:
    """One asset-job run for a single partition; batches of ``batch_size`` otherwise
    (InvalidInput for malformed keys)."""
    keys = [p.partition_key for p in parse_partition_keys(partition_keys)]
    tags = {DREAMING_RUN_TAG: "true", "memory-platform/trigger": trigger}
    if len(keys) == 1:
        return [PlannedRun(DREAM_AUDIENCE_JOB, keys,
                           asset_run_config(model=model, dry_run=dry_run, trigger=trigger),
                           {**tags, "dagster/partition": keys[0]}, keys[0])]
    return [PlannedRun(DREAM_BATCH_JOB, chunk,
                       batch_run_config(chunk, model=model, dry_run=dry_run, trigger=trigger),
                       {**tags, "memory-platform/partitions": str(len(chunk))})
            for chunk in batches(keys, batch_size)]


def _execute(instance: DagsterInstance, run: PlannedRun, run_id: str | None,
             settings: Settings, resources: dict[str, Any] | None, quiet: bool):
    if run.partition_key is not None:
        register_partitions(instance, [run.partition_key])
    config = {**run.run_config, **(_QUIET if quiet else {})}
    job = build_definitions(resources, settings).resolve_job_def(run.job_name)
    return job.execute_in_process(
        run_config=config, instance=instance, partition_key=run.partition_key,
        run_id=run_id, tags=run.tags, raise_on_error=False)


def _failure(result) -> str | None:
    if result.success:
        return None
    for event in result.all_events:
        if event.is_failure and event.event_specific_data is not None:
            error = getattr(event.event_specific_data, "error", None)
            if error is not None:
                return error.message.strip().splitlines()[0][:500]
    return "the run failed (see its logs in the Dagster UI)"


def execute_dreams(settings: Settings, instance: DagsterInstance,
                   partition_keys: Sequence[str], *, batch_size: int, model: str | None = None,
                   dry_run: bool = False, trigger: Trigger = "manual",
                   resources: dict[str, Any] | None = None, quiet: bool = True,
                   on_run: Callable[[int, int, PlannedRun], None] | None = None,
                   on_done: Callable[[RunReport], None] | None = None) -> list[RunReport]:
    """Dream ``partition_keys`` through Dagster in this process, run after run (refused
    before any run when a key is malformed or unknown: see
    :func:`refuse_unknown_partitions`). ``quiet``: Dagster's console log stays silent."""
    refuse_unknown_partitions(settings, partition_keys)
    planned = plan_runs(partition_keys, model=model, dry_run=dry_run, trigger=trigger,
                        batch_size=batch_size)
    reports = []
    for number, run in enumerate(planned, 1):
        if on_run:
            on_run(number, len(planned), run)
        started = time.perf_counter()
        result = _execute(instance, run, None, settings, resources, quiet)
        report = RunReport(result.run_id, run.job_name, run.partition_keys, result.success,
                           round(time.perf_counter() - started, 3), _failure(result))
        reports.append(report)
        if on_done:
            on_done(report)
    return reports


def _webserver(settings: Settings) -> bool:
    url = f"http://127.0.0.1:{settings.dagster_port}/server_info"
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def _submit(settings: Settings, run: PlannedRun) -> str:
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=settings.dagster_port, timeout=30)
    if run.partition_key is not None:
        instance = dagster_instance(settings)
        try:
            register_partitions(instance, [run.partition_key])
        finally:
            instance.dispose()
    return client.submit_job_execution(
        run.job_name, repository_location_name=LOCATION_NAME,
        repository_name=REPOSITORY_NAME, run_config=run.run_config, tags=run.tags)


def launch_dream_run(settings: Settings, partition_keys: Sequence[str], *,
                     model: str | None = None, dry_run: bool = False,
                     trigger: Trigger = "manual", mode: str = "auto",
                     resources: dict[str, Any] | None = None,
                     instance: DagsterInstance | None = None) -> LaunchedRun:
    """Start ONE Dagster run for ``partition_keys`` and answer its id without waiting.

    ``mode``: 'queued' submits to the run coordinator through the webserver, 'in_process'
    executes in a background thread, 'auto' queues when a webserver answers on
    ``dagster_port``. All keys go into one run (the API's request is one operator action);
    very long lists belong to the schedule or ``dream run --all-eligible``. In-process runs
    of one process execute one at a time (see ``_IN_PROCESS_RUNS``); a run queued behind
    another is answered at once and appears in Dagster when it starts. Malformed or unknown
    keys are refused first (:func:`refuse_unknown_partitions`)."""
    keys = list(dict.fromkeys(partition_keys))
    if not keys:
        raise ValueError("no partition to dream")
    refuse_unknown_partitions(settings, keys)
    (run,) = plan_runs(keys, model=model, dry_run=dry_run, trigger=trigger,
                       batch_size=len(keys))
    if mode == "auto":
        mode = "queued" if _webserver(settings) else "in_process"
    if mode == "queued":
        return LaunchedRun(_submit(settings, run), "queued", run.job_name, keys)
    if mode != "in_process":
        raise ValueError(f"mode must be auto, queued or in_process, not {mode!r}")
    own_instance = instance is None
    target = instance or dagster_instance(settings)
    run_id = str(uuid.uuid4())

    started = threading.Event()

    def work() -> None:
        with _IN_PROCESS_RUNS:
            started.set()
            try:
                _execute(target, run, run_id, settings, resources, True)
            except Exception:  # the run's own events record Dagster failures
                log.exception("in-process Dream run %s could not execute", run_id)
            finally:
                if own_instance:
                    target.dispose()

    thread = threading.Thread(target=work, name=f"dream-run-{run_id[:8]}", daemon=True)
    thread.start()
    if started.wait(0.5):         # not queued behind another run of this process:
        deadline = time.monotonic() + 10          # answer once the run row exists
        while time.monotonic() < deadline and thread.is_alive() \
                and target.get_run_by_id(run_id) is None:
            time.sleep(0.05)
    return LaunchedRun(run_id, "in_process", run.job_name, keys)


def _database_identity(settings: Settings) -> tuple[str, str]:
    if settings.database_url is not None:
        return redact_url(settings.database_url.get_secret_value()), settings.database_name
    return f"embedded server at {settings.pgdata}", settings.database_name


def refuse_another_database(settings: Settings) -> None:
    """Conflict (``orchestration_settings_mismatch``) when a Dagster run would dream another
    database than ``settings`` names: the runs (queued to the daemon, or executed in this
    process) build their resources from the process environment (MEMORY_*), not from the
    caller's settings object. That only happens when an app was created with explicit
    settings (tests, embedding)."""
    ours, theirs = _database_identity(settings), _database_identity(get_settings())
    if ours != theirs:
        raise Conflict("Dagster runs use the database of this process's environment "
                       f"({theirs[0]}, database {theirs[1]}), but this API serves "
                       f"{ours[0]}, database {ours[1]}: launch from a process whose MEMORY_* "
                       "settings match, or run `memory-platform dream run`",
                       code="orchestration_settings_mismatch")


def same_database_only(launch: Callable[..., Any]) -> Callable[..., Any]:
    """``launch``, called only after :func:`refuse_another_database` let the run through."""

    def checked(settings: Settings, partition_keys: Sequence[str], *, model: str | None,
                dry_run: bool) -> Any:
        refuse_another_database(settings)
        return launch(settings, partition_keys, model=model, dry_run=dry_run)

    return checked


def _launch(settings: Settings, partition_keys: Sequence[str], *, model: str | None,
            dry_run: bool) -> LaunchedRun:
    return launch_dream_run(settings, partition_keys, model=model, dry_run=dry_run)


launch_for_api = same_database_only(_launch)
"""The API's Dream launcher (the ``api_dream_launcher`` setting names it): one Dagster run,
answered at once, refused when Dagster would dream another database than the API serves."""


def execute_erasure(settings: Settings, instance_key: str, user_id: str, *,
                    requested_by: str = "cli",
                    resources: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """Erase a person THROUGH DAGSTER, in this process, against the platform's Dagster
    instance (the run shows in the UI): (run id, the erasure report). Raises the erasure's
    own error (bad input) when the run failed on it."""
    instance = dagster_instance(settings)
    try:
        job = build_definitions(resources, settings).resolve_job_def("erase_user_job")
        result = job.execute_in_process(
            run_config={**_QUIET, "ops": {"erase_person": {"config": {
                "instance_key": instance_key, "user_id": user_id,
                "requested_by": requested_by}}}},
            instance=instance, raise_on_error=True)
        return result.run_id, result.output_for_node("erase_person")
    finally:
        instance.dispose()


def show_rollback_in_dagster(settings: Settings, result: Any) -> bool:
    """Show a rollback made outside Dagster (the CLI, the API) on the Dream's partition in the
    UI: one runless observation per reverted Dream asset, with the rollback's metadata, as
    ``rollback_dream_job`` reports it. False when there was nothing to show (a repeated
    rollback, a Dream without a partition)."""
    from memory_platform.assets.rollback import rollback_metadata, rollback_observations

    if result.status != "rolled_back":
        return False
    with connect(settings, autocommit=True) as conn:
        row = conn.execute("SELECT partition_key, instance_key FROM agent_memory_dreams"
                           " WHERE id = %s", (result.dream_id,)).fetchone()
    if not row or not row[0]:
        return False
    partition_key, instance_key = row
    instance = dagster_instance(settings)
    try:
        metadata = rollback_metadata(result, partition_key, instance_key)
        for event in rollback_observations(result, partition_key, metadata):
            instance.report_runless_asset_event(event)
    finally:
        instance.dispose()
    return True
