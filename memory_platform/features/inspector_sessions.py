"""Inspector sign-ins: server-side sessions of an API key (migration 0029).

A sign-in verifies an API key once and issues a random session secret (256 bits); the
browser's cookie holds only that secret, the table only its SHA-256. The secret is not an API
key (it lacks the ``mpk_`` shape the bearer check demands), so a leaked cookie opens no REST
route, and it dies with its session: at sign-out (revoked), at ``expires_at``, or when its key
is revoked, expired or deleted (every lookup joins ``api_keys``). A lookup is by the hash
through a unique index: comparing hashes of a high-entropy secret leaks nothing of it, so no
constant-time comparison in Python is needed. ``last_seen_at`` is written at most once a
minute.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

import psycopg

from memory_platform.features.apikeys import ApiKey

_SECRET_BYTES = 32                      # token_urlsafe(32): 43 characters
SECRET_LENGTH = 43
_SECRET_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True)
class InspectorSession:
    id: UUID
    key: ApiKey
    expires_at: datetime


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def well_formed(secret: str) -> bool:
    """Whether ``secret`` has the shape of a session secret (decided without the database)."""
    return len(secret) == SECRET_LENGTH and set(secret) <= _SECRET_ALPHABET


def start(conn: psycopg.Connection, key: ApiKey, lifetime: timedelta) -> tuple[str, datetime]:
    """A new session of ``key`` for ``lifetime``: its secret (shown to the browser once) and
    when it expires. The key's dead sessions are removed on the way."""
    conn.execute("DELETE FROM inspector_sessions WHERE instance_key = %s AND key_id = %s"
                 " AND (revoked_at IS NOT NULL OR expires_at <= now())",
                 (key.instance_key, key.id))
    secret = secrets.token_urlsafe(_SECRET_BYTES)
    expires = conn.execute(
        "INSERT INTO inspector_sessions (instance_key, key_id, secret_hash, expires_at)"
        " VALUES (%s, %s, %s, now() + %s) RETURNING expires_at",
        (key.instance_key, key.id, secret_hash(secret), lifetime)).fetchone()[0]
    return secret, expires


def live(conn: psycopg.Connection, secret: str) -> InspectorSession | None:
    """The live session of ``secret`` and its live key, or None (unknown, revoked, expired,
    or its key revoked or expired)."""
    if not well_formed(secret):
        return None
    row = conn.execute(
        """
        SELECT s.id, s.expires_at, s.last_seen_at < now() - interval '1 minute',
               k.id, k.instance_key, k.user_id, k.name, k.scopes, k.token_prefix,
               k.created_at, k.last_used_at, k.revoked_at, k.agent
          FROM inspector_sessions s
          JOIN api_keys k ON k.instance_key = s.instance_key AND k.id = s.key_id
         WHERE s.secret_hash = %s
           AND s.revoked_at IS NULL AND s.expires_at > now()
           AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
        """, (secret_hash(secret),)).fetchone()
    if row is None:
        return None
    session_id, expires, stale = row[0], row[1], row[2]
    ident, instance, user, name, scopes, prefix, created, used, revoked, agent = row[3:]
    if stale:
        conn.execute("UPDATE inspector_sessions SET last_seen_at = now() WHERE id = %s",
                     (session_id,))
    key = ApiKey(ident, instance, user, name, tuple(scopes), prefix, created, used, revoked,
                 agent)
    return InspectorSession(session_id, key, expires)


def revoke(conn: psycopg.Connection, secret: str) -> bool:
    """End the session of ``secret`` (sign-out); whether a live one was ended."""
    if not well_formed(secret):
        return False
    return conn.execute(
        "UPDATE inspector_sessions SET revoked_at = now()"
        " WHERE secret_hash = %s AND revoked_at IS NULL", (secret_hash(secret),)).rowcount > 0
