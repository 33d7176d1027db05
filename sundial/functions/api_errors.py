"""Every error the API answers, as RFC 9457 problem details (`application/problem+json`) that also
carry `{"message", "field"}`, with the status docs/api.md gives it."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from sundial.contract.errors import PROBLEM_JSON, ErrorBody
from sundial.contract.jobs import JOB_ID_EXAMPLE
from sundial.shared.errors import (
    Conflict,
    InvalidInput,
    JobNotFound,
    LimitNotFound,
    PayloadTooLarge,
    SundialError,
)
from sundial.shared.service.bodies import check_json_shape, field_name
from sundial.shared.service.conditions import PreconditionFailed

# Most specific first: PayloadTooLarge is an InvalidInput.
STATUS_OF: tuple[tuple[type[SundialError], HTTPStatus], ...] = (
    (PayloadTooLarge, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (InvalidInput, HTTPStatus.BAD_REQUEST),
    (JobNotFound, HTTPStatus.NOT_FOUND),
    (LimitNotFound, HTTPStatus.NOT_FOUND),
    (Conflict, HTTPStatus.CONFLICT),
    (PreconditionFailed, HTTPStatus.PRECONDITION_FAILED),
)


def refuse_unreadable(event: APIGatewayProxyEvent) -> dict[str, Any] | None:
    """A proxy response for a body the API cannot read, or None to let the request through.

    Checked before routing, because Powertools fails on these with bare exceptions before any route
    or error handler could answer: it parses form and multipart bodies too (and a multipart type
    without a boundary raises ValueError), and decodes a base64 body as UTF-8 unconditionally; and
    because its JSON parser recurses, and converts numbers of any length, on the text as sent.
    """
    content_type = (event.headers.get("content-type") or "").strip()
    media_type = content_type.split(";", 1)[0].strip().lower()
    is_json = not media_type or media_type == "application/json" or media_type.endswith("+json")
    if not is_json and (event.body or media_type.startswith("multipart/")):
        message = f"send the body as application/json, not {media_type}"
        return _proxy(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, message, "Content-Type")
    text = _text(event)
    if text is None:
        return _proxy(HTTPStatus.BAD_REQUEST, "the body is not valid JSON: it is not UTF-8 text", "body")
    try:
        check_json_shape(text)
    except InvalidInput as exc:
        return _proxy(HTTPStatus.BAD_REQUEST, exc.message, exc.field or "body")
    return None


def _text(event: APIGatewayProxyEvent) -> str | None:
    """The body as text ("" when there is none), or None when it is not UTF-8."""
    if not event.body or not event.is_base64_encoded:
        return event.body or ""
    try:
        return base64.b64decode(event.body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


def _proxy(status: HTTPStatus, message: str, field: str) -> dict[str, Any]:
    return {
        "statusCode": status.value,
        "headers": {"Content-Type": PROBLEM_JSON},
        "multiValueHeaders": {},
        "body": ErrorBody.of(status.value, message, field).model_dump_json(),
        "isBase64Encoded": False,
    }


def unsupported(_: Exception) -> Response[str]:
    return error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the body as application/json", "Content-Type")


def error(status: HTTPStatus, message: str, field: str | None = None) -> Response[str]:
    body = ErrorBody.of(status.value, message, field).model_dump_json()
    return Response(status_code=status.value, content_type=PROBLEM_JSON, body=body)


def for_domain(exc: SundialError) -> Response[str]:
    # A StaleDelivery reaching the API means another writer won a race on the job: try again.
    status = next((status for kind, status in STATUS_OF if isinstance(exc, kind)), HTTPStatus.CONFLICT)
    return error(status, exc.message, exc.field)


def for_validation(errors: Sequence[Any], body: Any) -> Response[str]:
    """The first error, named by its field as the client wrote it: "target.url: ..."."""
    if not errors:
        return error(HTTPStatus.BAD_REQUEST, "the request is not valid")
    first = errors[0]
    if first.get("type") == "json_invalid":
        detail = first.get("ctx", {}).get("error", "invalid JSON")
        return error(HTTPStatus.BAD_REQUEST, f"the body is not valid JSON: {detail}", "body")
    loc = tuple(first.get("loc", ()))
    message = str(first.get("msg", "is not valid"))
    if loc == ("path", "job_id"):
        return bad_job_id(first.get("input"))
    if loc[:1] == ("body",) and body is not None and not isinstance(body, dict):
        return error(HTTPStatus.BAD_REQUEST, "the request body must be a JSON object", "body")
    if loc == ("body",):
        return error(HTTPStatus.BAD_REQUEST, _whole_body(first.get("type"), message), "body")
    if loc[:1] == ("header",) and len(loc) == 2:  # Powertools lower-cases header names
        field = "-".join(part.capitalize() for part in str(loc[1]).split("-"))
    else:
        field = field_name(loc, body) or "body"
    return error(HTTPStatus.BAD_REQUEST, f"{field}: {message}", field)


def bad_job_id(value: Any) -> Response[str]:
    # JSON quoting shows a newline or other control character as an escape, not as itself.
    shown = json.dumps(str(value)[:40])
    message = (
        f"job_id {shown} is not a job id: ids are 26-character ULIDs such as {JOB_ID_EXAMPLE}, "
        "as POST /jobs answers them"
    )
    return error(HTTPStatus.BAD_REQUEST, message, "job_id")


def _whole_body(kind: Any, message: str) -> str:
    if kind == "missing":
        return "the request body is required: a JSON object"
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return "the request body must be a JSON object"
    return f"the request body: {message}"


_ERROR_EXAMPLES: dict[HTTPStatus, tuple[str, dict[str, Any]]] = {
    HTTPStatus.BAD_REQUEST: (
        "Bad request: a malformed body, field, query parameter, header (If-Match among them) or job "
        "id. Nothing changed.",
        {"message": "cron expression '61 * * * *': minute must be 0-59", "field": "schedule"},
    ),
    HTTPStatus.NOT_FOUND: (
        "No job has this id.",
        {"message": f"job '{JOB_ID_EXAMPLE}' not found", "field": None},
    ),
    HTTPStatus.CONFLICT: (
        "The job's state does not allow the call, or (create) the Idempotency-Key came with another "
        "body, or the job kept changing under the call. Nothing changed; the message says what to do.",
        {"message": f"job '{JOB_ID_EXAMPLE}' is running; change it after this attempt", "field": None},
    ),
    HTTPStatus.REQUEST_ENTITY_TOO_LARGE: (
        "The payload is over 256 KiB encoded.",
        {"message": "payload is 300000 bytes; the limit is 256 KiB", "field": "payload"},
    ),
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: (
        "The body is not sent as JSON.",
        {"message": "send the body as application/json, not text/plain", "field": "Content-Type"},
    ),
    HTTPStatus.PRECONDITION_FAILED: (
        "The job has changed since the ETag sent in If-Match: read it again and decide again. "
        "Nothing changed.",
        {
            "message": f'job \'{JOB_ID_EXAMPLE}\' has changed: it is now "8", not "7"; read it again '
            "and decide again",
            "field": "If-Match",
        },
    ),
}


def documented(*statuses: HTTPStatus) -> dict[int, OpenAPIResponse]:
    """OpenAPI responses for the errors a route may answer, each with the error body and an example."""
    responses: dict[int, OpenAPIResponse] = {}
    for status in statuses:
        description, example = _ERROR_EXAMPLES.get(status, (status.phrase, {"message": status.phrase}))
        problem = ErrorBody.of(status.value, example["message"], example.get("field")).model_dump()
        content: Any = {PROBLEM_JSON: {"model": ErrorBody, "examples": {"example": {"value": problem}}}}
        responses[status.value] = {"description": description, "content": content}
    return responses
