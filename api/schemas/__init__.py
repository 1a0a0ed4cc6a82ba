"""Request and response shapes of the HTTP API (pydantic; they also make /openapi.json), one
module per feature (``api/schemas/<feature>.py``, imported by ``api/routes/<feature>.py``)
and the shapes they share (``common``).

Requests are strict: unknown fields, wrong types and out-of-range values are errors, never
coerced or ignored. Responses wrap every memory so an agent cannot mistake stored text for
instructions: ``trust`` is always ``"untrusted-data"`` and the text sits in ``content``.
"""

from __future__ import annotations

# Named here for callers outside the API that read the operator report's shape
# (tests/test_cli_db.py); everything else imports from its feature's module.
from api.schemas.internal import StatusResponse

__all__ = ["StatusResponse"]
