"""The emulator as a child process of `sundial local`: started on a port it picks, stopped on exit.

The child binds port 0 and writes the port it got to a pipe once it serves, so no other process can
take the port between a choice and the bind, and nothing else listening there is taken for it.

It runs in its own session so that Ctrl-C in the terminal reaches `sundial local` only, which then
drains its workers before it stops the emulator they still write to. On Linux the child also asks to
be terminated when its parent dies, so a SIGKILLed local stack leaves no orphan emulator behind.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
import time

# A child that fails exits, which the wait notices at once; this bounds one that hangs, and is
# generous since a restore of 100,000 jobs takes seconds, and more on a loaded machine.
READY_TIMEOUT_SECONDS = 300.0
STOP_TIMEOUT_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now, for the tests and benches that start a process on it:
    another process can take it before that one binds it (the local stack's emulator picks its own)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(host: str, port: int, timeout: float, alive: subprocess.Popen[bytes] | None = None) -> None:
    """Returns once something accepts connections on host:port. Raises TimeoutError or RuntimeError
    (the process that should have opened it exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and alive.poll() is not None:
            raise RuntimeError(f"the process exited with code {alive.returncode} before it listened")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listened on {host}:{port} within {timeout:.0f} s")


def _port_told(ready: int, process: subprocess.Popen[bytes], timeout: float) -> int:
    """The port the child writes to `ready` once it serves. Raises RuntimeError when it exits first,
    TimeoutError when it says nothing in time."""
    deadline = time.monotonic() + timeout
    told = b""
    while not told.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the emulator did not start serving within {timeout:.0f} s")
        if not select.select([ready], [], [], min(left, 0.5))[0]:
            continue
        chunk = os.read(ready, 64)
        if not chunk:
            code = process.wait(STOP_TIMEOUT_SECONDS)
            raise RuntimeError(f"the emulator exited with code {code} before it listened")
        told += chunk
    return int(told)


def tell_port(ready_fd: int, port: int) -> None:
    """The child's side: the port it serves on, to the parent waiting in EmulatorProcess.start."""
    with os.fdopen(ready_fd, "w") as ready:
        ready.write(f"{port}\n")


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EmulatorProcess:
    """`sundial emulator --port 0` as a child process, which tells its port through a pipe."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the emulator child has no port before start() has returned")
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmulatorProcess:
        """Starts the child and waits until it serves. Raises TimeoutError or RuntimeError."""
        ready, told = os.pipe()
        command = [sys.executable, "-m", "sundial.local_stack.cli", "emulator", "--port", "0"]
        try:
            # preexec_fn only makes one prctl call, and the local stack starts its child before any thread.
            self._process = subprocess.Popen(
                [*command, "--ready-fd", str(told)],
                start_new_session=True,
                preexec_fn=_die_with_parent,  # noqa: PLW1509
                pass_fds=(told,),
            )
        finally:
            os.close(told)  # the child's copy alone: its exit ends the pipe
        try:
            self.port = _port_told(ready, self._process, READY_TIMEOUT_SECONDS)
        except BaseException:  # a signal that interrupts the wait too: the child must not outlive it
            self.stop()
            raise
        finally:
            os.close(ready)
        return self

    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
