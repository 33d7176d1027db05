"""The jobs' http target in the end-to-end tests: records every call with the instant it arrived.

Paths choose the answer: /ok/... answers 200, /fail/... answers 500, /sleep/<seconds>/... answers 200
after that long (a job still running when the local stack is killed).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Call:
    path: str
    job_id: str
    attempt: int
    scheduled_at: float  # epoch seconds, from Sundial-Scheduled-At
    idempotency_key: str
    received_at: float  # epoch seconds, when the request line arrived
    payload: Any

    @property
    def succeeded(self) -> bool:
        """Whether the listener answered this call 2xx (see the module's docstring)."""
        return not self.path.strip("/").startswith("fail")

    @property
    def lateness(self) -> float:
        """Seconds between the occurrence's instant and this call (for a first attempt)."""
        return self.received_at - self.scheduled_at


class Listener:
    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="listener", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def record(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self, job_id: str | None = None) -> list[Call]:
        with self._lock:
            return [call for call in self._calls if job_id is None or call.job_id == job_id]


def _handler_class(listener: Listener) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received_at = time.time()
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            listener.record(
                Call(
                    path=self.path,
                    job_id=self.headers.get("Sundial-Job-Id", ""),
                    attempt=int(self.headers.get("Sundial-Attempt", "0")),
                    scheduled_at=_epoch(self.headers.get("Sundial-Scheduled-At", "")),
                    idempotency_key=self.headers.get("Idempotency-Key", ""),
                    received_at=received_at,
                    payload=json.loads(body) if body else None,
                )
            )
            self._answer()

        def _answer(self) -> None:
            parts = self.path.strip("/").split("/")
            if parts[0] == "sleep":
                time.sleep(float(parts[1]))
            status = 500 if parts[0] == "fail" else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests report what matters."""

        def handle(self) -> None:
            # A worker killed mid-call hangs up on us; that is the point of one test, not an error.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

    return Handler


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else 0.0
