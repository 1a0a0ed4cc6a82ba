"""API keys: high-entropy bearer tokens of one instance, of two kinds (docs/security.md).

* A **user key** acts as its one user (``user_id``). Marked ``agent``, it is an agent's key:
  what it writes is the agent's inference, not the user's own statement.
* A **runtime key** (scope ``runtime``, no user) is the instance's trusted agent runtime: it
  names the acting user per request and may register memberships and sessions.

Besides its kind a key holds the route scopes it was given (``memory:read``,
``memory:write``, ``memory:review``, ``admin``). Reviewing and administering are a person's
rights (:data:`PERSON_SCOPES`): an agent or runtime key never holds them, refused here and by
the database (migration 0028), so an agent cannot approve its own inference.

A token looks like ``mpk_<12 hex public id>_<43 url-safe secret>``. Only the public id (to
find the row) and a SHA-256 of the whole token are stored; the token itself is shown once, at
creation. Lookup is by public id, and the hash comparison is constant-time
(``hmac.compare_digest``), so neither the database index nor the comparison leaks anything
about the secret. :func:`well_formed` decides the shape without the database.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from memory_platform.features.review.people import is_person
from memory_platform.foundation.errors import InvalidInput, NotFound

ROUTE_SCOPES = ("memory:read", "memory:write", "memory:review", "admin")
RUNTIME_SCOPE = "runtime"
# Rights only a person's key (a user key not marked agent) may hold: deciding what agents are
# told, and operating the instance. Migration 0028 restates this as a CHECK on api_keys.
PERSON_SCOPES = ("memory:review", "admin")
SCOPES = (*ROUTE_SCOPES, RUNTIME_SCOPE)

_PREFIX = "mpk_"
_PUBLIC_HEX = 12
_SECRET_BYTES = 32                                # token_urlsafe(32): 43 characters
TOKEN_SHAPE = re.compile(r"mpk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")
PUBLIC_ID_LENGTH = len(_PREFIX) + _PUBLIC_HEX

# Every statement answers the columns of an ApiKey in this order (see _key).


@dataclass(frozen=True)
class ApiKey:
    id: UUID
    instance_key: str
    user_id: str | None                           # None: a runtime key
    name: str
    scopes: tuple[str, ...]
    token_prefix: str
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    agent: bool = False                           # a user key whose writes are inference

    @property
    def runtime(self) -> bool:
        """The instance's trusted runtime (no user of its own)."""
        return RUNTIME_SCOPE in self.scopes

    @property
    def kind(self) -> str:
        """``runtime``, ``agent`` or ``user``."""
        return "runtime" if self.runtime else "agent" if self.agent else "user"

    @property
    def person(self) -> bool:
        """Whether a person holds this key (``review.people.is_person``)."""
        return is_person(self.kind)



@dataclass(frozen=True)
class StoredKey:
    """A live key as stored: the key and the hash its token must match."""

    key: ApiKey
    token_hash: str

    def matches(self, token: str) -> bool:
        return hmac.compare_digest(self.token_hash, _hash(token))


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def well_formed(token: str) -> bool:
    """Whether ``token`` has the exact shape of a token this module makes."""
    return TOKEN_SHAPE.fullmatch(token) is not None


def public_id(token: str) -> str:
    """The public id of a well-formed token (``mpk_<12 hex>``)."""
    return token[:PUBLIC_ID_LENGTH]


def parse_scopes(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The route scopes of a comma-separated list (``runtime`` is a key kind, not one of
    them: create a runtime key with ``runtime=True``)."""
    items = text.split(",") if isinstance(text, str) else list(text)
    scopes = tuple(dict.fromkeys(s.strip() for s in items if s.strip()))
    if RUNTIME_SCOPE in scopes:
        raise InvalidInput("'runtime' is a key kind, not a scope to list: create a runtime "
                           "key with --runtime (and no --user)")
    unknown = [s for s in scopes if s not in ROUTE_SCOPES]
    if not scopes or unknown:
        raise InvalidInput(f"scopes must be a non-empty subset of {', '.join(ROUTE_SCOPES)}"
                           + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return scopes


def create_key(conn: psycopg.Connection, *, instance_key: str, user_id: str | None,
               scopes: tuple[str, ...], name: str = "", runtime: bool = False,
               agent: bool = False) -> tuple[ApiKey, str]:
    """A new key and its token (the only time the token exists outside the caller).

    A user key needs ``user_id``; a runtime key (``runtime``) has none and holds the scope
    ``runtime`` besides ``scopes``; ``agent`` marks a user key as an agent's. Neither an
    agent nor a runtime key may hold :data:`PERSON_SCOPES` (400 ``person_scope``)."""
    user = user_id.strip() if isinstance(user_id, str) else None
    if runtime and user_id is not None:
        raise InvalidInput("a runtime key acts for the user each request names: it has no "
                           "user of its own (drop --user)")
    if runtime and agent:
        raise InvalidInput("--agent marks a user key; a runtime key marks agent writes per "
                           "request (X-Memory-Writer: agent)")
    if not runtime and not user:
        raise InvalidInput("a user key needs a user (--user), or create a runtime key "
                           "with --runtime")
    route_scopes = parse_scopes(list(scopes))
    held = [s for s in route_scopes if s in PERSON_SCOPES]
    if (runtime or agent) and held:
        raise InvalidInput(
            f"{' and '.join(held)}: only a person's key may review or administer, "
            f"{'an agent' if agent else 'a runtime'} key cannot (create the person's own key: "
            "--user U without --agent)",
            details={"field": "scopes", "personOnly": held,
                     "keyKind": "agent" if agent else "runtime"}, code="person_scope")
    granted = (*route_scopes, RUNTIME_SCOPE) if runtime else route_scopes
    public = _PREFIX + secrets.token_hex(_PUBLIC_HEX // 2)
    token = f"{public}_{secrets.token_urlsafe(_SECRET_BYTES)}"
    row = conn.execute(
        """
        INSERT INTO api_keys (instance_key, user_id, name, token_prefix, token_hash, scopes,
                              agent)
        VALUES (%s, %s, %s, %s, %s, %s, %s)
        RETURNING id, instance_key, user_id, name, scopes, agent, token_prefix, created_at,
                  last_used_at, revoked_at
        """,
        (instance_key, user, name, public, _hash(token), list(granted), agent),
    ).fetchone()
    return _key(row), token


def _key(row) -> ApiKey:
    ident, instance, user, name, scopes, agent, prefix, created, used, revoked = row
    return ApiKey(ident, instance, user, name, tuple(scopes), prefix, created, used, revoked,
                  agent)


def live_key(conn: psycopg.Connection, public: str) -> StoredKey | None:
    """The live (not revoked, not expired) key with this public id, or None."""
    row = conn.execute(
        """
        SELECT id, instance_key, user_id, name, scopes, agent, token_prefix, created_at,
               last_used_at, revoked_at, token_hash
          FROM api_keys
         WHERE token_prefix = %s
           AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > now())
        """,
        (public,),
    ).fetchone()
    return None if row is None else StoredKey(_key(row[:10]), row[10])


def touch(conn: psycopg.Connection, key: ApiKey) -> None:
    """Record a use of ``key`` (at most once a minute)."""
    conn.execute(
        "UPDATE api_keys SET last_used_at = now() WHERE id = %s"
        " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
        (key.id,),
    )


def list_keys(conn: psycopg.Connection, instance_key: str | None = None) -> list[ApiKey]:
    rows = conn.execute(
        """
        SELECT id, instance_key, user_id, name, scopes, agent, token_prefix, created_at,
               last_used_at, revoked_at
          FROM api_keys
         WHERE %(instance)s::text IS NULL OR instance_key = %(instance)s
         ORDER BY created_at
        """,
        {"instance": instance_key},
    )
    return [_key(r) for r in rows]


def revoke_key(conn: psycopg.Connection, key_id: str) -> ApiKey:
    try:
        ident = UUID(str(key_id))
    except ValueError as exc:
        raise NotFound(f"no API key {key_id!r}") from exc
    row = conn.execute(
        """
        UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = %s
        RETURNING id, instance_key, user_id, name, scopes, agent, token_prefix, created_at,
                  last_used_at, revoked_at
        """,
        (ident,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no API key {key_id!r}")
    return _key(row)
