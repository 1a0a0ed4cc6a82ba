"""/internal/memory/dreams: Dreaming controls for operators (admin scope; the auth
middleware already refuses /internal/* without it, and every handler checks again).

* ``GET /internal/memory/dreams?limit=N``: the key's instance's dream rows, newest first;
* ``POST /internal/memory/dreams``: launch Dreaming through Dagster for one partition of the
  key's instance, or for all its eligible partitions; 202 with the Dagster run id and how it
  runs (``queued`` to the daemon when the Dagster webserver answers, else ``in_process`` in
  this process; see ``memory_platform.orchestration.launch``), 200 with ``runId: null`` when
  no partition is eligible, 409 when Dagster runs would read another database than this
  API serves (their resources come from the process environment);
* ``POST /internal/memory/dreams/{dream_id}/rollback``: compensate one Dream of the key's
  instance (404 for unknown ids and for another instance's).
"""

from __future__ import annotations

import logging
import uuid

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.auth import require
from api.db import with_connection
from api.errors import ApiError
from api.requests import read_json, read_query
from api.responses import model_response
from api.schemas import (
    DreamLaunch,
    DreamLaunchResponse,
    DreamListParams,
    DreamListResponse,
    DreamOut,
    DreamRollbackResponse,
)
from memory_platform.dreaming.inputs import eligible_partitions
from memory_platform.dreaming.listing import dream_summary
from memory_platform.dreaming.partitions import Partition
from memory_platform.dreaming.rollback import rollback_dream
from memory_platform.dreaming.runs import get_dream, list_dreams
from memory_platform.errors import InvalidInput
from memory_platform.settings import Settings, redact_url

log = logging.getLogger("api")



async def list_route(request: Request) -> Response:
    key = require(request, "admin")
    params = read_query(request, DreamListParams)
    rows = await with_connection(request, list_dreams, instance_key=key.instance_key,
                                 limit=params.limit)
    dreams = [DreamOut.model_validate(dream_summary(r)) for r in rows]
    return model_response(DreamListResponse(dreams=dreams))


# --- launch --------------------------------------------------------------------------------


def _known_partition(conn, partition: Partition) -> bool:
    """Whether the partition has memories or dream rows: a launch for a partition nothing
    was ever written to is a mistake, answered 404 instead of a Dagster run."""
    return bool(conn.execute(
        """
        SELECT EXISTS (SELECT 1 FROM agent_memories
                        WHERE instance_key = %(i)s AND visibility_scope = %(k)s
                          AND audience_key = %(a)s)
            OR EXISTS (SELECT 1 FROM agent_memory_dreams
                        WHERE instance_key = %(i)s AND audience_kind = %(k)s
                          AND audience_key = %(a)s)
        """, {"i": partition.instance_key, "k": partition.kind, "a": partition.key}
    ).fetchone()[0])


def _target_partitions(conn, settings: Settings, instance_key: str,
                       body: DreamLaunch) -> list[str]:
    if body.all_eligible:
        return [p.partition_key
                for p in eligible_partitions(conn, settings, instance_key=instance_key)]
    assert body.partition is not None
    try:
        partition = Partition.from_partition_key(body.partition)
    except ValueError as exc:
        raise ApiError(400, "invalid_partition", f"partition: {exc}",
                       {"field": "partition"}) from exc
    if partition.instance_key != instance_key:
        raise ApiError(403, "foreign_partition",
                       "the partition belongs to another instance; a key only dreams the "
                       "partitions of its own instance",
                       {"field": "partition", "instance": instance_key})
    if not _known_partition(conn, partition):
        raise ApiError(404, "unknown_partition",
                       f"no memories or dreams in partition {partition.partition_key!r}",
                       {"field": "partition"})
    return [partition.partition_key]


def _launch(settings: Settings, partition_keys: list[str], model: str | None,
            dry_run: bool) -> tuple[str, str | None]:
    """(Dagster run id, how it runs: 'queued' for the daemon, 'in_process' in this
    process) of one run for ``partition_keys``."""
    try:
        from memory_platform.orchestration.launch import launch_dream_run
    except ImportError as exc:
        raise ApiError(503, "orchestration_unavailable",
                       f"the Dagster launcher is not available: {exc}") from exc
    try:
        launched = launch_dream_run(settings, partition_keys, model=model, dry_run=dry_run)
        return str(getattr(launched, "run_id", launched)), getattr(launched, "mode", None)
    except Exception as exc:
        log.exception("launching a Dream run for %s failed", partition_keys)
        raise ApiError(503, "launch_failed",
                       f"Dagster did not accept the run: {type(exc).__name__}: {exc}"[:500],
                       {"partitions": partition_keys}) from exc


def _database_identity(settings: Settings) -> tuple[str, str]:
    if settings.database_url is not None:
        return redact_url(settings.database_url.get_secret_value()), settings.database_name
    return f"embedded server at {settings.pgdata}", settings.database_name


def _check_run_settings(settings: Settings) -> None:
    """Dagster runs (queued to the daemon, or executed in this process) build their
    resources from the process environment (MEMORY_*), not from this app's settings object:
    when the two name different databases, a launched run would dream the wrong one. That
    only happens when the app was created with explicit settings (tests, embedding)."""
    from memory_platform.settings import get_settings

    ours, theirs = _database_identity(settings), _database_identity(get_settings())
    if ours != theirs:
        raise ApiError(409, "orchestration_settings_mismatch",
                       "Dagster runs use the database of this process's environment "
                       f"({theirs[0]}, database {theirs[1]}), but this API serves "
                       f"{ours[0]}, database {ours[1]}: launch from a process whose MEMORY_* "
                       "settings match, or run `memory-platform dream run`")


def _model_name(model: str | None) -> str | None:
    from memory_platform.dreaming.model import normalise_model_name

    if model is None:
        return None
    try:
        return normalise_model_name(model) or None
    except ValueError as exc:
        raise ApiError(400, "validation_error", f"model: {exc}",
                       [{"field": "model", "problem": str(exc)}]) from exc


async def launch_route(request: Request) -> Response:
    key = require(request, "admin")
    body = await read_json(request, DreamLaunch)
    model = _model_name(body.model)
    settings = request.app.state.settings
    keys = await with_connection(request, _target_partitions, settings, key.instance_key, body)
    if not keys:
        response = DreamLaunchResponse(run_id=None, partitions=[], model=model,
                                       dry_run=body.dry_run)
        return model_response(response, status_code=200)
    _check_run_settings(settings)
    run_id, mode = await run_in_threadpool(_launch, settings, keys, model, body.dry_run)
    response = DreamLaunchResponse(run_id=run_id, partitions=keys, model=model,
                                   dry_run=body.dry_run, mode=mode)
    return model_response(response, status_code=202)


# --- rollback ------------------------------------------------------------------------------


def _rollback(conn, settings: Settings, embedder, instance_key: str, dream_id: uuid.UUID):
    row = get_dream(conn, dream_id)
    conn.rollback()  # rollback_dream runs its own units on an idle connection
    if row is None or row["instance_key"] != instance_key:
        raise ApiError(404, "not_found", f"no dream {dream_id} in this instance")
    try:
        return rollback_dream(conn, dream_id, settings=settings, embedder=embedder)
    except InvalidInput as exc:
        raise ApiError(409, "dream_running", exc.message) from exc


async def rollback_route(request: Request) -> Response:
    key = require(request, "admin")
    raw = request.path_params["dream_id"]
    try:
        dream_id = uuid.UUID(raw)
    except ValueError as exc:
        raise ApiError(404, "not_found", "no dream with that id in this instance") from exc
    result = await with_connection(request, _rollback, request.app.state.settings,
                                   request.app.state.embedder, key.instance_key, dream_id)
    return model_response(DreamRollbackResponse.model_validate(result.as_json()))


routes = [
    Route("/internal/memory/dreams", list_route, methods=["GET"]),
    Route("/internal/memory/dreams", launch_route, methods=["POST"]),
    Route("/internal/memory/dreams/{dream_id}/rollback", rollback_route, methods=["POST"]),
]
