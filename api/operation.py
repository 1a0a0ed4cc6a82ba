"""What a feature's route module declares: its operations (:class:`Operation`), grouped
under a path prefix (:class:`Section`), and the API-key scopes they need.

Each operation is declared once, in its feature's ``api/routes/<feature>.py`` (``ROUTES``):
method, path, handler, the API-key scope it needs, its input model (a JSON body or the query
string), its response model and success status. ``api.table`` collects them over
``memory_platform.foundation.features.FEATURES``; the Starlette routes (one ``Mount`` per prefix),
the
scope check (:class:`api.auth.RequireScope` on each route that declares a scope) and
``/openapi.json`` all derive from that table.

A handler is called as ``handler(request)``, or ``handler(request, input)`` when the operation
declares a body or query model (read strictly by ``api.input``). It answers its response
model (sent with the declared status), or a ready ``Response`` when it chooses the status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from api import paths  # noqa: F401  (registers the path-id convertor)
from api.auth import RequireScope
from api.input import MAX_VALUES, read_json, read_query
from api.responses import model_response
from memory_platform.foundation.settings import Settings

READ, WRITE, ADMIN, RUNTIME = "memory:read", "memory:write", "admin", "runtime"
REVIEW = "memory:review"
# Membership is managed by operators and by the agent runtime.
MEMBERSHIP = (ADMIN, RUNTIME)

# The path prefixes of the API: public probes at the root, the agents' API, the operators'.
ROOT, API, INTERNAL = "", "/api/v1", "/internal"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str                                   # below its section's prefix
    handler: Callable[..., Awaitable[Any]]
    summary: str
    scope: str | tuple[str, ...] | None = None  # None: public; a tuple: any one of them
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: type[BaseModel] | None = None
    status: int = 200
    # The body's limits from the settings, where an operation needs its own (bytes: else
    # api_max_body_bytes; JSON values: else api.input.MAX_VALUES).
    body_bytes: Callable[[Settings], int] | None = None
    body_values: Callable[[Settings], int] | None = None
    # Error statuses this operation answers beyond the common ones of every protected route
    # (api.openapi._ERRORS): (status, when), listed in /openapi.json.
    errors: tuple[tuple[int, str], ...] = ()
    # The feature that declares it (api.table sets it from the module): its tag in /docs.
    feature: str = ""

    def route(self) -> Route:
        async def endpoint(request: Request) -> Response:
            inputs = []
            if self.body is not None:
                settings = request.state.settings
                inputs.append(await read_json(
                    request, self.body,
                    max_bytes=self.body_bytes(settings) if self.body_bytes else None,
                    max_values=self.body_values(settings) if self.body_values else MAX_VALUES))
            if self.query is not None:
                inputs.append(read_query(request, self.query))
            answer = await self.handler(request, *inputs)
            return answer if isinstance(answer, Response) else model_response(answer,
                                                                               self.status)

        guard = [Middleware(RequireScope, needs=self.scope)] if self.scope else None
        return Route(self.path, endpoint, methods=[self.method], middleware=guard,
                     name=f"{self.method} {self.path}")


@dataclass(frozen=True)
class Section:
    prefix: str                                 # '' for routes at the root
    operations: tuple[Operation, ...]

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [op.route() for op in self.operations]
        return [Mount(self.prefix, routes=routes)] if self.prefix else routes
