"""What a call to the API can fail with: one exception class per kind of answer (docs/client.md)."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """Base of every error the client raises.

    `message` says what went wrong, `field` names the request field at fault when the API named
    one, and `status` is the HTTP status, or None when no answer came (or none was asked for).
    """

    def __init__(self, message: str, field: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status

    def __str__(self) -> str:
        return self.message


class InvalidInput(ApiError):
    """The request was refused as malformed: a bad field, body or size (400, 413, 415)."""


class NotFound(ApiError):
    """No such job, or no limit for the key (404)."""


class Conflict(ApiError):
    """The job is not in a state that allows the call, or an Idempotency-Key was reused (409)."""


class PreconditionFailed(ApiError):
    """The job changed since the ETag sent as `if_match` was read (412): nothing was changed. Read the
    job again, decide again, and send its new ETag."""


class Unauthorized(ApiError):
    """No credentials to sign with, or API Gateway refused the signature or the caller (401, 403)."""


class Throttled(ApiError):
    """Too many requests (429), still so after the client's retries."""


class ServerError(ApiError):
    """The API or API Gateway failed (5xx), still so after the client's retries where they were safe."""


class Unreachable(ApiError):
    """No answer: the connection failed or timed out. `sent` says whether the request may have reached
    the API (then a change may have been applied even though no answer came)."""

    def __init__(self, message: str, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Unauthorized,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: InvalidInput,
    415: InvalidInput,
    429: Throttled,
}


def error_for(status: int, body: bytes, reason: str = "") -> ApiError:
    """The exception for an error answer; its body is problem details (RFC 9457) that carry
    `{"message", "field"}` (API Gateway's own answers carry `message` or `Message` alone, and a
    problem details body of another server `detail` or `title`)."""
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    message, field = _message_and_field(body)
    return kind(message or reason or f"HTTP {status}", field, status)


def _message_and_field(body: bytes) -> tuple[str, str | None]:
    try:
        decoded: Any = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip()[:500], None
    if not isinstance(decoded, dict):
        return str(decoded)[:500], None
    message = next(
        (decoded[key] for key in ("message", "Message", "detail", "title") if decoded.get(key)), ""
    )
    field = decoded.get("field")
    return str(message), str(field) if field else None
