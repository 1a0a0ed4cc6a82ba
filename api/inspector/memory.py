"""A source memory the caller may recall (``/inspector/api/memory/{id}``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.auth import with_caller
from api.inspector import guard
from api.inspector.data import answer
from memory_platform.features.retrieval.memories import get_memory


async def memory(request: Request) -> JSONResponse:
    """A source memory the caller may recall (the evidence's source link)."""
    await guard.json_key(request, guard.READ)
    record = await with_caller(request, None, get_memory, request.path_params["memory_id"])
    return answer({"id": str(record.id), "content": record.content, "title": record.title,
                  "visibility": record.visibility_scope, "sourceType": record.source_type,
                  "assertionId": str(record.assertion_id) if record.assertion_id else None,
                  "assertionStatus": record.assertion_status,
                  "createdAt": record.created_at.isoformat()})


ROUTES = [
    Route("/memory/{memory_id}", memory, methods=["GET"]),
]
