"""The inspector's Dreams (``/inspector/api/dreams``): the rows with their Dagster links, one
Dream in full, rollback, launch and the Dreaming model (admin keys; POSTs CSRF-checked).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.input import read_json
from api.inspector import guard
from api.inspector.data import answer, dagster_base, signed_post
from api.launching import launch_dreams
from api.paths import path_id
from api.routes.dreaming import NO_DREAM, detail_for, roll_back
from api.schemas.dreaming import DreamDetailResponse, DreamLaunch
from api.threads import with_connection
from memory_platform.features.dreaming.runs import list_dreams
from memory_platform.features.dreaming.summary import dream_row_view
from memory_platform.features.dreaming.targets import target_partitions
from memory_platform.features.graph import views
from memory_platform.shared.llm.selection import read_dreaming_model, set_dreaming_model


class ModelIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    model: str = Field(max_length=200)


def _dream_rows(conn, settings, instance: str) -> dict[str, Any]:
    rows = list_dreams(conn, instance_key=instance, limit=settings.dream_list_limit)
    counts = views.dream_graph_counts(conn, instance, [r["id"] for r in rows])
    partitions = target_partitions(conn, settings, instance, partition=None, all_eligible=True)
    return {"dreams": [{**dream_row_view(r), "graph": counts.get(str(r["id"]),
                                                                 {"entities": 0, "claims": 0,
                                                                  "edges": 0})}
                       for r in rows],
            "model": read_dreaming_model(conn, settings, instance),
            "eligible": list(partitions)}


async def dreams(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.ADMIN)
    body = await with_connection(request, _dream_rows, request.state.settings,
                                 key.instance_key)
    base = dagster_base(request)
    for dream in body["dreams"]:
        run = dream.get("dagsterRunId")
        dream["links"] = {
            "run": f"{base}/runs/{quote(run, safe='')}" if run else None,
            "asset": (f"{base}/assets/dream_assertions?partition="
                      f"{quote(dream['partitionKey'], safe='')}"),
            "graph": f"/inspector/graph?view=all&dream={dream['id']}",
        }
    body["dagster"] = base
    body["canLaunch"] = request.state.launcher is not None
    return answer(body)


async def dream(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.ADMIN)
    dream_id = path_id(request, "dream_id", NO_DREAM)
    detail = await with_connection(request, detail_for, key.instance_key, dream_id,
                                   key.user_id)
    return answer(DreamDetailResponse.model_validate(detail).model_dump(mode="json",
                                                                      by_alias=True))


async def rollback(request: Request) -> JSONResponse:
    key = await signed_post(request, guard.ADMIN)
    return answer(await roll_back(request, key.instance_key))


async def launch(request: Request) -> JSONResponse:
    key = await signed_post(request, guard.ADMIN)
    body = await read_json(request, DreamLaunch)
    state = request.state
    keys = await with_connection(request, target_partitions, state.settings, key.instance_key,
                                 partition=body.partition, all_eligible=body.all_eligible)
    if not keys:
        return answer({"runId": None, "partitions": [], "model": body.model})
    run = await run_in_threadpool(launch_dreams, state.launcher, state.settings, keys,
                                  model=body.model, dry_run=body.dry_run)
    return answer({"runId": run.run_id, "partitions": keys, "model": body.model,
                  "mode": run.mode}, status=202)


async def save_model(request: Request) -> JSONResponse:
    key = await signed_post(request, guard.ADMIN)
    body = await read_json(request, ModelIn)
    stored = await with_connection(request, set_dreaming_model, key.instance_key, body.model)
    return answer({"model": stored})


ROUTES = [
    Route("/dreams", dreams, methods=["GET"]),
    Route("/dreams/launch", launch, methods=["POST"]),
    Route("/dreams/model", save_model, methods=["POST"]),
    Route("/dreams/{dream_id:id}", dream, methods=["GET"]),
    Route("/dreams/{dream_id:id}/rollback", rollback, methods=["POST"]),
]
