"""/api/v1/assertions: the assertion ledger read as it was at a past moment (asOf). A thin
handler over ``memory_platform.features.consolidation.history``; the caller's context is resolved on
the request's connection (``with_caller``), so the read sees exactly what the visibility rule
opens to that caller today."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import with_caller
from api.operation import API, READ, Operation, Section
from api.schemas.assertions import AssertionAsOfOut, AssertionAsOfParams, AssertionAsOfResponse
from memory_platform.features.consolidation.history import assertions_as_of


async def as_of(request: Request, params: AssertionAsOfParams) -> AssertionAsOfResponse:
    settings = request.state.settings
    found = await with_caller(request, params, assertions_as_of, params.at,
                              query=params.query, limit=params.limit,
                              scan_cap=settings.retrieval_lexical_scan_cap)
    return AssertionAsOfResponse(
        at=params.at.isoformat(),
        results=[AssertionAsOfOut(id=r["id"], text=r["text"], assertion_type=r["assertionType"],
                                  visibility=r["visibility"], then=r["then"], now=r["now"],
                                  earlier=r["earlier"], later=r["later"]) for r in found])


ROUTES = (Section(API, (
    Operation("GET", "/assertions/as-of", as_of,
              "The assertions believed true at a past moment (recorded and valid then), "
              "each with its revision chain and its state now", READ,
              query=AssertionAsOfParams, response=AssertionAsOfResponse),
)),)
