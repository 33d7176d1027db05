"""API Gateway (REST, proxy integration) on loopback: HTTP request → proxy event → handler → HTTP.

The local stack serves the api Lambda's own handler through this, so the event it sees has the
shape API Gateway gives it when deployed: resource "/{proxy+}", a request context, single and
multi-value headers and query strings, and base64 for a body that is not text.

Unlike API Gateway it sits on loopback without IAM, so it guards itself as the console's forwarder
does (sundial.console.guard): it answers only to a Host of its own, refuses changes sent from other
sites, and answers preflights for its own origins alone.
"""

from __future__ import annotations

import base64
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl

from sundial.console.assets import ConsoleAssets
from sundial.console.guard import Refusal, SiteGuard, is_preflight, loopback_hosts
from sundial.contract.errors import PROBLEM_JSON, ErrorBody
from sundial.functions.api import handler as api_handler
from sundial.local_stack.lambda_context import new_context

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
StartResponse = Callable[..., Any]

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
# API Gateway REST refuses bodies over 10 MB before the function runs.
MAX_BODY_BYTES = 10 * 1024 * 1024
_TEXT_TYPES = ("text/", "application/json", "application/x-www-form-urlencoded", "application/xml")
# More names the local API answers to, comma-separated "name:port" (behind a proxy of your own, say).
ALLOWED_HOSTS_ENV = "SUNDIAL_LOCAL_ALLOWED_HOSTS"


class Gateway:
    """A WSGI application in front of one Lambda handler."""

    def __init__(
        self, handler: Handler, stage: str = "local", console: bool = True, extra_hosts: Iterable[str] = ()
    ) -> None:
        self._handler = handler
        self._stage = stage
        configured = os.environ.get(ALLOWED_HOSTS_ENV, "").split(",")
        self._extra_hosts = tuple(h.strip() for h in (*extra_hosts, *configured) if h.strip())
        # The console's page and assets at /console, beside the API it calls; not part of the API
        # (the deployed stage serves no such path: `sundial console` serves it there).
        self._console = ConsoleAssets("/console", api_base="") if console else None
        # A Lambda instance serves one request at a time, and the handler's router keeps the current
        # event on a module-level object: concurrent requests in one process would see each other's.
        self._one_at_a_time = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        # The port the server listens on, never the Host a client claims.
        guard = SiteGuard(loopback_hosts(int(environ.get("SERVER_PORT") or 80), self._extra_hosts))
        refusal = guard.host_refusal(environ) or guard.cross_site_refusal(environ)
        if refusal is not None:
            return _refuse(start_response, refusal)
        if is_preflight(environ):
            status, headers = guard.preflight(environ)
            if status >= HTTPStatus.BAD_REQUEST:
                refused = "a preflight from a page of another site is refused"
                return _problem(start_response, status, refused, "Origin", dict(headers))
            return _answer(start_response, status.value, dict(headers), b"")
        if self._console is not None and self._console.handles(str(environ.get("PATH_INFO") or "/")):
            return self._console(environ, start_response)
        return self._api(environ, _with_headers(start_response, guard.cors_headers(environ)))

    def _api(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        body = _read_body(environ)
        if body is None:
            too_large = HTTPStatus.REQUEST_ENTITY_TOO_LARGE
            return _problem(start_response, too_large, f"the body is over {MAX_BODY_BYTES} bytes", "body")
        event = self.event(environ, body)
        try:
            with self._one_at_a_time:
                result = self._handler(event, new_context("api", REGION))
        except Exception:
            logger.exception("the handler failed on %s %s", event["httpMethod"], event["path"])
            # What API Gateway answers when the function itself fails, as the API's errors are shaped.
            return _problem(start_response, HTTPStatus.BAD_GATEWAY, "Internal server error")
        return _answer(start_response, *_from_proxy(result))

    def event(self, environ: dict[str, Any], body: bytes) -> dict[str, Any]:
        """The REST proxy event for one WSGI request."""
        path = environ.get("PATH_INFO") or "/"
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        headers = _headers(environ)
        query = parse_qsl(str(environ.get("QUERY_STRING", "")), keep_blank_values=True)
        text, is_base64 = _encode_body(body, headers.get("Content-Type", [""])[-1])
        return {
            "resource": "/{proxy+}",
            "path": path,
            "httpMethod": method,
            "headers": {name: values[-1] for name, values in headers.items()} or None,
            "multiValueHeaders": headers or None,
            "queryStringParameters": {name: value for name, value in query} or None,
            "multiValueQueryStringParameters": _multi(query) or None,
            "pathParameters": {"proxy": path.lstrip("/")} if path != "/" else None,
            "stageVariables": None,
            "requestContext": self._request_context(environ, method, path, headers),
            "body": text,
            "isBase64Encoded": is_base64,
        }

    def _request_context(
        self, environ: dict[str, Any], method: str, path: str, headers: dict[str, list[str]]
    ) -> dict[str, Any]:
        now = datetime.now(UTC)
        return {
            "accountId": ACCOUNT_ID,
            "apiId": "local",
            "domainName": str(environ.get("HTTP_HOST", "127.0.0.1")),
            "domainPrefix": "local",
            "extendedRequestId": str(uuid.uuid4()),
            "httpMethod": method,
            "identity": {
                "sourceIp": str(environ.get("REMOTE_ADDR", "127.0.0.1")),
                "userAgent": headers.get("User-Agent", [None])[-1],
                "accessKey": None,
                "accountId": None,
                "caller": None,
                "user": None,
                "userArn": None,
                "cognitoIdentityId": None,
                "cognitoIdentityPoolId": None,
                "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None,
            },
            # As behind a custom domain: the local URL has no stage segment, so neither does the path
            # the client used (the API builds Location headers from it).
            "path": path,
            "protocol": str(environ.get("SERVER_PROTOCOL", "HTTP/1.1")),
            "requestId": str(uuid.uuid4()),
            "requestTime": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "requestTimeEpoch": int(now.timestamp() * 1000),
            "resourceId": "proxy",
            "resourcePath": "/{proxy+}",
            "stage": self._stage,
        }


def _refuse(start_response: StartResponse, refusal: Refusal) -> list[bytes]:
    return _problem(start_response, refusal.status, refusal.message, refusal.field)


def _problem(
    start_response: StartResponse,
    status: HTTPStatus,
    message: str,
    field: str | None = None,
    headers: dict[str, list[str] | str] | None = None,
) -> list[bytes]:
    """An error of the gateway's own, shaped as the API's are (docs/api.md, "Errors")."""
    body = ErrorBody.of(status.value, message, field).model_dump_json().encode()
    return _answer(start_response, status.value, {**(headers or {}), "Content-Type": PROBLEM_JSON}, body)


def _with_headers(start_response: StartResponse, extra: list[tuple[str, str]]) -> StartResponse:
    if not extra:
        return start_response

    def start(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
        return start_response(status, [*headers, *extra], *args)

    return start


def _read_body(environ: dict[str, Any]) -> bytes | None:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > MAX_BODY_BYTES:
        return None
    return environ["wsgi.input"].read(length) if length > 0 else b""


def _headers(environ: dict[str, Any]) -> dict[str, list[str]]:
    """Header names as clients usually spell them; WSGI has upper-cased them."""
    headers: dict[str, list[str]] = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:]
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            name = key
        else:
            continue
        title = "-".join(part.capitalize() for part in name.split("_"))
        headers.setdefault(title, []).append(str(value))
    return headers


def _multi(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        out.setdefault(name, []).append(value)
    return out


def _encode_body(body: bytes, content_type: str) -> tuple[str | None, bool]:
    if not body:
        return None, False
    if not content_type or content_type.lower().startswith(_TEXT_TYPES):
        try:
            return body.decode("utf-8"), False
        except UnicodeDecodeError:
            pass
    return base64.b64encode(body).decode("ascii"), True


def _from_proxy(result: dict[str, Any]) -> tuple[int, dict[str, list[str] | str], bytes]:
    headers: dict[str, list[str] | str] = dict(result.get("headers") or {})
    headers.update(result.get("multiValueHeaders") or {})
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return int(result.get("statusCode", 200)), headers, body


def _answer(
    start_response: StartResponse, status: int, headers: dict[str, list[str] | str], body: bytes
) -> list[bytes]:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    pairs: list[tuple[str, str]] = []
    for name, value in headers.items():
        if name.lower() == "content-length":
            continue
        pairs += [(name, str(v)) for v in (value if isinstance(value, list) else [value])]
    pairs.append(("Content-Length", str(len(body))))
    start_response(f"{status} {reason}", pairs)
    return [body]


def api_app() -> Gateway:
    """The api Lambda behind the gateway, as the local stack serves it."""
    return Gateway(api_handler)
