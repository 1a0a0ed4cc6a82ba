"""No embedded server outlives its last user by more than a few seconds, however that user
ended: SIGTERM (the handler releases), SIGKILL (the reaper notices), uvicorn's restore-and-
re-raise of SIGTERM (``memory-platform api``). Every test runs its own server on a data
directory of this module (never the session's server) and leaves it stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from memory_platform.foundation.db import embedded
from tests.conftest import server_scratch_dir

GONE_WITHIN = 10.0  # seconds; the reaper polls every second, pg_ctl stop -m fast takes < 1 s

_HOLDER = """
import faulthandler, signal, sys, time
from pathlib import Path
from memory_platform.foundation.db import embedded
faulthandler.register(signal.SIGUSR1)  # the test's diagnosis when a signal is not handled
info = embedded.ensure_server(Path(sys.argv[1]))
print(info.pid, flush=True)
sys.stdin.readline()  # a line (or EOF): exit normally
"""

# A uvicorn server whose app factory takes the server, as `memory-platform api` does (the
# API's factory reaches the database through the same ensure_server).
_UVICORN = """
import sys
from pathlib import Path
import uvicorn
from memory_platform.foundation.db import embedded

def factory():
    info = embedded.ensure_server(Path(sys.argv[1]))
    print(info.pid, flush=True)
    async def app(scope, receive, send):
        pass
    return app

embedded.release_on_signals()  # what `memory-platform api` does before uvicorn.run
uvicorn.run(factory, factory=True, host="127.0.0.1", port=0, lifespan="off",
            log_level="warning")
"""


@pytest.fixture(scope="module")
def pgdata(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    parent = server_scratch_dir(tmp_path_factory, "lifetime")
    path = parent / "pgdata"
    yield path
    embedded.destroy(path)
    shutil.rmtree(parent, ignore_errors=True)


def _default_signals() -> None:
    """A user starts as a service manager starts a process: SIGTERM and SIGHUP at their
    defaults. An ignored signal is inherited through exec, and the pytest worker may ignore
    SIGTERM by then: Dagster (dagster._utils.interrupts) maps SIGTERM to SIGINT's handler,
    which an xdist worker ignores."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class User:
    """Another process of the platform using the server of ``pgdata``."""

    def __init__(self, pgdata: Path, script: str = _HOLDER) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", script, str(pgdata)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_default_signals)
        line = self.proc.stdout.readline()
        assert line.strip().isdigit(), f"user failed to start the server: {line!r}"
        self.server_pid = int(line)

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)
        try:
            self.proc.wait(timeout=30)  # reaped: no zombie keeps its pid "alive"
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # faulthandler: where it hangs
            time.sleep(1)
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"the user did not end within 30 s of signal {signum}:\n{err}")

    def exit(self) -> None:
        self.proc.communicate("\n", timeout=60)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def users(pgdata: Path) -> Iterator[list[User]]:
    started: list[User] = []
    yield started
    for user in started:
        user.cleanup()
    embedded.stop_server(pgdata)  # whatever a failed test left running


def _registered(pgdata: Path) -> set[int]:
    users_dir = embedded.users_dir_of(pgdata)
    return {int(e.name) for e in users_dir.glob("*")} if users_dir.exists() else set()


def _seconds_until_gone(pgdata: Path, server_pid: int, timeout: float = GONE_WITHIN) -> float:
    """Seconds until the postmaster is gone and its socket closed; fails after ``timeout``."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if (not psutil.pid_exists(server_pid)
                and not list(pgdata.glob(".s.PGSQL.*"))
                and embedded.read_server_info(pgdata) is None):
            return time.monotonic() - started
        time.sleep(0.05)
    pytest.fail(f"the server (pid {server_pid}) still runs {timeout} s after its last user "
                "ended")


def test_sigterm_of_the_last_user_stops_the_server_at_once(pgdata, users):
    user = User(pgdata)
    users.append(user)
    assert _registered(pgdata) == {user.proc.pid}

    user.signal(signal.SIGTERM)

    assert user.proc.returncode == -signal.SIGTERM  # it still dies of the signal
    elapsed = _seconds_until_gone(pgdata, user.server_pid)
    print(f"SIGTERM: server gone {elapsed:.2f} s after its last user")
    assert _registered(pgdata) == set()
    assert _reaper_verdict(pgdata).endswith("server gone"), "the handler stopped it"


def test_sigkill_of_the_last_user_stops_the_server_via_the_reaper(pgdata, users):
    user = User(pgdata)
    users.append(user)

    user.signal(signal.SIGKILL)

    elapsed = _seconds_until_gone(pgdata, user.server_pid)
    print(f"SIGKILL: server gone {elapsed:.2f} s after its last user")
    assert _registered(pgdata) == set()
    deadline = time.monotonic() + 5
    while (reapers := _reapers_of(pgdata)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not reapers, "the reaper exits once its server is gone"
    assert _reaper_verdict(pgdata).endswith("no live user left: server stopped")


def _reaper_verdict(pgdata: Path) -> str:
    """The last line of the reaper's log once it has exited: who stopped the server."""
    deadline = time.monotonic() + 5
    while _reapers_of(pgdata) and time.monotonic() < deadline:
        time.sleep(0.1)
    log = pgdata.parent / f".{pgdata.name}.reaper.log"
    return log.read_text().strip().splitlines()[-1]


def _reapers_of(pgdata: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if "memory_platform.foundation.db.reaper" in cmdline and str(pgdata) in cmdline:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except psutil.Error:
                pass
    return found


def test_a_killed_user_leaves_the_server_to_the_other_until_it_exits(pgdata, users):
    first = User(pgdata)
    users.append(first)
    second = User(pgdata)
    users.append(second)
    assert second.server_pid == first.server_pid
    assert len(_reapers_of(pgdata)) == 1, "one reaper per server"

    first.signal(signal.SIGKILL)
    time.sleep(3)  # three reaper polls
    info = embedded.read_server_info(pgdata)
    assert info is not None and info.pid == first.server_pid
    assert _registered(pgdata) == {second.proc.pid}

    second.exit()
    elapsed = _seconds_until_gone(pgdata, first.server_pid)
    print(f"second user exited normally: server gone {elapsed:.2f} s later")


def test_a_sigtermed_user_leaves_the_server_to_the_other(pgdata, users):
    first = User(pgdata)
    users.append(first)
    second = User(pgdata)
    users.append(second)

    first.signal(signal.SIGTERM)
    time.sleep(1.5)
    assert embedded.read_server_info(pgdata) is not None
    assert _registered(pgdata) == {second.proc.pid}

    second.signal(signal.SIGKILL)
    _seconds_until_gone(pgdata, first.server_pid)


def test_uvicorn_stopped_with_sigterm_releases_the_server(pgdata, users):
    """`memory-platform api` runs uvicorn, which restores the SIGTERM handler it found after
    its graceful shutdown and raises the signal again: without release_on_signals() before
    uvicorn.run the process died of it without running atexit, leaving the server up."""
    user = User(pgdata, _UVICORN)
    users.append(user)
    time.sleep(0.5)  # uvicorn is serving

    user.signal(signal.SIGTERM)

    elapsed = _seconds_until_gone(pgdata, user.server_pid)
    print(f"uvicorn SIGTERM: server gone {elapsed:.2f} s after")
    assert _registered(pgdata) == set()
    assert _reaper_verdict(pgdata).endswith("server gone"), "the API process stopped it"


def test_a_reused_pid_of_a_dead_user_does_not_keep_the_server_up(pgdata, tmp_path):
    """A registry entry carries its process's start time: another process that got the
    dead user's pid is no user."""
    users_dir = tmp_path / "users"
    users_dir.mkdir()
    (users_dir / str(os.getpid())).write_text("12345.00")  # this pid, another start time
    (users_dir / "1").write_text("")  # old-style entry of a live pid: counted
    assert embedded.live_users(users_dir) == [1]
    assert not (users_dir / str(os.getpid())).exists()
