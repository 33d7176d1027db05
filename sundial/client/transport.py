"""One HTTP exchange on the standard library, and the retry policy around it (docs/client.md, Retries)."""

from __future__ import annotations

import http.client
import json
import random
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

from sundial.client.errors import ApiError, Unreachable

# Throttling (API Gateway answers it before the handler runs) and answers that a proxy or API
# Gateway gives when the handler failed, timed out or could not be reached.
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    reason: str = ""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Transport(Protocol):
    """Sends one request. Raises Unreachable, with `sent` False only when nothing reached the server."""

    def __call__(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float, /
    ) -> Answer: ...


def urllib_transport(
    method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
) -> Answer:
    request = urllib.request.Request(url, data=body, method=method, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return _answer(response.status, response.headers.items(), response.read(), response.reason)
    except urllib.error.HTTPError as error:
        return _answer(error.code, error.headers.items(), error.read(), str(error.reason))
    except urllib.error.URLError as error:
        # urllib wraps what fails while connecting and sending: an incomplete request is not served.
        if isinstance(error.reason, ssl.SSLCertVerificationError):
            untrusted = f"{url}: its TLS certificate is not trusted: {error.reason.verify_message}"
            raise ApiError(untrusted) from error
        raise Unreachable(f"cannot reach {url}: {error.reason}", sent=False) from error
    except (OSError, http.client.HTTPException) as error:  # while waiting for or reading the answer
        what = "timed out" if isinstance(error, TimeoutError) else f"failed ({error.__class__.__name__})"
        raise Unreachable(f"{method} {url}: the answer {what}", sent=True) from error


def _answer(status: int, headers: Any, body: bytes, reason: str) -> Answer:
    return Answer(status, {name.lower(): value for name, value in headers}, body, reason)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter: attempt n waits a random time in [0, min(cap, base * 2**n)],
    or what a `Retry-After` header asks, capped. `attempts` counts the first try."""

    attempts: int = 4
    base_seconds: float = 0.25
    cap_seconds: float = 8.0

    def delay(self, retry: int, answer: Answer | None, rand: Callable[[], float] = random.random) -> float:
        asked = _retry_after(answer.headers.get("retry-after")) if answer is not None else None
        if asked is not None:
            return min(self.cap_seconds, asked)
        return rand() * min(self.cap_seconds, self.base_seconds * 2.0**retry)


NO_RETRIES = RetryPolicy(attempts=1)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None
