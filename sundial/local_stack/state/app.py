"""Between the emulator's lock and moto: every DynamoDB write moto applied is recorded on disk
before its answer leaves (local_stack.state.tables_on_disk).

It runs inside the emulator's per-service lock, so no other DynamoDB request sees a write before
it is on disk, and a snapshot sees no write half-made. Writes are recorded as the item images they
leave (the items after the write, or their absence), not as requests: replaying an image needs no
condition evaluated again. Table definitions are recorded as the requests that made them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from werkzeug.test import EnvironBuilder

from sundial.local_stack.state import tables
from sundial.local_stack.state.tables_on_disk import TablesOnDisk

logger = logging.getLogger(__name__)
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Json = dict[str, Any]

READS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactGetItems",
        "DescribeTable",
        "ListTables",
        "DescribeTimeToLive",
        "ListTagsOfResource",
        "DescribeContinuousBackups",
        "DescribeEndpoints",
        "DescribeLimits",
    }
)
ITEM_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
SCHEMA_WRITES = frozenset(
    {"CreateTable", "UpdateTable", "DeleteTable", "UpdateTimeToLive", "TagResource", "UntagResource"}
)
# The headers by which moto picks the service, account and region of a replayed request.
_REPLAY_HEADERS = ("HTTP_HOST", "HTTP_AUTHORIZATION", "HTTP_X_AMZ_TARGET", "CONTENT_TYPE")
_AMZ_JSON = "application/x-amz-json-1.0"


class PersistentApp:
    """Wraps moto's WSGI app; must be called under the emulator's DynamoDB lock."""

    def __init__(self, app: WsgiApp, state: TablesOnDisk) -> None:
        self._app = app
        self._state = state
        self._failure: str | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        service, _, action = str(environ.get("HTTP_X_AMZ_TARGET", "")).partition(".")
        if not service.startswith("DynamoDB_") or action in READS:
            return self._app(environ, start_response)
        if self._failure is not None:
            return _refuse(start_response, "InternalServerError", self._failure)
        if action not in ITEM_WRITES | SCHEMA_WRITES:
            message = f"{action} is not kept in a state directory; run the emulator --ephemeral to use it"
            return _refuse(start_response, "ValidationException", message)
        return self._write(environ, start_response, action)

    def _write(self, environ: dict[str, Any], start_response: Callable[..., Any], action: str) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        answer = _Answer.of(self._app, environ)
        if answer.ok:
            try:
                self._state.record(self._record(environ, action, json.loads(body or b"{}"), body))
            except OSError as exc:
                # moto holds a write that is not on disk: answer no request any more, rather than
                # acknowledge writes that a restart would lose.
                logger.critical("state: cannot record a write; refusing DynamoDB from now on", exc_info=True)
                self._failure = f"the state directory failed: {exc.filename or 'a file'}: {exc.strerror}"
                return _refuse(start_response, "InternalServerError", self._failure)
        return answer.send(start_response)

    def _record(self, environ: dict[str, Any], action: str, params: Json, body: bytes) -> Json:
        if action in SCHEMA_WRITES:
            headers = {name: str(environ[name]) for name in _REPLAY_HEADERS if name in environ}
            return {"schema": {"headers": headers, "body": body.decode()}}
        region = tables.request_region(str(environ.get("HTTP_AUTHORIZATION", "")))
        return {"items": [_image(region, name, key) for name, key in _touched(action, params)]}

    def replay(self, request: Json) -> None:
        """Sends a recorded table request to moto again, at start-up. Raises LookupError if refused."""
        headers = request["headers"]
        builder = EnvironBuilder(method="POST", path="/", data=request["body"].encode())
        environ = builder.get_environ()
        environ.update(headers)
        answer = _Answer.of(self._app, environ)
        if not answer.ok:
            action = headers.get("HTTP_X_AMZ_TARGET")
            raise LookupError(f"the recorded {action} was refused: {answer.body[:200]!r}")


def _touched(action: str, params: Json) -> Iterator[tuple[str, Json]]:
    """(table, key or whole item) of every item a successful write may have changed."""
    if action in ("PutItem",):
        yield params["TableName"], params["Item"]
    elif action in ("UpdateItem", "DeleteItem"):
        yield params["TableName"], params["Key"]
    elif action == "TransactWriteItems":
        for entry in params["TransactItems"]:
            for kind, part in entry.items():
                if kind != "ConditionCheck":
                    yield part["TableName"], part.get("Key") or part["Item"]
    else:  # BatchWriteItem
        for name, requests in params["RequestItems"].items():
            for request in requests:
                put, delete = request.get("PutRequest"), request.get("DeleteRequest")
                yield name, put["Item"] if put else delete["Key"]


def _image(region: str, name: str, item_or_key: Json) -> Json:
    found = tables.find(region, name)
    if found is None:  # moto answered a write to a table it does not have: it never does
        raise LookupError(f"table {name} in {region} not found after a write to it")
    ref, table = found
    key = tables.key_of(table, item_or_key)
    return {**ref.record(), "k": key, "i": tables.image(table, key)}


def whole_response(app: WsgiApp, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    """Calls a WSGI app and holds its whole response (status, headers, body), so that it can be
    looked at before anything is sent."""
    started: list[tuple[str, list[tuple[str, str]]]] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        started.append((status, list(headers)))
        return written.append

    chunks = list(app(environ, start_response))
    status, headers = started[-1]
    return status, headers, b"".join([*written, *chunks])


class _Answer:
    def __init__(self, status: str, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def ok(self) -> bool:
        return self.status.startswith("2")

    @classmethod
    def of(cls, app: WsgiApp, environ: dict[str, Any]) -> _Answer:
        return cls(*whole_response(app, environ))

    def send(self, start_response: Callable[..., Any]) -> list[bytes]:
        start_response(self.status, self.headers)
        return [self.body]


def _refuse(start_response: Callable[..., Any], error_type: str, message: str) -> list[bytes]:
    status = "500 Internal Server Error" if error_type == "InternalServerError" else "400 Bad Request"
    body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{error_type}", "message": message})
    start_response(status, [("Content-Type", _AMZ_JSON), ("Content-Length", str(len(body)))])
    return [body.encode()]
