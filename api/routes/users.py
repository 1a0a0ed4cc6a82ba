"""Admin routes over the people of an instance: list the registered users with their
share-with-team choice, and set a user's choice (memory_platform/shared/users.py).

The choice is a person's, never an agent's: besides the ``admin`` scope the route table
checks, :func:`require_person` refuses a runtime key (the agent runtime) and an agent key
(403 ``person_required``). The MCP server has no tool for it. Setting it changes only the
default of future writes; existing memories keep their audience.
"""

from __future__ import annotations

from starlette.requests import Request

from api.auth import api_key
from api.errors import ApiError
from api.operation import ADMIN, API, Operation, Section
from api.schemas.users import SharingIn, UserListParams, UserOut, UsersResponse
from api.threads import with_connection
from memory_platform.features.apikeys import ApiKey
from memory_platform.shared.users import User, list_users, set_sharing

ADMIN_SCOPE = "admin"


def user_out(user: User) -> UserOut:
    return UserOut(user_id=user.user_id, created_at=user.created_at.isoformat(),
                   created_by=user.created_by, shares_with_team=user.shares_with_team,
                   share_is_default=user.share_stored is None,
                   share_changed_by=user.share_changed_by)


def require_person(key: ApiKey) -> str:
    """The ``changed_by`` of a person's admin key; 403 for a runtime or agent key, or a key
    without the admin scope."""
    if not key.person:
        raise ApiError(403, "person_required",
                       "only a person may change sharing: a runtime or agent key cannot",
                       {"keyKind": key.kind})
    if ADMIN_SCOPE not in key.scopes:
        raise ApiError(403, "missing_scope", "this route needs the admin scope",
                       {"required": [ADMIN_SCOPE]})
    return f"admin key {key.token_prefix}"


async def list_users_route(request: Request, params: UserListParams) -> UsersResponse:
    key = api_key(request)
    found = await with_connection(request, list_users, key.instance_key)
    return UsersResponse(users=[user_out(u) for u in found])


async def set_sharing_route(request: Request, body: SharingIn) -> UserOut:
    key = api_key(request)
    changed_by = require_person(key)
    user = await with_connection(request, set_sharing, key.instance_key, body.user_id,
                                 body.share, changed_by=changed_by)
    return user_out(user)


ROUTES = (Section(API, (
    Operation("GET", "/users", list_users_route,
              "Users of the key's instance with their share-with-team preference", ADMIN,
              query=UserListParams, response=UsersResponse),
    Operation("PUT", "/users/sharing", set_sharing_route,
              "Set a user's share-with-team preference (a person's admin key only)", ADMIN,
              body=SharingIn, response=UserOut),
)),)
