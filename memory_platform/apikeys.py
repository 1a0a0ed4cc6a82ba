"""Developer API keys: high-entropy bearer tokens bound to one user and instance.

A token looks like ``mpk_<public id>_<secret>``. Only the public id (to find the row) and a
SHA-256 of the whole token are stored; the token itself is shown once, at creation. Lookup
is by public id, and the hash comparison is constant-time (``hmac.compare_digest``), so
neither the database index nor the comparison leaks anything about the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import psycopg

from memory_platform.errors import InvalidInput, NotFound

SCOPES = ("memory:read", "memory:write", "admin")
_PREFIX = "mpk_"


@dataclass(frozen=True)
class ApiKey:
    id: UUID
    instance_key: str
    user_id: str
    name: str
    scopes: tuple[str, ...]
    token_prefix: str
    created_at: datetime
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def parse_scopes(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = text.split(",") if isinstance(text, str) else list(text)
    scopes = tuple(dict.fromkeys(s.strip() for s in items if s.strip()))
    unknown = [s for s in scopes if s not in SCOPES]
    if not scopes or unknown:
        raise InvalidInput(f"scopes must be a non-empty subset of {', '.join(SCOPES)}"
                           + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return scopes


def create_key(conn: psycopg.Connection, *, instance_key: str, user_id: str,
               scopes: tuple[str, ...], name: str = "") -> tuple[ApiKey, str]:
    """A new key and its token (the only time the token exists outside the caller)."""
    if not user_id or not user_id.strip():
        raise InvalidInput("an API key needs a user")
    public = _PREFIX + secrets.token_hex(6)
    token = f"{public}_{secrets.token_urlsafe(32)}"
    row = conn.execute(
        """
        INSERT INTO api_keys (instance_key, user_id, name, token_prefix, token_hash, scopes)
        VALUES (%s, %s, %s, %s, %s, %s)
        RETURNING id, instance_key, user_id, name, scopes, token_prefix, created_at,
                  last_used_at, revoked_at
        """,
        (instance_key, user_id.strip(), name, public, _hash(token), list(scopes)),
    ).fetchone()
    return _key(row), token


def _key(row) -> ApiKey:
    ident, instance, user, name, scopes, prefix, created, used, revoked = row
    return ApiKey(ident, instance, user, name, tuple(scopes), prefix, created, used, revoked)


def verify_token(conn: psycopg.Connection, token: str) -> ApiKey | None:
    """The live key this token belongs to, or None (unknown, malformed, revoked, expired)."""
    if not token.startswith(_PREFIX) or token.count("_") < 2 or len(token) > 200:
        return None
    public = token[: token.index("_", len(_PREFIX))]
    row = conn.execute(
        """
        SELECT id, instance_key, user_id, name, scopes, token_prefix, created_at,
               last_used_at, revoked_at, token_hash
          FROM api_keys
         WHERE token_prefix = %s
           AND revoked_at IS NULL
           AND (expires_at IS NULL OR expires_at > now())
        """,
        (public,),
    ).fetchone()
    if row is None or not hmac.compare_digest(row[9], _hash(token)):
        return None
    conn.execute(
        "UPDATE api_keys SET last_used_at = now() WHERE id = %s"
        " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
        (row[0],),
    )
    return _key(row[:9])


def list_keys(conn: psycopg.Connection, instance_key: str | None = None) -> list[ApiKey]:
    rows = conn.execute(
        """
        SELECT id, instance_key, user_id, name, scopes, token_prefix, created_at,
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
        RETURNING id, instance_key, user_id, name, scopes, token_prefix, created_at,
                  last_used_at, revoked_at
        """,
        (ident,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no API key {key_id!r}")
    return _key(row)
