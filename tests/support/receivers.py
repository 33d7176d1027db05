"""What the tests of secrets and signatures share: an http target that records every request, and
secrets for headers to refer to, made in the emulator's Secrets Manager and SSM.

The target answers /fail... with a 500 whose body is the headers it was sent, and /echo... with a
500 whose body is the request's path and then its headers, as a careless target might echo them
back; anything else gets a 204.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = dict(self.headers.items())
        self.server.received.append(Received(self.path, headers, body))
        if self.path.startswith("/fail"):
            text = json.dumps(headers).encode()
        elif self.path.startswith("/echo"):
            text = json.dumps({"path": self.path, "headers": headers}).encode()
        else:
            text = b""
        self.send_response(500 if text else 204)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args: Any) -> None:
        pass


class Receiver(ThreadingHTTPServer):
    received: list[Received]

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


@contextmanager
def receiving() -> Iterator[Receiver]:
    made = Receiver(("127.0.0.1", 0), _Handler)
    made.daemon_threads = True
    made.received = []
    threading.Thread(target=made.serve_forever, name="receiver", daemon=True).start()
    try:
        yield made
    finally:
        made.shutdown()
        made.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as made:
        yield made


def references(aws: dict[str, Any], plain: str, keyed: str, parameter: str) -> dict[str, dict[str, str]]:
    """Headers referring to three new secrets: `plain` in a Secrets Manager secret of its own
    (Authorization), `keyed` under the key "token" of a JSON one (X-Token), and `parameter` in an SSM
    SecureString (X-Param)."""
    secretsmanager, ssm = boto3.client("secretsmanager", **aws), boto3.client("ssm", **aws)
    name = uuid.uuid4().hex
    plain_arn = secretsmanager.create_secret(Name=f"plain-{name}", SecretString=plain)["ARN"]
    keyed_arn = secretsmanager.create_secret(Name=f"keyed-{name}", SecretString=json.dumps({"token": keyed}))[
        "ARN"
    ]
    ssm.put_parameter(Name=f"/tests/{name}", Value=parameter, Type="SecureString")
    parameter_arn = ssm.get_parameter(Name=f"/tests/{name}")["Parameter"]["ARN"]
    return {
        "Authorization": {"secret": plain_arn},
        "X-Token": {"secret": keyed_arn, "json_key": "token"},
        "X-Param": {"secret": parameter_arn},
    }
