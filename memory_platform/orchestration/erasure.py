"""Erasing a person from Dagster's storage, after the platform database forgot them.

Dagster holds no words by construction (:mod:`memory_platform.orchestration.metadata`: its
metadata, check examples, failures and log lines carry ids, codes and counts), so what is left
to remove is the person's *name*: their private partition ``instance/private/<user id>`` is a
dynamic partition, the ``dagster/partition`` tag and config of the runs that dreamed it, the
partition of their events and check evaluations, and the config of the ``erase_user_job`` run
that erased them. :func:`erase_from_dagster` removes all of that:

* every run that names the person: tagged with their partition, holding an event of it,
  listing it in a batch's config, or erasing them (``erase_user_job`` config) is deleted
  (``DagsterInstance.delete_run``: the run, its tags and its event log), with its asset check
  executions (Dagster keeps those in a table of their own);
* events of the partition outside any run (runless rollback materialisations) and the
  partition itself (``delete_dynamic_partition``);
* the asset status cache (its partition subsets would still name the partition) and an
  asset's stored latest materialisation when it was a deleted event (Dagster keeps a copy of
  the event on the asset's row); Dagster rebuilds both from the event log on the next read;
* runs written before Dagster was content-free (their tables quoted assertion texts,
  excerpts, entity labels and session keys: :data:`LEGACY_HEADERS`) in the person's instance:
  which of their words such a run quotes cannot be told once the platform rows are gone, so
  every such run of the instance is deleted; the Dream rows in the platform database stay.

Runs of other partitions are kept, also a batch's runs that did not name the person. The
answer is content-free (counts): it joins the erasure report. Dagster has no public call that
deletes a partition's runless events or a run's check executions, so those two use the SQL
storage's own tables, as ``delete_run`` does; a storage that is not SQL is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from dagster import DagsterInstance, MarkdownMetadataValue, RunsFilter
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    AssetEventTagsTable,
    AssetKeyTable,
    SqlEventLogStorageTable,
)
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._serdes import deserialize_value
from sqlalchemy import delete, select, update

from memory_platform.features.dreaming.partitions import Partition, instance_prefix
from memory_platform.foundation.settings import Settings
from memory_platform.orchestration.home import dagster_instance
from memory_platform.orchestration.metadata import error_label
from memory_platform.orchestration.partitions import AUDIENCES

__all__ = ["ERASE_JOB", "LEGACY_HEADERS", "DagsterErasure", "erase_from_dagster",
           "describe", "erase_person_from_dagster"]

log = logging.getLogger(__name__)

ERASE_JOB = "erase_user_job"
BATCH_JOBS = ("dream_batch",)           # jobs whose run config lists partition keys
_PARTITION_TAG = "dagster/partition"
_PAGE = 500

# The first lines of the Markdown tables Dagster metadata had before it was content-free
# (assertion texts, excerpts, titles, labels, messages, session keys in their columns).
LEGACY_HEADERS = frozenset({
    "| assertion | type | status | decision | evidence excerpt | source id | memory id |",
    "| # | type | proposed assertion | evidence excerpts | would | reason code |",
    "| kind | item | reason code | proposed text | detail |",
    "| code | phase | message |",
    "| id | state | slug | title | assertion refs |",
    "| subject | predicate | object | claim | source assertions |",
    "| partition | code | message | assertions |",
    "| relation | outcome | survivor | loser | left | right | reason |",
    "| method | merged | survivor | loser | reason |",
    "| session | outcome | reason | retries | fallbacks | rows | seconds | error |",
    "| session | error |",
})
# Metadata entries that only the old format had (diagnostics with their messages) and check
# examples with a text column.
_LEGACY_LABELS = frozenset({"diagnostics_detail"})
_LEGACY_EXAMPLE_COLUMNS = ("| text |", "audience |", "| user |")
_EVENT_TYPES = ("ASSET_MATERIALIZATION", "ASSET_OBSERVATION", "ASSET_CHECK_EVALUATION")


@dataclass
class DagsterErasure:
    """What :func:`erase_from_dagster` removed (counts only)."""

    runs_deleted: int = 0
    legacy_runs_deleted: int = 0
    runless_events_deleted: int = 0
    check_executions_deleted: int = 0
    partitions_deleted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"status": "erased",
                **{_camel(name): value for name, value in asdict(self).items()}}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def erase_person_from_dagster(settings: Settings, instance_key: str,
                              user_id: str) -> dict[str, Any]:
    """:func:`erase_from_dagster` on the platform's Dagster instance, after the platform
    erasure committed (the CLI's ``users erase`` and ``POST /internal/memory/users/erase``
    call it): its counts with ``status`` ``erased``, or ``status`` ``unreachable`` with the
    error's class and what to do. Best effort: the platform erasure stands either way, and
    running the erasure again finishes Dagster's part (it is idempotent on both sides)."""
    try:
        instance = dagster_instance(settings)
    except Exception as exc:
        return _unreachable(exc)
    try:
        return erase_from_dagster(instance, instance_key, user_id).as_dict()
    except Exception as exc:
        return _unreachable(exc)
    finally:
        instance.dispose()


def describe(result: dict[str, Any]) -> str:
    """One line for the CLI: what :func:`erase_person_from_dagster` did, or why not."""
    if result.get("status") != "erased":
        return f"dagster: NOT cleaned ({result.get('error')}): {result.get('message')}"
    return (f"dagster: {result['runsDeleted']} runs naming the person deleted, "
            f"{result['legacyRunsDeleted']} runs of the old text-bearing format, "
            f"{result['runlessEventsDeleted']} runless events, "
            f"{result['checkExecutionsDeleted']} check executions, "
            f"{result['partitionsDeleted']} partition")


def _unreachable(exc: Exception) -> dict[str, Any]:
    log.exception("erasing a person from Dagster's storage failed")
    return {"status": "unreachable", "error": error_label(exc),
            "message": "Dagster's storage could not be cleaned: the person's private "
                       "partition and runs may still be there. Erase the person again once "
                       "it is reachable (`memory-platform users erase USER`); the platform "
                       "part finds nothing left and Dagster's part is then done"}


def erase_from_dagster(instance: DagsterInstance, instance_key: str,
                       user_id: str) -> DagsterErasure:
    """Remove every record of ``user_id`` of ``instance_key`` from ``instance``'s storage
    (see the module docstring). Idempotent: a second call finds nothing."""
    storage = instance.event_log_storage
    if not isinstance(storage, SqlEventLogStorage):
        raise TypeError(f"erasure needs Dagster's SQL event log storage, not "
                        f"{type(storage).__name__}")
    key = Partition(instance_key, "private", user_id).partition_key
    out = DagsterErasure()
    named = _runs_naming(instance, storage, key, instance_key, user_id)
    legacy = _legacy_runs(storage, instance_key) - named
    for run_ids, field in ((named, "runs_deleted"), (legacy, "legacy_runs_deleted")):
        for run_id in sorted(run_ids):
            out.check_executions_deleted += _delete_check_executions(storage, run_id)
            instance.delete_run(run_id)
            setattr(out, field, getattr(out, field) + 1)
    out.runless_events_deleted, checks = _delete_partition_events(storage, key)
    out.check_executions_deleted += checks
    _forget_deleted_latest(storage, named | legacy)
    if instance.has_dynamic_partition(AUDIENCES, key):
        instance.delete_dynamic_partition(AUDIENCES, key)
        out.partitions_deleted = 1
    instance.wipe_asset_cached_status(list(instance.get_asset_keys()))
    return out


def _runs_naming(instance: DagsterInstance, storage: SqlEventLogStorage, key: str,
                 instance_key: str, user_id: str) -> set[str]:
    found = set(instance.get_run_ids(RunsFilter(tags={_PARTITION_TAG: key})))
    with storage.index_connection() as conn:
        found.update(row[0] for row in conn.execute(
            select(SqlEventLogStorageTable.c.run_id).distinct().where(
                SqlEventLogStorageTable.c.partition == key,
                SqlEventLogStorageTable.c.run_id != "")))
    for run in _runs(instance, [RunsFilter(job_name=job) for job in BATCH_JOBS]):
        if key in _strings(run.run_config):
            found.add(run.run_id)
    for run in _runs(instance, [RunsFilter(job_name=ERASE_JOB)]):
        config = (((run.run_config or {}).get("ops") or {}).get("erase_person") or {}).get(
            "config") or {}
        if config.get("user_id") == user_id and config.get("instance_key") == instance_key:
            found.add(run.run_id)
    return found


def _runs(instance: DagsterInstance, filters: Iterable[RunsFilter]) -> Iterator[Any]:
    for runs_filter in filters:
        cursor = None
        while True:
            page = instance.get_runs(runs_filter, cursor=cursor, limit=_PAGE)
            yield from page
            if len(page) < _PAGE:
                break
            cursor = page[-1].run_id


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _legacy_runs(storage: SqlEventLogStorage, instance_key: str) -> set[str]:
    """Runs of the instance's partitions (and unpartitioned runs: sessions, sweeps) with an
    event in the old, text-bearing metadata format."""
    prefix = instance_prefix(instance_key)
    table = SqlEventLogStorageTable
    query = select(table.c.run_id, table.c.event).where(
        table.c.dagster_event_type.in_(_EVENT_TYPES), table.c.run_id != "",
        (table.c.partition.is_(None)) | table.c.partition.startswith(prefix + "/",
                                                                     autoescape=True))
    found: set[str] = set()
    with storage.index_connection() as conn:
        for run_id, body in conn.execute(query):
            if run_id not in found and _is_legacy(body):
                found.add(run_id)
    return found


def _is_legacy(body: str) -> bool:
    try:
        entry = deserialize_value(body)
        event = entry.dagster_event
        data = event.event_specific_data if event is not None else None
        metadata = (getattr(getattr(data, "materialization", None), "metadata", None)
                    or getattr(getattr(data, "asset_observation", None), "metadata", None)
                    or getattr(data, "metadata", None) or {})
    except Exception:  # an event this Dagster cannot read is not ours to judge
        return False
    for label, value in metadata.items():
        if label in _LEGACY_LABELS:
            return True
        if isinstance(value, MarkdownMetadataValue):
            header = (value.md_str or "").split("\n", 1)[0]
            if header in LEGACY_HEADERS or (label == "examples" and any(
                    column in header for column in _LEGACY_EXAMPLE_COLUMNS)):
                return True
    return False


def _forget_deleted_latest(storage: SqlEventLogStorage, deleted_runs: set[str]) -> None:
    """Clear the copy of an asset's latest materialisation Dagster keeps on the asset's row
    when that event is gone (NULL: Dagster then reads the latest one left in the event log,
    its own fallback for rows without a stored record)."""
    table = AssetKeyTable
    with storage.index_connection() as conn:
        rows = conn.execute(select(table.c.asset_key, table.c.last_materialization,
                                   table.c.last_run_id).where(
            table.c.last_materialization.is_not(None))).fetchall()
        for asset_key, stored, last_run_id in rows:
            storage_id = getattr(_deserialized(stored), "storage_id", None)
            alive = storage_id is not None and conn.execute(
                select(SqlEventLogStorageTable.c.id).where(
                    SqlEventLogStorageTable.c.id == storage_id)).first() is not None
            if not alive or last_run_id in deleted_runs:
                conn.execute(update(table).where(table.c.asset_key == asset_key).values(
                    last_materialization=None,
                    last_run_id=None if last_run_id in deleted_runs else last_run_id))


def _deserialized(body: str) -> Any:
    try:
        return deserialize_value(body)
    except Exception:  # an old format this Dagster cannot read: cleared like a dead one
        return None


def _delete_check_executions(storage: SqlEventLogStorage, run_id: str) -> int:
    with storage.index_connection() as conn:
        return conn.execute(delete(AssetCheckExecutionsTable).where(
            AssetCheckExecutionsTable.c.run_id == run_id)).rowcount or 0


def _delete_partition_events(storage: SqlEventLogStorage, key: str) -> tuple[int, int]:
    """Events of the partition left outside any deleted run (runless ones), their tags and
    check executions: (events, check executions) deleted."""
    table = SqlEventLogStorageTable
    with storage.index_connection() as conn:
        ids = [row[0] for row in conn.execute(select(table.c.id).where(
            table.c.partition == key))]
        if not ids:
            return 0, 0
        conn.execute(delete(AssetEventTagsTable).where(
            AssetEventTagsTable.c.event_id.in_(ids)))
        checks = conn.execute(delete(AssetCheckExecutionsTable).where(
            AssetCheckExecutionsTable.c.evaluation_event_storage_id.in_(ids)
            | AssetCheckExecutionsTable.c.materialization_event_storage_id.in_(ids)
            | (AssetCheckExecutionsTable.c.partition == key))).rowcount or 0
        events = conn.execute(delete(table).where(table.c.id.in_(ids))).rowcount or 0
    return events, checks
