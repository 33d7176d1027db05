"""Every error the API answers, as `{"message", "field"}` with the status API.md gives it."""

from __future__ import annotations

from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse

from shared.api.models import ErrorBody
from shared.errors import Conflict, InvalidInput, JobNotFound, PayloadTooLarge, SundialError

# Most specific first: PayloadTooLarge is an InvalidInput.
STATUS_OF: tuple[tuple[type[SundialError], HTTPStatus], ...] = (
    (PayloadTooLarge, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
    (InvalidInput, HTTPStatus.BAD_REQUEST),
    (JobNotFound, HTTPStatus.NOT_FOUND),
    (Conflict, HTTPStatus.CONFLICT),
)
# Where Powertools reports a request error; the field is what follows it.
_SOURCES = ("body", "query", "header", "path", "cookie")


def error(status: HTTPStatus, message: str, field: str | None = None) -> Response[str]:
    body = ErrorBody(message=message, field=field).model_dump_json()
    return Response(status_code=status.value, content_type=content_types.APPLICATION_JSON, body=body)


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
    if loc[:1] == ("body",) and body is not None and not isinstance(body, dict):
        return error(HTTPStatus.BAD_REQUEST, "the request body must be a JSON object", "body")
    if loc == ("body",):
        return error(HTTPStatus.BAD_REQUEST, _whole_body(first.get("type"), message), "body")
    if loc[:1] == ("header",) and len(loc) == 2:  # Powertools lower-cases header names
        field = "-".join(part.capitalize() for part in str(loc[1]).split("-"))
    else:
        field = field_name(loc, body) or "body"
    return error(HTTPStatus.BAD_REQUEST, f"{field}: {message}", field)


def _whole_body(kind: Any, message: str) -> str:
    if kind == "missing":
        return "the request body is required: a JSON object"
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        return "the request body must be a JSON object"
    return f"the request body: {message}"


def field_name(loc: tuple[Any, ...], body: Any) -> str | None:
    """("body", "target", "http", "url") → "target.url": a union's tag is not a field the client sent."""
    parts: list[str] = []
    node = body
    for step in loc[1:] if loc[:1] in {(s,) for s in _SOURCES} else loc:
        if isinstance(node, dict) and step not in node and node.get("type") == step:
            continue  # the discriminator's value, which pydantic adds to the location
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
        node = node.get(step) if isinstance(node, dict) else _item(node, step)
    return "".join(parts).lstrip(".") or None


def _item(node: Any, step: Any) -> Any:
    if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
        return node[step]
    return None


def documented(*statuses: HTTPStatus) -> dict[int, OpenAPIResponse]:
    """OpenAPI responses for the errors a route may answer, all with the error body."""
    content: Any = {"application/json": {"model": ErrorBody}}
    return {status.value: {"description": status.phrase, "content": content} for status in statuses}
