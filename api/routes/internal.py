"""/internal/memory: the operator's status report and one bounded re-embedding batch, both of
the admin key's own instance."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import api_key
from api.schemas import ReembedRequest, ReembedResponse, StatusResponse
from api.threads import with_connection
from memory_platform.operator_status import memory_status
from memory_platform.projection.reembed import reembed_backfill


async def status(request: Request) -> StatusResponse:
    report = await with_connection(request, memory_status, api_key(request).instance_key)
    return StatusResponse.model_validate(report)


async def reembed(request: Request, body: ReembedRequest) -> ReembedResponse:
    state = request.state
    result = await with_connection(request, reembed_backfill, state.settings,
                                   limit=body.limit, embedder=state.embedder,
                                   instance_key=api_key(request).instance_key)
    return ReembedResponse.model_validate(result.as_dict())
