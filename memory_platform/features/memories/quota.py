"""The storage quota: how much text a user, and an instance, may hold.

The counters are kept by the database (migration 0030: triggers on ``agent_memories`` and
``agent_context_messages`` add a write's bytes and give a deletion's back, in the writing
transaction). :func:`check_quota` runs in the write's own transaction *after* its rows are
in, so it reads the usage including this write: a write that takes the user or the instance
past its limit raises :class:`~memory_platform.foundation.errors.QuotaExceeded` and its transaction
rolls back, leaving nothing stored. The user's counter row stays locked by the write until
it commits, so concurrent writes of one user are checked one after the other and cannot
pass the user limit together; the instance's usage is the sum of its users' rows as they
are committed, so concurrent writes of *different* users may overshoot the instance limit by
what is in flight at that moment (bounded by the admission cap times the largest body).

Enforced on the write paths a key reaches: ``POST /api/v1/memory`` (``store_memory`` with
``enforce_quota``), the bulk import (every batch), and session appends
(``sessions/items.py``). What maintenance derives from stored text is counted but never
refused (it would only fail and retry).
"""

from __future__ import annotations

import psycopg

from memory_platform.foundation.errors import QuotaExceeded
from memory_platform.foundation.settings import Settings

_USAGE = """
    SELECT coalesce(sum(bytes), 0)::bigint,
           coalesce(sum(bytes) FILTER (WHERE user_id = %(user)s), 0)::bigint
      FROM agent_storage_usage
     WHERE instance_key = %(instance)s
"""


def usage(conn: psycopg.Connection, instance_key: str,
          user_id: str | None) -> tuple[int, int]:
    """(the instance's stored bytes, the user's), as this transaction sees them."""
    instance, user = conn.execute(_USAGE, {"instance": instance_key,
                                           "user": user_id or ""}).fetchone()
    return int(instance), int(user)


def check_quota(conn: psycopg.Connection, settings: Settings, instance_key: str,
                users: str | None | set[str | None]) -> None:
    """QuotaExceeded when the instance, or one of ``users`` (a write's users; None for a
    write without a user, which has only the instance limit), is past its limit, counting
    what this transaction wrote. Call inside the write's transaction, after its rows."""
    user_limit, instance_limit = settings.quota_user_bytes, settings.quota_instance_bytes
    if not user_limit and not instance_limit:
        return
    named = users if isinstance(users, set) else {users}
    for user_id in sorted((u for u in named if u), key=str) or [None]:
        instance_used, user_used = usage(conn, instance_key, user_id)
        if user_limit and user_id and user_used > user_limit:
            raise _exceeded("user", user_id, user_used, user_limit, "MEMORY_QUOTA_USER_BYTES")
        if instance_limit and instance_used > instance_limit:
            raise _exceeded("instance", instance_key, instance_used, instance_limit,
                            "MEMORY_QUOTA_INSTANCE_BYTES")


def _exceeded(scope: str, name: str, used: int, limit: int, setting: str) -> QuotaExceeded:
    subject = f"user {name!r}" if scope == "user" else f"instance {name!r}"
    return QuotaExceeded(
        f"storage quota exceeded: this write would bring the stored text of {subject} to "
        f"{used:,} bytes, over its limit of {limit:,} bytes ({setting}); nothing was "
        "stored. Free space by erasing or deleting data, or ask the operator for more.",
        details={"scope": scope, "limitBytes": limit, "usedBytesWithWrite": used,
                 "setting": setting})
