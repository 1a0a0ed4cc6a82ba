"""A user's profile: ``GET /api/v1/profile`` for that user's own key and for the runtime
acting for them (scope ``memory:read``, no admin key: the specification's per-user profile a
runtime injects), and ``GET /internal/memory/profile`` (diagnostics, admin scope, of the admin
key's own instance; ``refresh=1`` rebuilds it regardless of its age).

A profile is built from its person's private memories too, so it is that person's alone:
an admin reads their own profile, never another user's (403 ``foreign_profile``; issue 28,
finding 11)."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import api_key, with_caller
from api.errors import ApiError
from api.operation import ADMIN, API, INTERNAL, READ, Operation, Section
from api.schemas.profiles import (
    OwnProfileParams,
    ProfileItemModel,
    ProfileParams,
    ProfileResponse,
)
from api.threads import with_connection
from memory_platform.features.maintenance.profiles import Profile, get_profile
from memory_platform.foundation.errors import InvalidInput
from memory_platform.shared.access import AccessContext


def profile_response(profile: Profile) -> ProfileResponse:
    return ProfileResponse(
        user_id=profile.user_id,
        static_facts=[ProfileItemModel(**i.as_dict()) for i in profile.static_facts],
        recent_context=[ProfileItemModel(**i.as_dict()) for i in profile.recent_context],
        built_at=profile.built_at, persisted=profile.persisted, cached=profile.cached,
        text=profile.text)


async def profile(request: Request, params: ProfileParams) -> ProfileResponse:
    state, key = request.state, api_key(request)
    if params.user_id != key.user_id:
        raise ApiError(403, "foreign_profile",
                       "a profile holds its person's private memories: an admin key reads "
                       "only its own user's profile", {"userId": params.user_id})
    ctx = AccessContext(instance_key=key.instance_key, user_id=params.user_id)
    found = await with_connection(request, get_profile, state.settings, ctx,
                                  refresh=params.refresh)
    return profile_response(found)


async def own_profile(request: Request, params: OwnProfileParams) -> ProfileResponse:
    """The caller's user's profile (a runtime key: the user it names, which it must)."""
    state = request.state

    def read(conn, ctx):
        if not ctx.user_id:
            raise InvalidInput("name the user whose profile the runtime reads (userId)",
                               details={"field": "userId"})
        return get_profile(conn, state.settings, ctx)

    return profile_response(await with_caller(request, params, read))


ROUTES = (Section(API, (
    Operation("GET", "/profile", own_profile,
              "The user's profile: its static facts and recent context (the user's own key, "
              "or the runtime acting for the user)", READ,
              query=OwnProfileParams, response=ProfileResponse),
)), Section(INTERNAL, (
    Operation("GET", "/memory/profile", profile,
              "One user's precomputed profile (refresh=1 rebuilds it)", ADMIN,
              query=ProfileParams, response=ProfileResponse),
)),)
