"""The JSON endpoints of the inspector's page scripts (under ``/inspector/api``).

Each one resolves the signed-in key to the caller's access context exactly as the REST API
does (``api.auth.with_caller``: ``memory_platform.trust.resolve_context`` on the request's
connection) and calls the same domain functions: ``memory_platform.graph.views`` for the
graph, ``memory_platform.review`` for the queues and decisions, ``memory_platform.dreaming``
and ``api.launching`` for Dreams, ``memory_platform.llm.selection`` for the model. Every POST
checks the session's CSRF token first (403 otherwise, nothing changed). Errors are the API's
one JSON error shape.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from api.auth import with_caller
from api.errors import ApiError
from api.input import read_json, read_query
from api.inspector import guard, session
from api.launching import launch_dreams
from api.routes.dreams import detail_for, roll_back
from api.schemas.dreams import DreamDetailResponse, DreamLaunch
from api.schemas.review import (
    AssertionDecisionIn,
    BulkDecisionIn,
    ConflictResolutionIn,
    WikiDecisionIn,
)
from api.threads import with_connection
from memory_platform.dreaming.runs import list_dreams
from memory_platform.dreaming.summary import dream_row_view
from memory_platform.dreaming.targets import target_partitions
from memory_platform.graph import views
from memory_platform.llm.selection import read_dreaming_model, set_dreaming_model
from memory_platform.membership import channel_members
from memory_platform.retrieval.memories import get_memory
from memory_platform.review import decisions, queues

DREAM_LIST = 50


class _Query(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class GraphParams(_Query):
    view: Literal["personal", "team", "channel", "all"] = "team"
    channel: str | None = Field(default=None, max_length=500)
    q: str | None = Field(default=None, max_length=views.SEARCH_MAX)
    dream: uuid.UUID | None = None
    budget: int = Field(default=views.BUDGET_DEFAULT, ge=1, le=views.BUDGET_MAX)


class NodeParams(_Query):
    view: Literal["personal", "team", "channel", "all"] = "team"
    channel: str | None = Field(default=None, max_length=500)
    node: str = Field(min_length=1, max_length=100)


class QueueParams(_Query):
    kind: Literal["assertion", "conflict", "wiki_draft"] = "assertion"
    type: str | None = Field(default=None, max_length=100)
    audience: Literal["private", "team", "workspace", "channel"] | None = None
    origin: str | None = Field(default=None, max_length=100)


class ModelIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    model: str = Field(max_length=200)


def dagster_base(request: Request) -> str:
    """The Dagster UI the operator opens (the dev profile serves it on loopback)."""
    return f"http://127.0.0.1:{request.state.settings.dagster_port}"


def _json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


async def _post(request: Request, scope: str):
    key = await guard.json_key(request, scope)
    session.check_csrf(request, request.headers.get(session.CSRF_HEADER))
    return key


# --- graph ----------------------------------------------------------------------------------

def _view_scope(key, view: str) -> None:
    if view == "all":
        guard.require(key, guard.ADMIN)


async def graph(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.READ)
    params = read_query(request, GraphParams)
    _view_scope(key, params.view)
    result = await with_caller(request, None, views.view_graph, params.view,
                               channel=params.channel, search=params.q,
                               dream_id=params.dream, budget=params.budget)
    result["allScopes"] = params.view == "all"
    return _json(result)


async def node(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.READ)
    params = read_query(request, NodeParams)
    _view_scope(key, params.view)
    card = await with_caller(request, None, views.node_card, params.view, params.node,
                             channel=params.channel)
    for item in card["evidence"]:
        item["sourceLink"] = (f"/inspector/api/memory/{item['sourceMemoryId']}"
                              if item["sourceMemoryId"] else None)
        item["dreamLink"] = (f"/inspector/dreams#dream-{item['dreamId']}"
                             if item["dreamId"] else None)
    return _json(card)


async def channels(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.READ)
    if not key.user_id:
        return _json({"channels": []})
    rows = await with_connection(request, channel_members, key.instance_key,
                                 user_id=key.user_id)
    return _json({"channels": sorted({m.channel_key for m in rows})})


async def memory(request: Request) -> JSONResponse:
    """A source memory the caller may recall (the evidence's source link)."""
    await guard.json_key(request, guard.READ)
    record = await with_caller(request, None, get_memory, request.path_params["memory_id"])
    return _json({"id": str(record.id), "content": record.content, "title": record.title,
                  "visibility": record.visibility_scope, "sourceType": record.source_type,
                  "assertionId": str(record.assertion_id) if record.assertion_id else None,
                  "assertionStatus": record.assertion_status,
                  "createdAt": record.created_at.isoformat()})


# --- review ---------------------------------------------------------------------------------

async def review_queue(request: Request) -> JSONResponse:
    await guard.json_key(request, guard.REVIEW)
    params = read_query(request, QueueParams)
    items, cursor = await with_caller(request, None, queues.review_queue, params.kind,
                                      assertion_type=params.type, audience=params.audience,
                                      origin=params.origin, limit=queues.MAX_LIMIT,
                                      cursor=None)
    return _json({"items": items, "nextCursor": cursor})


def _path_id(request: Request, name: str) -> uuid.UUID:
    try:
        return uuid.UUID(request.path_params[name])
    except ValueError as exc:
        raise ApiError(404, "not_found", "no such item in your review queues") from exc


async def decide_assertion(request: Request) -> JSONResponse:
    kind = (await _post(request, guard.REVIEW)).kind
    body = await read_json(request, AssertionDecisionIn)
    ident, settings = _path_id(request, "item_id"), request.state.settings

    def call(conn, ctx):
        return decisions.decide_assertion(conn, settings, ctx, ident, body.decision,
                                          reason_code=body.reason_code,
                                          successor_id=body.successor_id, note=body.note,
                                          key_kind=kind)

    return _json((await with_caller(request, None, call)).as_json())


async def decide_bulk(request: Request) -> JSONResponse:
    kind = (await _post(request, guard.REVIEW)).kind
    body = await read_json(request, BulkDecisionIn)
    settings = request.state.settings

    def call(conn, ctx):
        return decisions.decide_pending(conn, settings, ctx, body.decision,
                                        assertion_type=body.type, audience=body.audience,
                                        origin=body.origin, ids=body.ids, limit=body.limit,
                                        reason_code=body.reason_code, note=body.note,
                                        key_kind=kind)

    return _json((await with_caller(request, None, call)).as_json())


async def resolve_conflict(request: Request) -> JSONResponse:
    kind = (await _post(request, guard.REVIEW)).kind
    body = await read_json(request, ConflictResolutionIn)
    ident, settings = _path_id(request, "item_id"), request.state.settings

    def call(conn, ctx):
        return decisions.resolve(conn, settings, ctx, ident, body.action, keep_id=body.keep_id,
                                 key_kind=kind)

    return _json((await with_caller(request, None, call)).as_json())


async def decide_wiki(request: Request) -> JSONResponse:
    kind = (await _post(request, guard.REVIEW)).kind
    body = await read_json(request, WikiDecisionIn)
    ident = _path_id(request, "item_id")

    def call(conn, ctx):
        return decisions.decide_wiki_draft(conn, ctx, ident, body.decision, reason=body.reason,
                                           key_kind=kind)

    return _json((await with_caller(request, None, call)).as_json())


# --- dreams ---------------------------------------------------------------------------------

def _dream_rows(conn, settings, instance: str) -> dict[str, Any]:
    rows = list_dreams(conn, instance_key=instance, limit=DREAM_LIST)
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
    return _json(body)


async def dream(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.ADMIN)
    try:
        dream_id = uuid.UUID(request.path_params["dream_id"])
    except ValueError as exc:
        raise ApiError(404, "not_found", "no dream with that id in this instance") from exc
    detail = await with_connection(request, detail_for, key.instance_key, dream_id,
                                   key.user_id)
    return _json(DreamDetailResponse.model_validate(detail).model_dump(mode="json",
                                                                      by_alias=True))


async def rollback(request: Request) -> JSONResponse:
    key = await _post(request, guard.ADMIN)
    return _json(await roll_back(request, key.instance_key))


async def launch(request: Request) -> JSONResponse:
    key = await _post(request, guard.ADMIN)
    body = await read_json(request, DreamLaunch)
    state = request.state
    keys = await with_connection(request, target_partitions, state.settings, key.instance_key,
                                 partition=body.partition, all_eligible=body.all_eligible)
    if not keys:
        return _json({"runId": None, "partitions": [], "model": body.model})
    run = await run_in_threadpool(launch_dreams, state.launcher, state.settings, keys,
                                  model=body.model, dry_run=body.dry_run)
    return _json({"runId": run.run_id, "partitions": keys, "model": body.model,
                  "mode": run.mode}, status=202)


async def save_model(request: Request) -> JSONResponse:
    key = await _post(request, guard.ADMIN)
    body = await read_json(request, ModelIn)
    stored = await with_connection(request, set_dreaming_model, key.instance_key, body.model)
    return _json({"model": stored})
