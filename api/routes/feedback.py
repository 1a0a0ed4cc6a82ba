"""/api/v1/feedback: the agent runtime reports what it injected and what it answered, and
whether what it recalled helped (explicit helpful / unhelpful feedback)."""

from __future__ import annotations

from uuid import UUID

from starlette.requests import Request

from api.auth import with_caller
from api.errors import ApiError
from api.operation import API, WRITE, Operation, Section
from api.schemas.feedback import (
    CitedFeedback,
    CitedResponse,
    ExplicitFeedback,
    ExplicitResponse,
    InjectedFeedback,
    InjectedResponse,
)
from memory_platform.features.retrieval.feedback.events import (
    record_explicit,
    record_response,
    record_visible_injection,
)


def _uuids(values: list[str]) -> list[UUID]:
    try:
        return [UUID(v) for v in values]
    except ValueError as exc:
        raise ApiError(400, "validation_error", "assertionIds must be assertion UUIDs",
                       [{"field": "assertionIds", "problem": str(exc)}]) from exc


async def injected(request: Request, body: InjectedFeedback) -> InjectedResponse:
    ids = _uuids(body.assertion_ids)
    counted, new = await with_caller(request, body.context, record_visible_injection, ids,
                                     run_id=body.run_id)
    return InjectedResponse(run_id=body.run_id, counted=counted, recorded=new,
                            ignored=len(set(ids)) - counted)


async def cited(request: Request, body: CitedFeedback) -> CitedResponse:
    cited_ids = await with_caller(
        request, body.context, record_response, run_id=body.run_id,
        response_text=body.response_text, settings=request.state.settings,
    )
    return CitedResponse(run_id=body.run_id, cited=[str(i) for i in cited_ids])


async def explicit(request: Request, body: ExplicitFeedback) -> ExplicitResponse:
    ids = _uuids(body.assertion_ids)
    counted, new = await with_caller(request, body.context, record_explicit, ids,
                                     kind=body.kind, run_id=body.run_id, note=body.note)
    return ExplicitResponse(run_id=body.run_id, kind=body.kind, counted=counted, recorded=new,
                            ignored=len(set(ids)) - counted)


ROUTES = (Section(API, (
    Operation("POST", "/feedback/injected", injected,
              "Record the assertions a run injected", WRITE,
              body=InjectedFeedback, response=InjectedResponse),
    Operation("POST", "/feedback/explicit", explicit,
              "Say whether recalled assertions helped (helpful / unhelpful)", WRITE,
              body=ExplicitFeedback, response=ExplicitResponse),
    Operation("POST", "/feedback/cited", cited,
              "Run the cited sensor over a run's final answer", WRITE,
              body=CitedFeedback, response=CitedResponse),
)),)
