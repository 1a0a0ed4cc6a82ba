"""The inspector's graph (``/inspector/api/graph``, ``/node``):
``memory_platform.features.graph.views``
under the caller's visibility; the whole graph (``view=all``) for admin keys only.
"""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.auth import with_caller
from api.input import read_query
from api.inspector import guard
from api.inspector.data import StrictQuery, answer
from memory_platform.features.graph import views


class GraphParams(StrictQuery):
    view: Literal["personal", "team", "channel", "all"] = "team"
    channel: str | None = Field(default=None, max_length=500)
    q: str | None = Field(default=None, max_length=views.SEARCH_MAX)
    dream: uuid.UUID | None = None
    budget: int = Field(default=views.BUDGET_DEFAULT, ge=1, le=views.BUDGET_MAX)


class NodeParams(StrictQuery):
    view: Literal["personal", "team", "channel", "all"] = "team"
    channel: str | None = Field(default=None, max_length=500)
    node: str = Field(min_length=1, max_length=100)


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
    return answer(result)


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
    return answer(card)


ROUTES = [
    Route("/graph", graph, methods=["GET"]),
    Route("/node", node, methods=["GET"]),
]
