"""`memory-platform dev` brings everything up and one Ctrl-C takes everything down."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil

from memory_platform.devserver import port_conflicts
from memory_platform.foundation.db import embedded
from memory_platform.foundation.settings import Settings


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


def test_a_taken_port_is_named_with_its_setting_and_nothing_starts(tmp_path: Path):
    with socket.create_server(("127.0.0.1", 0)) as holder:  # another program's server
        taken = holder.getsockname()[1]
        env = {**os.environ, "MEMORY_DATA_DIR": str(tmp_path / "state"),
               "MEMORY_API_PORT": str(taken), "MEMORY_DAGSTER_PORT": str(_free_port())}
        env.pop("MEMORY_DATABASE_URL", None)
        dev = subprocess.run([sys.executable, "-m", "memory_platform", "dev"], env=env,
                             capture_output=True, text=True, timeout=60)
        output = dev.stdout + dev.stderr
        assert dev.returncode == 1, output
        assert f"the API port 127.0.0.1:{taken} (MEMORY_API_PORT) is taken" in output
        assert "MEMORY_API_PORT=" in output.split("is taken", 1)[1]
        assert "nothing was started" in output
        assert "ready" not in output and "starting" not in output
        assert not (tmp_path / "state" / "pgdata").exists()
        socket.create_connection(("127.0.0.1", taken), timeout=2).close()  # still serves


def _answering(body: dict) -> type[BaseHTTPRequestHandler]:
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args) -> None:
            pass

    return Answer


@contextmanager
def _serving(body: dict) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _answering(body))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_running_platform_on_both_ports_is_recognised_and_other_ports_are_offered():
    with _serving({"status": "ok"}) as api, _serving({"dagster_version": "1"}) as dagster:
        settings = Settings(api_port=api, dagster_port=dagster,
                            _env_file=None)  # type: ignore[call-arg]
        lines = port_conflicts(settings)

    text = "\n".join(lines)
    assert f"a memory-platform API answers http://127.0.0.1:{api}/healthz" in text
    assert f"a memory-platform Dagster UI answers http://127.0.0.1:{dagster}/server_info" in text
    assert "another `memory-platform dev` (or `api`) seems to be running" in text
    offered = dict(choice.split("=") for choice in lines[-2].split()[:2])
    assert set(offered) == {"MEMORY_API_PORT", "MEMORY_DAGSTER_PORT"}
    assert not {int(offered["MEMORY_API_PORT"]), int(offered["MEMORY_DAGSTER_PORT"])} & {
        api, dagster}


def test_free_ports_raise_no_conflict_and_no_dagster_checks_only_the_api():
    with _serving({"dagster_version": "1"}) as dagster:
        settings = Settings(api_port=_free_port(), dagster_port=dagster,
                            _env_file=None)  # type: ignore[call-arg]
        assert port_conflicts(settings, with_dagster=False) == []
        assert "MEMORY_DAGSTER_PORT" in port_conflicts(settings)[0]
