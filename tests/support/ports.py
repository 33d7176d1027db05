"""Ports for the processes the tests start, and the wait until one listens."""

from __future__ import annotations

import socket
import subprocess
import time


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now: another process could take it before the one it is meant
    for binds it, as a test that starts processes side by side must allow for."""
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
