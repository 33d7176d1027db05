"""`--debug`: each HTTP request and its answer on stderr, as `aws --debug` shows them, without what
could be a secret (the signature, credentials, header values; a URL's query values are kept, as the
API's own queries are filters and page tokens)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

import click

from sundial.client.errors import Unreachable
from sundial.client.transport import Answer, Transport, urllib_transport

# Headers whose value says how the request was made and never holds a secret: shown. Every other
# header is named with its value masked (Authorization, X-Amz-Security-Token, Idempotency-Key...).
SHOWN_HEADERS = frozenset({"accept", "content-type", "user-agent", "content-length", "x-amz-date"})
MASK = "***"


def debug_transport(
    inner: Transport = urllib_transport,
    say: Callable[[str], None] = lambda line: click.echo(line, err=True),
    clock: Callable[[], float] = time.monotonic,
) -> Transport:
    """`inner`, logging each exchange: method, URL, headers (masked), status or failure, and time."""

    def send(
        method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float, /
    ) -> Answer:
        size = f", {len(body)} bytes" if body is not None else ""
        say(f"debug: > {method} {url} [{shown(headers)}]{size}")
        started = clock()
        try:
            answer = inner(method, url, headers, body, timeout)
        except Unreachable as exc:
            say(f"debug: < no answer after {_ms(clock() - started)}: {exc.message}")
            raise
        request_id = answer.headers.get("x-amzn-requestid") or answer.headers.get("x-request-id")
        tail = f", request id {request_id}" if request_id else ""
        took = _ms(clock() - started)
        say(f"debug: < {answer.status} {answer.reason} in {took}, {len(answer.body)} bytes{tail}")
        return answer

    return send


def shown(headers: Mapping[str, str]) -> str:
    return ", ".join(
        f"{name}: {value if name.lower() in SHOWN_HEADERS else MASK}" for name, value in headers.items()
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"
