"""`memory-platform dev` brings everything up and one Ctrl-C takes everything down."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil

from memory_platform.db import embedded


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except OSError:
        return None


def test_dev_serves_both_ports_and_ctrl_c_leaves_no_process_behind(tmp_path: Path):
    api_port, dagster_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "MEMORY_DATA_DIR": str(tmp_path / "state"),
        "MEMORY_API_PORT": str(api_port),
        "MEMORY_DAGSTER_PORT": str(dagster_port),
    }
    env.pop("MEMORY_DATABASE_URL", None)
    log = (tmp_path / "dev.log").open("w+")
    dev = subprocess.Popen([sys.executable, "-m", "memory_platform", "dev"], env=env,
                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    descendants: set[psutil.Process] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "ready in" not in Path(log.name).read_text():
            assert dev.poll() is None, Path(log.name).read_text()
            time.sleep(0.5)
        assert _get(f"http://127.0.0.1:{api_port}/healthz") == 200
        assert _get(f"http://127.0.0.1:{dagster_port}/server_info") == 200
        descendants = set(psutil.Process(dev.pid).children(recursive=True))
        assert len(descendants) >= 2
    finally:
        os.killpg(dev.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        exit_code = dev.wait(timeout=60)
    output = Path(log.name).read_text()
    assert exit_code == 0, output
    assert "embedded PostgreSQL stopped" in output
    _, alive = psutil.wait_procs(list(descendants), timeout=10)
    assert alive == []
    pgdata = tmp_path / "state" / "pgdata"
    assert embedded.read_server_info(pgdata.resolve()) is None
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
