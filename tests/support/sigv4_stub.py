"""A stand-in for an API on 127.0.0.1: answers from a script, records what it received and, given
keys, checks each request's SigV4 signature as API Gateway does (recomputed with botocore from the
request as it arrived), answering 403 to a missing or wrong one.

    with StubApi(keys={"AKIDEXAMPLE": "secret"}) as stub:
        stub.script(Reply(503), Reply(201, {...}))
        ... call stub.url ...
        assert stub.received[0].headers["idempotency-key"] == ...
"""

from __future__ import annotations

import hmac
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)"
    r"/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class Received:
    method: str
    path: str  # with its query, as on the request line
    headers: Mapping[str, str]  # names in lower case
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Close the connection without answering, after reading the request: a lost answer.
    drop: bool = False
    delay_seconds: float = 0.0  # before answering: a slow API


LOST_ANSWER = Reply(drop=True)


def signature_problem(
    received: Received, keys: Mapping[str, str], region: str, service: str = "execute-api"
) -> str | None:
    """Why the request's signature does not hold, or None when it does."""
    match = _AUTHORIZATION.match(received.headers.get("authorization", ""))
    if match is None:
        return "missing or malformed Authorization header"
    if match["key"] not in keys:
        return f"unknown access key {match['key']}"
    if (match["region"], match["service"]) != (region, service):
        return f"scope {match['region']}/{match['service']}, expected {region}/{service}"
    amz_date = received.headers.get("x-amz-date", "")
    if not amz_date.startswith(match["date"]):
        return "X-Amz-Date does not match the credential scope's date"
    signed = match["signed"].split(";")
    if "host" not in signed or any(name not in received.headers for name in signed):
        return f"signed headers {signed} are not all present, or host is not signed"
    expected = _signature(received, signed, keys[match["key"]], match, amz_date)
    if not hmac.compare_digest(expected, match["signature"]):
        return "signature mismatch"
    return None


def _signature(received: Received, signed: list[str], secret: str, scope: Any, amz_date: str) -> str:
    headers = {name: received.headers[name] for name in signed}
    url = f"http://{received.headers['host']}{received.path}"
    request = AWSRequest(method=received.method, url=url, headers=headers, data=received.body or None)
    request.context["timestamp"] = amz_date
    token = received.headers.get("x-amz-security-token")
    auth = SigV4Auth(Credentials(scope["key"], secret, token), scope["service"], scope["region"])
    return str(auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request))


class StubApi:
    """Answers each request with the next scripted Reply, then with `default`; every request is
    recorded in `received` (those refused for their signature too)."""

    def __init__(
        self,
        keys: Mapping[str, str] | None = None,
        region: str = "us-east-1",
        service: str = "execute-api",
        default: Reply | Callable[[Received], Reply] = Reply(200, {"status": "ok"}),
    ) -> None:
        self.keys = keys
        self.region = region
        self.service = service
        self.default = default
        self.received: list[Received] = []
        self.refused: list[str] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="stub-api", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> StubApi:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
            problem = None
            if self.keys is not None:
                problem = signature_problem(received, self.keys, self.region, self.service)
            if problem is not None:
                self.refused.append(problem)
                return Reply(403, {"message": f"The request signature is not valid: {problem}"})
            if self._script:
                return self._script.popleft()
        return self.default(received) if callable(self.default) else self.default


def _handler(stub: StubApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = stub.answer(Received(self.command, self.path, headers, body))
            time.sleep(reply.delay_seconds)
            if reply.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)  # the client sees the connection end unanswered
                return
            data = json.dumps(reply.body).encode() if reply.body is not None else b""
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve  # noqa: N815 (http.server names)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
