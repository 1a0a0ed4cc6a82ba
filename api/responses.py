"""Response models to HTTP: one place, serialized by pydantic-core straight to JSON bytes
(no intermediate dict and no second encoder on the hot path)."""

from __future__ import annotations

from pydantic import BaseModel
from starlette.responses import Response


def model_response(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as a JSON response, field names as their public (camelCase) aliases."""
    return Response(model.model_dump_json(by_alias=True), status_code=status_code,
                    media_type="application/json")
