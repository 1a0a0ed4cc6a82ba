"""/internal/memory/dreams: Dreaming controls for operators, in the key's instance.

* ``GET``: the instance's dream rows, newest first;
* ``POST``: launch Dreaming for one partition of the instance, or for all its eligible
  partitions, through the app's Dream launcher (``api.launching``); 202 with the run id and
  how it runs, 200 with ``runId: null`` when no partition is eligible;
* ``GET {dream_id}``: one Dream in full
(:func:`memory_platform.features.dreaming.inspect.dream_detail`:
  proposals, accepted and rejected items with reason codes, policy preview, dry-run
  proposals, the effective model and its source, rollback state); 404 like rollback. A
  Dream of another user's private partition answers its numbers, states and reason codes
  but none of its text (:func:`detail_for`): an admin is not that person's audience;
* ``POST {dream_id}/rollback``: compensate one Dream (404 for unknown ids and for another
  instance's) and show it on the Dream's partition in Dagster through the app's rollback
  recorder (``api.launching``), as a rollback launched from the Dagster UI shows.
"""

from __future__ import annotations

import uuid
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from api.auth import api_key
from api.launching import launch_dreams, record_rollback
from api.operation import ADMIN, INTERNAL, Operation, Section
from api.paths import path_id
from api.responses import model_response
from api.schemas.common import DreamOut
from api.schemas.dreaming import (
    DreamDetailResponse,
    DreamLaunch,
    DreamLaunchResponse,
    DreamListParams,
    DreamListResponse,
    DreamRollbackResponse,
)
from api.threads import with_connection
from memory_platform.features.dreaming.inspect import dream_detail
from memory_platform.features.dreaming.rollback import rollback_dream
from memory_platform.features.dreaming.runs import list_dreams
from memory_platform.features.dreaming.summary import dream_row_view
from memory_platform.features.dreaming.targets import target_partitions

NO_DREAM = "no dream with that id in this instance"


def _withheld(detail: dict[str, Any]) -> dict[str, Any]:
    """The text-free shape of a Dream detail: ids, states, reason codes and numbers kept
    (an allow-list, so a field added later stays out until someone decides it is safe)."""
    return {
        **{k: detail[k] for k in ("id", "instanceKey", "partitionKey", "audience", "status",
                                  "trigger", "model", "dryRun", "dagsterRunId", "startedAt",
                                  "finishedAt", "rolledBackAt", "diagnostics", "stats",
                                  "effectiveModel", "rejectedByReason", "rollback")},
        "error": None, "proposals": {}, "dryRunProposals": [], "policyPreview": [],
        "accepted": [{**{k: a[k] for k in ("assertionId", "type", "created", "status",
                                           "reviewState", "decision", "reviewerKind",
                                           "reasonCode")}, "text": None}
                     for a in detail["accepted"]],
        "rejected": [{"kind": r["kind"], "item": r["item"], "reasonCode": r["reasonCode"],
                      "stage": r["stage"], "text": None, "detail": None}
                     for r in detail["rejected"]],
        "wikiProposals": [{"id": w["id"], "state": w["state"], "slug": None, "title": None,
                           "reason": None} for w in detail["wikiProposals"]],
        "diagnosticsFull": [{"code": d.get("code")} for d in detail["diagnosticsFull"]
                            if isinstance(d, dict)],
        "privateTextWithheld": True,
    }


def detail_for(conn, instance_key: str, dream_id: uuid.UUID,
               viewer: str | None) -> dict[str, Any]:
    """One Dream in full for ``viewer``; without its text when it dreamed another user's
    private partition (a private partition's key is its owner's user id)."""
    detail = dream_detail(conn, instance_key, dream_id)
    audience = detail["audience"]
    if audience["kind"] == "private" and audience["key"] != viewer:
        return _withheld(detail)
    return {**detail, "privateTextWithheld": False}


async def detail_route(request: Request) -> DreamDetailResponse:
    dream_id = path_id(request, "dream_id", NO_DREAM)
    key = api_key(request)
    detail = await with_connection(request, detail_for, key.instance_key, dream_id,
                                   key.user_id)
    return DreamDetailResponse.model_validate(detail)


async def list_route(request: Request, params: DreamListParams) -> DreamListResponse:
    limit = params.limit or request.state.settings.dream_list_limit
    rows = await with_connection(request, list_dreams, instance_key=api_key(request).instance_key,
                                 limit=limit)
    return DreamListResponse(dreams=[DreamOut.model_validate(dream_row_view(r)) for r in rows])


async def launch_route(request: Request, body: DreamLaunch) -> Response:
    state = request.state
    keys = await with_connection(request, target_partitions, state.settings,
                                 api_key(request).instance_key, partition=body.partition,
                                 all_eligible=body.all_eligible)
    if not keys:
        nothing = DreamLaunchResponse(run_id=None, partitions=[], model=body.model,
                                      dry_run=body.dry_run)
        return model_response(nothing, status_code=200)
    run = await run_in_threadpool(launch_dreams, state.launcher, state.settings, keys,
                                  model=body.model, dry_run=body.dry_run)
    launched = DreamLaunchResponse(run_id=run.run_id, partitions=keys, model=body.model,
                                   dry_run=body.dry_run, mode=run.mode)
    return model_response(launched, status_code=202)


async def roll_back(request: Request, instance_key: str) -> dict[str, Any]:
    """Compensate the Dream the path names (404 for a malformed, unknown or foreign id) and
    show it on its partition in Dagster: the rollback's result with ``shownInDagster``. The
    REST route and the inspector's action both call this."""
    dream_id = path_id(request, "dream_id", NO_DREAM)
    state = request.state
    result = await with_connection(request, rollback_dream, dream_id, settings=state.settings,
                                   embedder=state.embedder, instance_key=instance_key)
    shown = await run_in_threadpool(record_rollback, state.rollback_recorder, state.settings,
                                    result)
    return {**result.as_json(), "shownInDagster": shown}


async def rollback_route(request: Request) -> DreamRollbackResponse:
    return DreamRollbackResponse.model_validate(
        await roll_back(request, api_key(request).instance_key))


ROUTES = (Section(INTERNAL, (
    Operation("GET", "/memory/dreams", list_route,
              "Dream rows of the key's instance, newest first", ADMIN,
              query=DreamListParams, response=DreamListResponse),
    Operation("POST", "/memory/dreams", launch_route,
              "Launch Dreaming for one partition or all eligible ones (202; 200 with "
              "runId null when nothing is eligible; 503 when this process cannot launch)",
              ADMIN, body=DreamLaunch, response=DreamLaunchResponse,
              status=202),
    Operation("GET", "/memory/dreams/{dream_id:id}", detail_route,
              "One Dream in full: proposals, accepted and rejected items with reason "
              "codes, policy preview, effective model, rollback state", ADMIN,
              response=DreamDetailResponse),
    Operation("POST", "/memory/dreams/{dream_id:id}/rollback", rollback_route,
              "Roll back one Dream: compensate what no person decided, report what is "
              "protected", ADMIN, response=DreamRollbackResponse),
)),)
