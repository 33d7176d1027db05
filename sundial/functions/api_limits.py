"""/limits (docs/api.md, "Limits"): a key's limit, and what runs and waits on it, as routes of the api
Lambda."""

from __future__ import annotations

import urllib.parse
from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from sundial.contract.limits import LIMIT_TEXT, LimitList, LimitPut, LimitView
from sundial.functions import api_openapi as doc
from sundial.functions import clients
from sundial.shared.clock import SystemClock
from sundial.shared.service.limits import MAX_LIMITS_PAGE, LimitService

router = Router()  # type: ignore[no-untyped-call]  # Powertools leaves its __init__ unannotated
B, N = HTTPStatus.BAD_REQUEST, HTTPStatus.NOT_FOUND
OK = HTTPStatus.OK

LIMITS_PREFIX = "/limits/"
# Every character a key may hold but the slash, which must stay inside its path segment.
KEY_SAFE = ".:_-"
Key = Annotated[str, Path(description="The limit key: 1-128 characters of A-Z a-z 0-9 . _ : / -.")]
EXAMPLE = {
    "key": "payments-api",
    "max_concurrent": 50,
    "per_second": 20.0,
    "burst": 20,
    "running": 12,
    "waiting": 3,
    "waiting_is_estimate": False,
    "oldest_wait_seconds": 1.5,
    "shards": 1,
    "updated_at": "2026-12-01T09:00:00Z",
}


def _service() -> LimitService:
    return LimitService(clients.store(), SystemClock())


def one_segment_key(event: dict[str, Any]) -> dict[str, Any]:
    """A limit key may hold slashes, which the gateway hands over decoded (`{key+}`), and a bad key
    any character at all: the route's one path segment gets the key encoded, so that every key
    reaches the route, and the key is decoded again and checked there (400 naming `key`)."""
    path = event.get("path")
    if not isinstance(path, str) or not path.startswith(LIMITS_PREFIX) or path == LIMITS_PREFIX:
        return event
    key = path[len(LIMITS_PREFIX) :]
    return {**event, "path": LIMITS_PREFIX + urllib.parse.quote(key, safe=KEY_SAFE)}


def _key(key: str) -> str:
    """The key as the client wrote it (one_segment_key encoded it)."""
    return urllib.parse.unquote(key)


@router.put(
    "/limits/<key>",
    summary="Set a key's limit",
    description=LIMIT_TEXT,
    tags=["limits"],
    operation_id="put_limit",
    responses=doc.answers(OK, LimitView, "The key's limit, and what runs and waits on it now.", EXAMPLE, B),
)
def put_limit(key: Key, request: LimitPut) -> LimitView:
    return _service().put(_key(key), request)


@router.get(
    "/limits/<key>",
    summary="A key's limit, and what runs and waits on it now",
    tags=["limits"],
    operation_id="get_limit",
    responses=doc.answers(OK, LimitView, "The key's limit.", EXAMPLE, B, N),
)
def get_limit(key: Key) -> LimitView:
    return _service().get(_key(key))


@router.delete(
    "/limits/<key>",
    summary="Remove a key's limit: the jobs naming it then run unlimited",
    tags=["limits"],
    operation_id="delete_limit",
    responses=doc.answers(OK, LimitView, "The limit as it was.", EXAMPLE, B, N),
)
def delete_limit(key: Key) -> LimitView:
    return _service().delete(_key(key))


@router.get(
    "/limits",
    summary="Every key's limit",
    tags=["limits"],
    operation_id="list_limits",
    responses=doc.answers(
        OK, LimitList, "A page of limits, by key.", {"limits": [EXAMPLE], "next_token": None}, B
    ),
)
def list_limits(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMITS_PAGE)] = 50,
    next_token: Annotated[str | None, Query(max_length=2048)] = None,
) -> LimitList:
    return _service().list(limit, next_token)
