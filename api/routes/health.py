"""Liveness and readiness (public).

Both run on Starlette's thread pool rather than the database threads, on one database
connection of their own (:class:`ProbeConnection`), not one of the request pool: a probe is
not queued behind requests waiting for threads or pool connections, so a saturated pool
(every connection busy with slow searches) does not make /healthz wait or fail. The
connection is opened on the first probe, reopened after a failure, limited to 5 s per
connect and per statement; the lifespan opens and closes it with the app.

Unauthenticated callers learn only a reason code (``database_unavailable``,
``migrations_pending``, ``migrations_changed``, ``migrations_invalid``); the exception text
(host, user, migration names) goes to the server log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from api.metrics import metrics_page
from api.operation import ROOT, Operation, Section
from memory_platform.foundation.db import migrations

log = logging.getLogger("api.health")

PROBE_TIMEOUT_SECONDS = 5


class ProbeConnection:
    """The probes' one connection to the database of ``conninfo`` (serialised by a lock)."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self.lock = threading.Lock()
        self.conn: psycopg.Connection | None = None

    def run(self, check: Callable[[psycopg.Connection], None]) -> None:
        """``check(conn)`` on the probe connection (opened when needed); a failure closes the
        connection, so the next probe connects afresh, and is raised."""
        with self.lock:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = psycopg.connect(self.conninfo, autocommit=True,
                                                connect_timeout=PROBE_TIMEOUT_SECONDS)
                    self.conn.execute("SELECT set_config('statement_timeout', %s, false)",
                                      (f"{PROBE_TIMEOUT_SECONDS}s",))
                check(self.conn)
            except Exception:
                self.close()
                raise

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def _ping(conn: psycopg.Connection) -> None:
    conn.execute("SELECT 1")


def _reason(exc: Exception) -> str:
    """The public reason code of a failed probe."""
    if isinstance(exc, migrations.PendingMigrations):
        return "migrations_pending"
    if isinstance(exc, migrations.ChecksumMismatch):
        return "migrations_changed"
    if isinstance(exc, migrations.MigrationError):
        return "migrations_invalid"
    return "database_unavailable"


async def healthz(request: Request) -> JSONResponse:
    """The process serves and the database answers."""
    try:
        await run_in_threadpool(request.state.probe.run, _ping)
    except Exception as exc:
        log.warning("healthz: database unavailable: %s: %s", type(exc).__name__, exc)
        return JSONResponse({"status": "unavailable", "reason": "database_unavailable"},
                            status_code=503)
    return JSONResponse({"status": "ok"})




async def readyz(request: Request) -> JSONResponse:
    """Database reachable and the schema exactly at the code's migrations."""
    try:
        directory = request.state.settings.migrations_dir
        await run_in_threadpool(request.state.probe.run,
                                lambda conn: migrations.ensure_current(conn, directory))
    except (psycopg.Error, migrations.MigrationError, TimeoutError) as exc:
        reason = _reason(exc)
        log.warning("readyz: %s: %s: %s", reason, type(exc).__name__, exc)
        return JSONResponse({"status": "not_ready", "reason": reason}, status_code=503)
    return JSONResponse({"status": "ready"})


ROUTES = (Section(ROOT, (
    Operation("GET", "/healthz", healthz, "Liveness (database round trip)"),
    Operation("GET", "/readyz", readyz, "Readiness (database and migrations current)"),
    Operation("GET", "/metrics", metrics_page, "Prometheus metrics"),
)),)
