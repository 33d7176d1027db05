"""A state directory: its format version, its locks, and the checks made before anything in it
changes.

Two locks (flock, released by the kernel when their holder dies, SIGKILL included):

- `emulator.lock`, held by the emulator that writes the tables: two emulators never both write;
- `local.lock`, held by a `sundial local` that started its own emulator on the directory: a second
  one is refused, and a start that gets it knows the workers of the last one are gone, so it may
  hand their attempts on at once (local_stack.recovery).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path

FORMAT_VERSION = 1
FORMAT_FILE = "format.json"
EMULATOR_LOCK = "emulator.lock"
LOCAL_LOCK = "local.lock"


class StateError(Exception):
    """A state directory this process must not use; the message says why and what to do."""


def check(path: Path) -> None:
    """Raises StateError when `path` cannot hold state or holds a newer format. Changes nothing."""
    if not path.exists():
        parent = _existing_parent(path)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StateError(f"state directory {path}: cannot create it in {parent} (permission denied)")
        return
    if not path.is_dir():
        raise StateError(f"state directory {path}: it is not a directory")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise StateError(
            f"state directory {path}: cannot read and write it (permission denied); "
            "fix its permissions, or give another --state-dir"
        )
    found = read_format(path)
    if found is not None and found > FORMAT_VERSION:
        raise StateError(
            f"state directory {path} holds format {found}, written by a newer Sundial; this one reads "
            f"format {FORMAT_VERSION}: upgrade Sundial, or give another --state-dir"
        )


def read_format(path: Path) -> int | None:
    """The format version the directory was written in; None for a new directory."""
    file = path / FORMAT_FILE
    try:
        text = file.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StateError(f"state directory {path}: cannot read {FORMAT_FILE}: {exc.strerror}") from exc
    try:
        version = json.loads(text)["format"]
    except (ValueError, KeyError, TypeError) as exc:
        raise StateError(f"state directory {path}: {FORMAT_FILE} is not one Sundial wrote") from exc
    if not isinstance(version, int):
        raise StateError(f"state directory {path}: {FORMAT_FILE} is not one Sundial wrote")
    return version


def write_format(path: Path) -> None:
    file = path / FORMAT_FILE
    if not file.exists():
        file.write_text(json.dumps({"format": FORMAT_VERSION}) + "\n")


class DirectoryLock:
    """An exclusive flock on one of the directory's lock files, held until `release` or death."""

    def __init__(self, path: Path, name: str) -> None:
        self._file = path / name
        self._fd: int | None = None

    def acquire(self) -> DirectoryLock:
        """Raises StateError when another live process holds it."""
        fd = os.open(self._file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise StateError(f"cannot lock {self._file}: {exc.strerror}") from exc
            raise StateError(
                f"state directory {self._file.parent} is in use by another running Sundial"
                f"{f' (pid {holder})' if holder else ''}: stop it first, or give another --state-dir"
            ) from None
        self._fd = fd
        return self

    def sign(self) -> None:
        """Writes our pid into the lock file, for the message another process gets. Apart from
        acquire, so that a start refused after taking the lock leaves the file as it was."""
        assert self._fd is not None
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor drops the flock
            self._fd = None


def _existing_parent(path: Path) -> Path:
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    return parent
