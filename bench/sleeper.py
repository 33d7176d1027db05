"""The flood's target, in a process of its own: it answers each POST after the seconds its path names
(/sleep/<seconds>), so the flood's held connections and threads stay off the measuring process.

Run: python -m bench.sleeper PORT
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench import processes
from sundial.local_stack.child import free_port


class _Sleep(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        parts = self.path.strip("/").split("/")
        time.sleep(float(parts[1]) if parts[0] == "sleep" else 0.0)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextlib.contextmanager
def sleeper() -> Iterator[str]:
    """A sleeper process on a free loopback port; yields its base URL."""
    port = free_port()
    process = processes.spawn([sys.executable, "-m", "bench.sleeper", str(port)])
    try:
        time.sleep(1.0)  # it binds at once; a second covers a loaded machine
        yield f"http://127.0.0.1:{port}"
    finally:
        processes.end(process)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), _Sleep)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
