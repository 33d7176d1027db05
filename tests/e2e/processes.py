"""The emulator and `sundial local` as the subprocesses a developer would run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from sundial.local_stack.child import free_port, wait_for_port

STARTUP_SECONDS = 60.0
STOP_SECONDS = 20.0
BANNER = "Sundial is running locally."


def sundial_command() -> list[str]:
    """The installed console script next to this interpreter, as `make local` runs it."""
    script = Path(sys.executable).parent / "sundial"
    return [str(script)] if script.exists() else [sys.executable, "-m", "sundial.local_stack.cli"]


class Process:
    """A child whose output goes to a file: a pipe nobody reads would fill up and block it."""

    def __init__(self, name: str, args: list[str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if "SUNDIAL_STATE_DIR" not in env:
            # A test's stack starts empty and meets no other stack's state directory; one that
            # tests persistence names its directory with --state-dir, which wins.
            env.setdefault("SUNDIAL_EPHEMERAL", "1")
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                [*sundial_command(), *args], stdout=log, stderr=subprocess.STDOUT, env=env
            )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def stop(self, signum: int = signal.SIGTERM) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signum)
        try:
            return self.popen.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(f"{self.name} ignored signal {signum}:\n{self.tail()}") from None

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind, as when a machine dies."""
        self.popen.kill()
        self.popen.wait()


def start_emulator(log_dir: Path) -> tuple[Process, str]:
    port = free_port()
    process = Process("emulator", ["emulator", "--port", str(port)], log_dir)
    wait_for_port("127.0.0.1", port, STARTUP_SECONDS)
    return process, f"http://127.0.0.1:{port}"


def start_local(log_dir: Path, *args: str, name: str = "local") -> tuple[Process, str]:
    """`sundial local` on a free port; returns once GET /health answers 200 and the banner is out."""
    port = free_port()
    process = Process(name, ["local", "--port", str(port), *args], log_dir)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, process)
    deadline = time.monotonic() + STARTUP_SECONDS
    while BANNER not in process.output():
        assert time.monotonic() < deadline, f"{name} printed no banner:\n{process.tail()}"
        time.sleep(0.05)
    return process, url


def wait_healthy(url: str, process: Process, timeout: float = STARTUP_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise AssertionError(f"{process.name} exited with {process.popen.returncode}:\n{process.tail()}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"{process.name} did not answer /health within {timeout:.0f} s:\n{process.tail()}")


def injected_faults(endpoint_url: str) -> dict[str, int]:
    """What a faulty emulator has injected so far, by kind (GET /_sundial/faults)."""
    with urllib.request.urlopen(f"{endpoint_url}/_sundial/faults", timeout=5) as answer:
        counts: dict[str, int] = json.loads(answer.read())["injected"]
        return counts


def emulator_url_in_banner(output: str) -> str:
    match = re.search(r"Emulator:\s+(http://\S+)", output)
    assert match, f"no emulator address in the banner:\n{output}"
    return match.group(1)
