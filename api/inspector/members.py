"""The channels the signed-in user is a member of (``/inspector/api/channels``).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from api.inspector import guard
from api.inspector.data import answer
from api.threads import with_connection
from memory_platform.shared.membership import channel_members


async def channels(request: Request) -> JSONResponse:
    key = await guard.json_key(request, guard.READ)
    if not key.user_id:
        return answer({"channels": []})
    rows = await with_connection(request, channel_members, key.instance_key,
                                 user_id=key.user_id)
    return answer({"channels": sorted({m.channel_key for m in rows})})


ROUTES = [
    Route("/channels", channels, methods=["GET"]),
]
