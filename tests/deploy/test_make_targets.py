"""What each make target runs, read from `make -n -B` (print every recipe, run nothing)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from memory_platform.foundation.settings import PROJECT_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make here")


def recipes(target: str) -> str:
    return subprocess.run(["make", "-n", "-B", target], cwd=PROJECT_ROOT, check=True,
                          capture_output=True, text=True).stdout


def test_make_dev_installs_no_browser():
    """A laptop without apt or root runs the platform: only the browser tests need Chromium."""
    dev = recipes("dev")
    assert "pip install" in dev and "memory-platform dev" in dev
    assert "install-browser" not in dev


def test_make_test_installs_the_browser_before_the_suite():
    lines = recipes("test").splitlines()
    browser = next(i for i, line in enumerate(lines) if "scripts/install-browser" in line)
    suite = next(i for i, line in enumerate(lines) if "pytest" in line)
    assert browser < suite


def test_install_browser_carries_on_where_it_cannot_install(tmp_path):
    """No Chromium and no apt-get: a clear message and exit 0 (the browser tests then skip).
    The script runs as a copy that looks for Chromium under ``tmp_path`` instead of /usr/bin
    (this machine may have one), with a PATH holding nothing but bash."""
    script = (PROJECT_ROOT / "scripts" / "install-browser").read_text()
    copy = tmp_path / "install-browser"
    copy.write_text(script.replace("/usr/bin/chromium", str(tmp_path / "chromium")))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    done = subprocess.run([str(bin_dir / "bash"), str(copy)], capture_output=True, text=True,
                          env={"PATH": str(bin_dir)})
    assert done.returncode == 0, done.stderr
    assert "no apt-get" in done.stderr
    assert "browser tests (tests/browser) will be skipped" in done.stderr
    assert "MEMORY_TEST_CHROMIUM" in done.stderr
