"""The watchdog of one embedded server: ``python -m memory_platform.foundation.db.reaper PGDATA
PID``.

Spawned (detached, in a session of its own) by the process that started the server of
``PGDATA`` whose postmaster has pid ``PID`` (:func:`memory_platform.foundation.db.embedded.ensure`).
Every second it looks at the user registry; when no live process is registered any more
(the last user was killed with SIGKILL, or died in a way that ran no clean-up), it takes
the start lock, looks again and stops the server (``pg_ctl stop -m fast``). It exits as soon
as the server it watches is gone, whoever stopped it; a server started later gets a reaper
of its own.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from memory_platform.foundation.db import embedded

POLL_SECONDS = 1.0


def _watched_server_runs(pgdata: Path, server_pid: int) -> bool:
    info = embedded.read_server_info(pgdata)
    return info is not None and info.pid == server_pid


def watch(pgdata: Path, server_pid: int, poll_seconds: float = POLL_SECONDS) -> str:
    """Watch until the server is gone; answer why the watch ended."""
    users_dir = embedded.users_dir_of(pgdata)
    while True:
        if not _watched_server_runs(pgdata, server_pid):
            return "server gone"
        if not embedded.live_users(users_dir):
            with embedded._start_lock(pgdata):
                if not _watched_server_runs(pgdata, server_pid):
                    return "server gone"
                if not embedded.live_users(users_dir):
                    embedded.stop_server(pgdata)
                    return "no live user left: server stopped"
        time.sleep(poll_seconds)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m memory_platform.foundation.db.reaper PGDATA POSTMASTER_PID",
              file=sys.stderr)
        return 2
    # A terminal's Ctrl-C or a hang-up is meant for the platform's processes, not for this.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    pgdata, server_pid = Path(argv[0]), int(argv[1])
    reason = watch(pgdata, server_pid)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} reaper of {pgdata} (postmaster {server_pid}):"
          f" {reason}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
