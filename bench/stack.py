"""`sundial local` as a developer runs it, and the jobs' http target: a listener in this process that
timestamps each call the moment its request arrives."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3

from bench import processes
from sundial.local_stack.child import free_port
from sundial.local_stack.environment import use_emulator

STARTUP_SECONDS = 90.0
STOP_SECONDS = 20.0
BANNER = "Sundial is running locally."
# One at a time: the local gateway runs the api handler in threads, and its router keeps per-request
# state on a shared object (two concurrent requests can fail with a 500). Each Lambda instance
# serves one request at a time, so this is a local-stack limit, not a deployed one.
CREATE_THREADS = 1


@dataclass(frozen=True)
class Call:
    job_id: str
    attempt: int
    received_at: float  # epoch seconds, when the request line had been read


class Listener:
    """Answers every POST at once (or after /sleep/<seconds>/...), recording who called and when."""

    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="listener", daemon=True).start()

    def url(self, path: str) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/{path.lstrip('/')}"

    def record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self) -> list[Call]:
        with self._lock:
            return list(self._calls)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(listener: Listener) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received_at = time.time()
            listener.record(
                Call(
                    self.headers.get("Sundial-Job-Id", ""),
                    int(self.headers.get("Sundial-Attempt", 0)),
                    received_at,
                )
            )
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            parts = self.path.strip("/").split("/")
            if parts[0] == "sleep":
                time.sleep(float(parts[1]))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the figures are what matter."""

        def handle(self) -> None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

    return Handler


class LocalStack:
    """`sundial local` with an emulator of its own, its output in a log file."""

    def __init__(
        self, log_dir: Path, workers: int, tick_seconds: float, state_dir: Path | None = None
    ) -> None:
        use_emulator()  # dummy credentials for this process's own look at the emulator's queues
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_dir / "sundial-local.log"
        script = Path(sys.executable).parent / "sundial"
        command = [str(script)] if script.exists() else [sys.executable, "-m", "sundial.local_stack.cli"]
        args = ["local", "--port", str(port), "--workers", str(workers), "--tick-seconds", str(tick_seconds)]
        # In memory unless a figure is about the state directory: runs must not share one.
        args += ["--state-dir", str(state_dir)] if state_dir else ["--ephemeral"]
        with self.log_path.open("ab") as log:
            self._process = processes.spawn(
                [*command, *args], stdout=log, stderr=log, env={**os.environ, "PYTHONUNBUFFERED": "1"}
            )
        try:
            self.endpoint_url = self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> str:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"sundial local exited:\n{self.log_path.read_text()[-2000:]}")
            found = re.search(r"Emulator:\s+(http://\S+)", self.log_path.read_text(errors="replace"))
            if BANNER in self.log_path.read_text(errors="replace") and found:
                return found.group(1)
            time.sleep(0.1)
        raise RuntimeError(f"sundial local was not ready within {STARTUP_SECONDS:.0f} s")

    @property
    def pid(self) -> int:
        return self._process.pid

    def stop(self) -> None:
        processes.end(self._process, STOP_SECONDS)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.url}/jobs", data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            job: dict[str, Any] = json.loads(response.read())
        return job

    def create_all(self, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Creates in order, one at a time (see CREATE_THREADS)."""
        with ThreadPoolExecutor(CREATE_THREADS) as pool:
            return list(pool.map(self.create, bodies))

    def queue_depth(self, queue_name: str) -> int:
        """Messages waiting or delayed in one queue, read from the emulator."""
        sqs = boto3.client("sqs", endpoint_url=self.endpoint_url, region_name="us-east-1")
        url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
        names: Any = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"]
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in names)


@contextlib.contextmanager
def running(
    log_dir: Path, workers: int, tick_seconds: float, state_dir: Path | None = None
) -> Iterator[LocalStack]:
    stack = LocalStack(log_dir, workers, tick_seconds, state_dir)
    try:
        yield stack
    finally:
        stack.stop()


def rfc3339(epoch_seconds: float) -> str:
    moment = datetime.fromtimestamp(epoch_seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
