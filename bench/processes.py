"""Every child process of the bench runs in a process group of its own, and is ended with its whole
group when the bench ends, fails, or is told to stop (SIGTERM, Ctrl-C): a child left behind, such as
an emulator that ignored its SIGTERM, would hold a core and a port through every later part.

A child gets SIGTERM first, so that it stops as it should (a local stack stops its emulator); its
group gets SIGKILL after a grace period, and again at the end for whatever in it outlived its leader.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

GRACE_SECONDS = 10.0
POLL_SECONDS = 0.05
_children: list[subprocess.Popen[bytes]] = []
_lock = threading.Lock()


def spawn(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """subprocess.Popen in a new session (so a group of its own), ended with the bench."""
    process: subprocess.Popen[bytes] = subprocess.Popen(args, start_new_session=True, **kwargs)
    adopt(process)
    return process


def adopt(process: subprocess.Popen[Any]) -> None:
    """A child started elsewhere with start_new_session=True, to be ended with the bench."""
    with _lock:
        _children.append(process)


def end(process: subprocess.Popen[Any], grace: float = GRACE_SECONDS) -> int:
    """SIGTERM to the child, SIGKILL to its group after `grace` s (or at once if it exited, for
    what it left in its group). Returns its exit status."""
    if process.returncode is None:
        # Signalled and waited for without reaping it: while it is unreaped, its pid (the group's
        # id) cannot be given to another process, so the SIGKILL below reaches only its group.
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        _exited(process.pid, grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    status = process.wait()
    with _lock:
        if process in _children:
            _children.remove(process)
    return status


def _exited(pid: int, timeout: float) -> bool:
    """Whether the child exited within `timeout` s, leaving it to be reaped."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # reaped already
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_SECONDS)


def end_all(grace: float = GRACE_SECONDS) -> None:
    with _lock:
        children = list(_children)
    for process in children:
        end(process, grace)


def install() -> None:
    """Ends every child at exit, and turns SIGTERM into an exit that runs every `finally` on the way
    (Ctrl-C does so already, as KeyboardInterrupt)."""
    atexit.register(end_all)
    signal.signal(signal.SIGTERM, _exit_on_signal)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_DFL)  # a second one ends the bench at once
    raise SystemExit(128 + signum)
