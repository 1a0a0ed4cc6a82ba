"""One ``memory-platform dev`` per data directory.

Two platforms over one data directory would share its Dagster home, and Dagster's daemon
is not made for two at once (the second one's heartbeats clash with the first's). So ``dev``
holds an exclusive ``flock`` on ``<data dir>/dev.lock`` for its whole life and a second one
is refused, naming the first. The lock belongs to the open file, not to the file on disk:
the kernel releases it when the holder exits in any way (a ``kill -9`` included), so a
left-over lock file never blocks, and it is never deleted (deleting a lock file lets a third
process lock a new file while the second still holds the old one).

The holder writes who it is into the file (pid, start time, URLs), so the refusal can say
which platform runs there. The file's descriptor is not inherited by the child processes
(Python opens files non-inheritable), so the lock lives exactly as long as ``dev`` itself.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

LOCK_NAME = "dev.lock"


@dataclass(frozen=True)
class Holder:
    """What the running ``dev`` wrote about itself; fields it had not written yet are None."""

    pid: int | None = None
    started_at: str | None = None
    urls: dict[str, str] | None = None

    def describe(self) -> str:
        if self.pid is None:
            return "a process that is still starting (it has not written its pid yet)"
        text = f"pid {self.pid}"
        if self.started_at:
            text += f", started {self.started_at}"
        if self.urls:
            text += " (" + " | ".join(f"{name} {url}" for name, url in self.urls.items()) + ")"
        return text


class DataDirInUse(Exception):
    """Another ``memory-platform dev`` holds the data directory's lock."""

    def __init__(self, data_dir: Path, holder: Holder) -> None:
        super().__init__(f"{data_dir} is in use by {holder.describe()}")
        self.data_dir = data_dir
        self.holder = holder


def lock_path(data_dir: Path) -> Path:
    return data_dir / LOCK_NAME


def _read_holder(fd: int) -> Holder:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 65536):
        raw += chunk
    try:
        data = json.loads(raw)
    except ValueError:
        return Holder()
    if not isinstance(data, dict):
        return Holder()
    pid, started, urls = data.get("pid"), data.get("started_at"), data.get("urls")
    return Holder(pid=pid if isinstance(pid, int) else None,
                  started_at=started if isinstance(started, str) else None,
                  urls={str(k): str(v) for k, v in urls.items()}
                  if isinstance(urls, dict) else None)


class DataDirLock:
    """The held lock of one data directory; :meth:`release` (or process exit) frees it."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # the next reader sees no holder, not the last one
        finally:
            os.close(fd)  # closing the only descriptor releases the flock

    def __enter__(self) -> DataDirLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def claim_data_dir(data_dir: Path, urls: dict[str, str]) -> DataDirLock:
    """Take the data directory for this process (creating it), recording this process's
    pid, start time and ``urls``. Raises :class:`DataDirInUse`, naming the holder, when
    another live process has it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = lock_path(data_dir)
    # Opened without truncating: a refused claim must leave the holder's record intact.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd)
        os.close(fd)
        raise DataDirInUse(data_dir, holder) from None
    except BaseException:
        os.close(fd)
        raise
    record = {"pid": os.getpid(),
              "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "urls": urls}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(record).encode(), 0)
    return DataDirLock(fd, path)
