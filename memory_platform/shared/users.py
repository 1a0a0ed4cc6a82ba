"""The people of an instance and their share-with-team choice (specification, "Shared user
memory").

A user is *registered* when ``agent_users`` names them (migration 0023): a row is added by a
trigger when an API key with that user is created, or by :func:`register_user` when an admin
or the runtime names a person. Registration is what turns the opt-out default on: a registered
user without a stored choice shares with the team; a user id nobody registered keeps the
fail-closed private default. The rule itself lives in
:mod:`memory_platform.features.memories.sharing`.

The choice is a person's: :func:`set_sharing` is called by the CLI (``memory-platform users
share``) and the admin route (``api/routes/users.py``, a non-agent key with the admin scope),
never by an agent tool: the MCP server has no tool for it. Changing it never moves an existing
row: the preference is read at write time only.

Every function runs inside its caller's transaction and commits nothing (``db/units.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import psycopg

from memory_platform.foundation.errors import InvalidInput

USER_ID_MAX_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class User:
    instance_key: str
    user_id: str
    created_at: datetime
    created_by: str
    share_stored: bool | None        # the stored choice; None: none stored (the default applies)
    share_changed_by: str | None     # who stored it

    @property
    def shares_with_team(self) -> bool:
        """The effective choice of a registered user: on unless explicitly turned off."""
        return self.share_stored is not False


def checked_user_id(value: object, field: str) -> str:
    """``value`` as a user id (or instance key): a non-blank string of at most
    ``USER_ID_MAX_CHARS`` printable characters; InvalidInput naming ``field`` otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} is required", details={"field": field})
    if len(value) > USER_ID_MAX_CHARS or _CONTROL.search(value):
        raise InvalidInput(f"{field} must be at most {USER_ID_MAX_CHARS} printable characters",
                           details={"field": field})
    return value


def register_user(conn: psycopg.Connection, instance_key: str, user_id: str, *,
                  created_by: str) -> bool:
    """Register ``user_id`` in the instance; True when the user is new."""
    row = conn.execute(
        "INSERT INTO agent_users (instance_key, user_id, created_by) VALUES (%s, %s, %s)"
        " ON CONFLICT (instance_key, user_id) DO NOTHING RETURNING 1",
        (checked_user_id(instance_key, "instance"), checked_user_id(user_id, "userId"),
         created_by),
    ).fetchone()
    return row is not None


_SELECT = (
    "SELECT u.instance_key, u.user_id, u.created_at, u.created_by,"
    "       p.share_memories_with_team, p.changed_by"
    "  FROM agent_users u"
    "  LEFT JOIN agent_user_preferences p"
    "         ON p.instance_key = u.instance_key AND p.user_id = u.user_id"
    " WHERE u.instance_key = %s")


def list_users(conn: psycopg.Connection, instance_key: str) -> list[User]:
    """The registered users of the instance with their sharing choice, by user id."""
    rows = conn.execute(_SELECT + " ORDER BY u.user_id", (instance_key,)).fetchall()
    return [User(*row) for row in rows]


def get_user(conn: psycopg.Connection, instance_key: str, user_id: str) -> User | None:
    row = conn.execute(_SELECT + " AND u.user_id = %s", (instance_key, user_id)).fetchone()
    return User(*row) if row else None


def set_sharing(conn: psycopg.Connection, instance: str, user: str, share: bool, *,
                changed_by: str) -> User:
    """A person's share-with-team choice for ``user`` (registered here if not yet).

    ``changed_by`` names the person's surface ('cli', 'admin key <prefix>', 'demo'). Only the
    future default changes: existing memories keep their audience."""
    if not isinstance(share, bool):
        raise InvalidInput("share must be true or false", details={"field": "share"})
    if not isinstance(changed_by, str) or not changed_by.strip():
        raise InvalidInput("changed_by is required", details={"field": "changedBy"})
    register_user(conn, instance, user, created_by=changed_by)
    conn.execute(
        "INSERT INTO agent_user_preferences"
        "       (instance_key, user_id, share_memories_with_team, changed_by)"
        " VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (instance_key, user_id) DO UPDATE"
        "   SET share_memories_with_team = EXCLUDED.share_memories_with_team,"
        "       changed_by = EXCLUDED.changed_by",
        (instance, user, share, changed_by),
    )
    found = get_user(conn, instance, user)
    assert found is not None
    return found
