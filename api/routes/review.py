"""/api/v1/review: the review queues and a person's decisions (scope ``memory:review``).
Thin handlers over ``memory_platform.features.review``; the caller's context is resolved on the
request's connection (``with_caller``), so a reviewer lists and decides only what the
visibility rule opens to them (404 otherwise). Every decision passes the key's kind: only a
person decides (403 ``person_required`` for an agent or runtime key), and the four-eyes rule
applies (403 ``own_evidence``; ``memory_platform.features.review.decisions``). Request and response
shapes: ``api.schemas``."""

from __future__ import annotations

import uuid

from starlette.requests import Request

from api.auth import api_key, with_caller
from api.operation import API, REVIEW, Operation, Section
from api.paths import path_id
from api.schemas.review import (
    AssertionDecisionIn,
    BulkDecisionIn,
    ConflictResolutionIn,
    DecisionResponse,
    ReviewQueueParams,
    ReviewQueueResponse,
    WikiDecisionIn,
)
from memory_platform.features.review import decisions, queues

NOT_IN_QUEUES = "no such item in your review queues"


def _id(request: Request, name: str) -> uuid.UUID:
    return path_id(request, name, NOT_IN_QUEUES)


def _settings(request: Request):
    return request.state.settings


async def queue_route(request: Request, params: ReviewQueueParams) -> ReviewQueueResponse:
    """GET /api/v1/review/queue"""
    items, cursor = await with_caller(
        request, params, queues.review_queue, params.kind, assertion_type=params.type,
        audience=params.audience, origin=params.origin, limit=params.limit,
        cursor=params.cursor)
    return ReviewQueueResponse(items=items, next_cursor=cursor)


async def assertion_decision_route(request: Request,
                                   body: AssertionDecisionIn) -> DecisionResponse:
    """POST /api/v1/review/assertions/{assertion_id}/decision"""
    settings, kind = _settings(request), api_key(request).kind

    def call(conn, ctx):
        return decisions.decide_assertion(conn, settings, ctx, _id(request, "assertion_id"),
                                          body.decision, reason_code=body.reason_code,
                                          successor_id=body.successor_id, note=body.note,
                                          key_kind=kind)

    result = await with_caller(request, None, call)
    return DecisionResponse.model_validate(result.as_json())


async def bulk_decision_route(request: Request, body: BulkDecisionIn) -> DecisionResponse:
    """POST /api/v1/review/assertions/bulk"""
    settings, kind = _settings(request), api_key(request).kind

    def call(conn, ctx):
        return decisions.decide_pending(conn, settings, ctx, body.decision,
                                        assertion_type=body.type, audience=body.audience,
                                        origin=body.origin, ids=body.ids, limit=body.limit,
                                        reason_code=body.reason_code, note=body.note,
                                        key_kind=kind)

    result = await with_caller(request, None, call)
    return DecisionResponse.model_validate(result.as_json())


async def conflict_resolution_route(request: Request,
                                    body: ConflictResolutionIn) -> DecisionResponse:
    """POST /api/v1/review/conflicts/{conflict_id}/resolution"""
    settings, kind = _settings(request), api_key(request).kind

    def call(conn, ctx):
        return decisions.resolve(conn, settings, ctx, _id(request, "conflict_id"),
                                 body.action, keep_id=body.keep_id, key_kind=kind)

    result = await with_caller(request, None, call)
    return DecisionResponse.model_validate(result.as_json())


async def wiki_decision_route(request: Request, body: WikiDecisionIn) -> DecisionResponse:
    """POST /api/v1/review/wiki/{proposal_id}/decision"""
    kind = api_key(request).kind

    def call(conn, ctx):
        return decisions.decide_wiki_draft(conn, ctx, _id(request, "proposal_id"),
                                           body.decision, reason=body.reason, key_kind=kind)

    result = await with_caller(request, None, call)
    return DecisionResponse.model_validate(result.as_json())


ROUTES = (Section(API, (
    Operation("GET", "/review/queue", queue_route,
              "Pending assertions, open conflicts or wiki drafts the reviewer may see, "
              "with their evidence", REVIEW, query=ReviewQueueParams,
              response=ReviewQueueResponse),
    Operation("POST", "/review/assertions/{assertion_id:id}/decision",
              assertion_decision_route, "Approve, reject or supersede one "
              "assertion (a person's decision: it wins over automation)", REVIEW,
              body=AssertionDecisionIn, response=DecisionResponse),
    Operation("POST", "/review/assertions/bulk", bulk_decision_route,
              "Approve or reject a filtered list of pending assertions (at most 500)",
              REVIEW, body=BulkDecisionIn, response=DecisionResponse),
    Operation("POST", "/review/conflicts/{conflict_id:id}/resolution",
              conflict_resolution_route, "Resolve a conflict: keep one, keep both, "
              "merge", REVIEW, body=ConflictResolutionIn,
              response=DecisionResponse),
    Operation("POST", "/review/wiki/{proposal_id:id}/decision", wiki_decision_route,
              "Approve or reject a wiki draft", REVIEW, body=WikiDecisionIn,
              response=DecisionResponse),
)),)
