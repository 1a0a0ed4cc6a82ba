"""One `memory-platform dev` per data directory: a second one is refused, naming the first.

Real processes throughout. The running platforms are `dev --no-dagster` over an external
database (the test server's), so each starts in seconds: the lock is taken before anything
else starts, Dagster included, so Dagster adds nothing to what these tests show.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memory_platform.devlock import LOCK_NAME


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(data_dir: Path, database_url: str, api_port: int | None = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("MEMORY_") or name.startswith("MEMORY_TEST_")}
    env.update({"MEMORY_DATA_DIR": str(data_dir), "MEMORY_DATABASE_URL": database_url,
                "MEMORY_EMBEDDING_PROVIDER": "hash",
                "MEMORY_API_PORT": str(api_port or _free_port()),
                "MEMORY_DAGSTER_PORT": str(_free_port())})
    return env


def _dev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A `memory-platform dev` expected to refuse: it must end by itself."""
    return subprocess.run([sys.executable, "-m", "memory_platform", "dev", *args], env=env,
                          capture_output=True, text=True, timeout=60)


@contextmanager
def _running_dev(env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """A `dev --no-dagster` that has said it is ready; stopped by Ctrl-C at the end."""
    with log.open("w") as out:
        dev = subprocess.Popen([sys.executable, "-m", "memory_platform", "dev", "--no-dagster"],
                               env=env, stdout=out, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while "ready in" not in log.read_text():
            assert dev.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield dev
    finally:
        if dev.poll() is None:
            os.killpg(dev.pid, signal.SIGINT)
        assert dev.wait(timeout=60) == 0, log.read_text()


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory, module_database_url: str
          ) -> Iterator[tuple[subprocess.Popen, int, Path]]:
    """A running platform of the module: its process, API port and data directory."""
    root = tmp_path_factory.mktemp("first")
    data_dir, port = root / "a", _free_port()
    with _running_dev(_env(data_dir, module_database_url, port), root / "first.log") as dev:
        yield dev, port, data_dir


def test_a_second_dev_on_the_same_data_directory_is_refused_naming_the_first(
        first, module_database_url: str):
    dev, port, data_dir = first

    second = _dev(_env(data_dir, module_database_url))  # other ports: only the directory is shared

    output = second.stdout + second.stderr
    assert second.returncode == 1, output
    assert f"the data directory {data_dir.resolve()} is in use by another" in output
    assert f"pid {dev.pid}" in output
    assert f"API http://127.0.0.1:{port}" in output
    assert "Dagster UI" not in output.split("in use by", 1)[1].splitlines()[0]  # --no-dagster
    assert "nothing was started" in output
    assert "starting" not in output and "ready" not in output and "migrat" not in output
    assert dev.poll() is None  # the first one goes on


def test_a_dev_on_another_data_directory_starts_beside_a_running_one(
        first, tmp_path: Path, module_database_url: str):
    with _running_dev(_env(tmp_path / "b", module_database_url), tmp_path / "b.log"):
        pass
    assert first[0].poll() is None


def test_the_data_directory_is_free_again_once_its_dev_has_stopped(
        tmp_path: Path, database_url: str):
    env = _env(tmp_path / "a", database_url)
    with _running_dev(env, tmp_path / "first.log"):
        pass
    with _running_dev(env, tmp_path / "again.log"):
        pass
    assert (tmp_path / "a" / LOCK_NAME).read_text() == ""  # a stopped dev names no holder


_HOLD = """
import sys, time
from pathlib import Path
from memory_platform.devlock import claim_data_dir
claim_data_dir(Path(sys.argv[1]), {"API": "http://127.0.0.1:1"})
print("held", flush=True)
time.sleep(120)
"""


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path: Path, database_url: str):
    data_dir = tmp_path / "a"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(data_dir)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    refused = _dev(_env(data_dir, database_url))
    assert refused.returncode == 1 and f"pid {holder.pid}" in refused.stderr
    holder.kill()  # SIGKILL: no clean-up of any kind
    holder.wait(timeout=10)
    assert f'"pid": {holder.pid}' in (data_dir / LOCK_NAME).read_text()  # stale record

    # Past the lock, this one stops at the next check, its taken port: nothing is started.
    with socket.create_server(("127.0.0.1", 0)) as taken:
        after = _dev(_env(data_dir, database_url, taken.getsockname()[1]))

    assert after.returncode == 1
    assert "in use by" not in after.stderr
    assert "(MEMORY_API_PORT) is taken" in after.stderr
