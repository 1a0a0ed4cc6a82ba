"""GET /internal/memory/profile: one user's profile (diagnostics, admin scope), of the admin
key's own instance. ``refresh=1`` rebuilds it regardless of its age."""

from __future__ import annotations

from starlette.requests import Request

from api.auth import api_key
from api.schemas import ProfileItemModel, ProfileParams, ProfileResponse
from api.threads import with_connection
from memory_platform.access import AccessContext
from memory_platform.maintenance.profiles import Profile, get_profile


def profile_response(profile: Profile) -> ProfileResponse:
    return ProfileResponse(
        user_id=profile.user_id,
        static_facts=[ProfileItemModel(**i.as_dict()) for i in profile.static_facts],
        recent_context=[ProfileItemModel(**i.as_dict()) for i in profile.recent_context],
        built_at=profile.built_at, persisted=profile.persisted, cached=profile.cached,
        text=profile.text)


async def profile(request: Request, params: ProfileParams) -> ProfileResponse:
    state = request.state
    ctx = AccessContext(instance_key=api_key(request).instance_key, user_id=params.user_id)
    found = await with_connection(request, get_profile, state.settings, ctx,
                                  refresh=params.refresh)
    return profile_response(found)
