"""The inspector's review queues and a person's decisions (``/inspector/api/review``): the
same ``memory_platform.features.review`` functions as ``api.routes.review``, CSRF-checked.
"""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.auth import with_caller
from api.input import read_json, read_query
from api.inspector import guard, markdown
from api.inspector.data import StrictQuery, answer, signed_post
from api.paths import path_id
from api.routes.review import NOT_IN_QUEUES
from api.schemas.review import (
    AssertionDecisionIn,
    BulkDecisionIn,
    ConflictResolutionIn,
    WikiDecisionIn,
)
from memory_platform.features.review import decisions, queues


class QueueParams(StrictQuery):
    kind: Literal["assertion", "conflict", "wiki_draft"] = "assertion"
    type: str | None = Field(default=None, max_length=100)
    audience: Literal["private", "team", "workspace", "channel"] | None = None
    origin: str | None = Field(default=None, max_length=100)


async def review_queue(request: Request) -> JSONResponse:
    await guard.json_key(request, guard.REVIEW)
    params = read_query(request, QueueParams)
    items, cursor = await with_caller(request, None, queues.review_queue, params.kind,
                                      assertion_type=params.type, audience=params.audience,
                                      origin=params.origin, limit=queues.MAX_LIMIT,
                                      cursor=None)
    if params.kind == "wiki_draft":  # Markdown rendered off the event loop, the connection back
        await run_in_threadpool(_render_drafts, items)
    return answer({"items": items, "nextCursor": cursor})


def _render_drafts(items: list[dict]) -> None:
    for item in items:
        item["bodyHtml"] = markdown.render(item.get("bodyMarkdown"))


def _path_id(request: Request, name: str) -> uuid.UUID:
    return path_id(request, name, NOT_IN_QUEUES)


async def decide_assertion(request: Request) -> JSONResponse:
    kind = (await signed_post(request, guard.REVIEW)).kind
    body = await read_json(request, AssertionDecisionIn)
    ident, settings = _path_id(request, "item_id"), request.state.settings

    def call(conn, ctx):
        return decisions.decide_assertion(conn, settings, ctx, ident, body.decision,
                                          reason_code=body.reason_code,
                                          successor_id=body.successor_id, note=body.note,
                                          key_kind=kind)

    return answer((await with_caller(request, None, call)).as_json())


async def decide_bulk(request: Request) -> JSONResponse:
    kind = (await signed_post(request, guard.REVIEW)).kind
    body = await read_json(request, BulkDecisionIn)
    settings = request.state.settings

    def call(conn, ctx):
        return decisions.decide_pending(conn, settings, ctx, body.decision,
                                        assertion_type=body.type, audience=body.audience,
                                        origin=body.origin, ids=body.ids, limit=body.limit,
                                        reason_code=body.reason_code, note=body.note,
                                        key_kind=kind)

    return answer((await with_caller(request, None, call)).as_json())


async def resolve_conflict(request: Request) -> JSONResponse:
    kind = (await signed_post(request, guard.REVIEW)).kind
    body = await read_json(request, ConflictResolutionIn)
    ident, settings = _path_id(request, "item_id"), request.state.settings

    def call(conn, ctx):
        return decisions.resolve(conn, settings, ctx, ident, body.action, keep_id=body.keep_id,
                                 key_kind=kind)

    return answer((await with_caller(request, None, call)).as_json())


async def decide_wiki(request: Request) -> JSONResponse:
    kind = (await signed_post(request, guard.REVIEW)).kind
    body = await read_json(request, WikiDecisionIn)
    ident = _path_id(request, "item_id")

    def call(conn, ctx):
        return decisions.decide_wiki_draft(conn, ctx, ident, body.decision, reason=body.reason,
                                           key_kind=kind)

    return answer((await with_caller(request, None, call)).as_json())


ROUTES = [
    Route("/review", review_queue, methods=["GET"]),
    Route("/review/assertions/bulk", decide_bulk, methods=["POST"]),
    Route("/review/assertions/{item_id:id}", decide_assertion, methods=["POST"]),
    Route("/review/conflicts/{item_id:id}", resolve_conflict, methods=["POST"]),
    Route("/review/wiki/{item_id:id}", decide_wiki, methods=["POST"]),
]
