"""`sundial console --api URL`: the console on loopback, its API calls forwarded to a Sundial API.

The deployed API is IAM-only, and stays so: this process signs each forwarded call with SigV4 from
the user's AWS credentials (sundial.client.signing), so AWS gains no public surface. Only the
console's own page may use the forwarder (sundial.console.guard): a call must name this server as
its Host (no DNS rebinding) and carry the console's header, which no other site can send without a
CORS preflight that this server never allows. The path forwarded is the one asked for, normalised:
no dot segments (not even percent-encoded ones) and no control characters.
"""

from __future__ import annotations

import json
import logging
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from sundial.client.errors import Unauthorized
from sundial.client.signing import Signer, execute_api_region
from sundial.console.assets import SECURITY_HEADERS, ConsoleAssets
from sundial.console.guard import CONSOLE_HEADER, Refusal, SiteGuard

logger = logging.getLogger(__name__)
StartResponse = Callable[..., Any]

HOST = "127.0.0.1"
DEFAULT_PORT = 8001
API_PREFIX = "/api"
FORWARD_TIMEOUT_SECONDS = 30.0
# What the API reads from a request, and what the console reads from an answer.
_REQUEST_HEADERS = ("Content-Type", "Idempotency-Key")
_ANSWER_HEADERS = ("Content-Type", "Allow", "Retry-After")
MAX_BODY_BYTES = 10 * 1024 * 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What stays as it is in a forwarded path; everything else is percent-encoded again.
_PATH_SAFE = "/-._~!$&'()*+,;=:@"


@dataclass(frozen=True)
class Target:
    """Where the API calls go, and the signer for them (None: sent as they are)."""

    api_url: str
    signer: Signer | None

    @classmethod
    def of(
        cls, api_url: str, sign: bool | None = None, region: str | None = None, profile: str | None = None
    ) -> Target:
        """Signs for an execute-api URL (in its region), or when asked (in `region`), with the
        credentials of the AWS `profile` (default: botocore's chain)."""
        found = region or execute_api_region(api_url)
        if sign is None:
            sign = execute_api_region(api_url) is not None
        if sign and not found:
            raise ValueError("signing needs a region: give --region, or an execute-api URL")
        return cls(api_url.rstrip("/"), Signer(found, profile=profile) if sign and found else None)


class ConsoleProxy:
    """WSGI: /api/* forwarded to the target, everything else the console's page and assets."""

    def __init__(self, target: Target, allowed_hosts: Iterable[str], trace_url: str = "") -> None:
        self._target = target
        self._guard = SiteGuard.of(allowed_hosts)
        self._assets = ConsoleAssets(prefix="", api_base=API_PREFIX, trace_url=trace_url)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO") or "/")
        refusal = self._guard.host_refusal(environ)
        if refusal is not None:
            return _refuse(start_response, refusal)
        if path != API_PREFIX and not path.startswith(API_PREFIX + "/"):
            return self._assets(environ, start_response)
        refusal = self._guard.cross_site_refusal(environ, console_only=True)
        if refusal is not None:
            return _refuse(start_response, refusal)
        forwarded = forwarded_path(path.removeprefix(API_PREFIX))
        if forwarded is None or _CONTROL.search(str(environ.get("QUERY_STRING") or "")):
            return _plain(
                start_response,
                400,
                "Bad Request",
                "the path must not hold '.' or '..' segments, nor it or the query control characters",
            )
        return self._forward(environ, start_response, forwarded)

    def _forward(self, environ: dict[str, Any], start_response: StartResponse, path: str) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        if length > MAX_BODY_BYTES:
            return _plain(start_response, 413, "Request Entity Too Large", "the body is over 10 MB")
        body = environ["wsgi.input"].read(length) if length > 0 else None
        query = str(environ.get("QUERY_STRING") or "")
        url = f"{self._target.api_url}{path}" + (f"?{query}" if query else "")
        method = str(environ.get("REQUEST_METHOD", "GET"))
        headers = {
            name: str(environ[key])
            for name in _REQUEST_HEADERS
            if (key := _environ_key(name)) in environ and environ[key]
        }
        try:
            if self._target.signer is not None:
                headers = self._target.signer.sign(method, url, headers, body)
            status, answer_headers, answer = _send(method, url, headers, body)
        except Unauthorized as exc:
            return _plain(start_response, 401, "Unauthorized", str(exc))
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            logger.warning("forwarding %s %s failed: %s", method, url, exc)
            return _plain(
                start_response, 502, "Bad Gateway", f"the API at {self._target.api_url} did not answer"
            )
        kept = [(name, value) for name, value in answer_headers if name.title() in _ANSWER_HEADERS]
        start_response(f"{status} {_reason(status)}", [*kept, ("Content-Length", str(len(answer)))])
        return [answer]


def forwarded_path(path: str) -> str | None:
    """The API path to forward, percent-encoded again, or None when it holds a dot segment or a
    control character. The server has decoded the path once, so "..%2F" arrives here as "../"."""
    if _CONTROL.search(path):
        return None
    segments = [segment for segment in path.split("/") if segment]  # "//" is one separator
    if any(segment in (".", "..") for segment in segments):
        return None
    normal = "/" + "/".join(segments) + ("/" if path.endswith("/") and segments else "")
    return urllib.parse.quote(normal, safe=_PATH_SAFE)


def _send(
    method: str, url: str, headers: dict[str, str], body: bytes | None
) -> tuple[int, list[tuple[str, str]], bytes]:
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT_SECONDS) as response:
            return response.status, list(response.headers.items()), response.read()
    except urllib.error.HTTPError as error:  # a 4xx or 5xx answer: the console shows its message
        return error.code, list(error.headers.items()), error.read()


def _environ_key(header: str) -> str:
    name = header.upper().replace("-", "_")
    return name if name == "CONTENT_TYPE" else f"HTTP_{name}"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _refuse(start_response: StartResponse, refusal: Refusal) -> list[bytes]:
    return _plain(start_response, refusal.status.value, refusal.status.phrase, refusal.message)


def _plain(start_response: StartResponse, status: int, reason: str, message: str) -> list[bytes]:
    body = json.dumps({"message": message}).encode()
    start_response(
        f"{status} {reason}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *SECURITY_HEADERS],
    )
    return [body]


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format, *args)


def build_server(target: Target, port: int = DEFAULT_PORT, trace_url: str = "") -> WSGIServer:
    """The console on 127.0.0.1:`port` (0: a free port), not yet serving; `trace_url` links runs'
    traces (sundial.console.assets.ConsoleAssets)."""
    server = make_server(HOST, port, _placeholder, server_class=_ThreadingServer, handler_class=_QuietHandler)
    bound = server.server_address[1]
    server.set_app(ConsoleProxy(target, [f"{HOST}:{bound}", f"localhost:{bound}"], trace_url))
    return server


def _placeholder(environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
    raise RuntimeError("the console is served once its port is known")


__all__ = ["API_PREFIX", "CONSOLE_HEADER", "ConsoleProxy", "Target", "build_server", "forwarded_path"]
