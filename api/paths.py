"""Ids in paths, parsed once by a Starlette convertor: ``{dream_id:id}``.

The ``id`` convertor matches what the default one does (one path segment), so routing is
unchanged; it answers a :class:`uuid.UUID` for a UUID (any spelling ``uuid.UUID`` reads) and a
:class:`MalformedId` otherwise. A handler takes the id with :func:`path_id`, which refuses a
malformed one as 404 ``not_found`` with the route's own message, where the handler used to
parse it (after authentication, the body and the caller's context), so every answer stays as
it was. ``api.metrics.route_template`` shows such a parameter as ``{dream_id}``.
"""

from __future__ import annotations

import uuid

from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request

from api.errors import ApiError


class MalformedId(str):
    """A path segment where an id belongs that is not one (answered 404 where it is used)."""


class IdConvertor(Convertor[uuid.UUID | MalformedId]):
    regex = "[^/]+"

    def convert(self, value: str) -> uuid.UUID | MalformedId:
        try:
            return uuid.UUID(value)
        except ValueError:
            return MalformedId(value)

    def to_string(self, value: uuid.UUID | MalformedId) -> str:
        return str(value)


register_url_convertor("id", IdConvertor())


def path_id(request: Request, name: str, missing: str) -> uuid.UUID:
    """The id the path names under ``name``; a malformed one is 404 ``not_found``
    (``missing``: the message, as for an unknown id)."""
    value = request.path_params[name]
    if isinstance(value, uuid.UUID):
        return value
    raise ApiError(404, "not_found", missing)
