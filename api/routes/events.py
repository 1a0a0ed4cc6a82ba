"""/api/v1/events (scope ``memory:read``): the event feed of what the caller may see (its
webhooks are ``api.routes.webhooks``). A thin handler over ``memory_platform.features.events``."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import with_caller
from api.operation import API, READ, Operation, Section
from api.schemas.events import EventListParams, EventListResponse
from memory_platform.features.events import store


async def list_route(request: Request, params: EventListParams) -> EventListResponse:
    """GET /api/v1/events"""
    kinds = [k.strip() for k in params.kinds.split(",") if k.strip()] if params.kinds else None
    events, cursor = await with_caller(request, params, store.list_events, after=params.after,
                                       limit=params.limit, kinds=kinds)
    return EventListResponse(events=events, next_cursor=cursor)


ROUTES = (Section(API, (
    Operation("GET", "/events", list_route,
              "Changes of memory state the caller may see (written, deduplicated, "
              "activated, superseded, rejected, erased, Dream completed or rolled back), "
              "oldest first, paged with an opaque cursor", READ,
              query=EventListParams, response=EventListResponse),
)),)
