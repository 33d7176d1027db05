"""The AWS emulator (moto server) on loopback, made safe for conditional writes.

moto checks a DynamoDB condition and then writes without a lock, so two concurrent requests can both
pass a condition that real DynamoDB would let only one pass. We serialise every request per service,
except SQS long polls, which loop inside the request and would stall everyone else for up to 20 s.
"""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from werkzeug.serving import BaseWSGIServer, make_server

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
DEFAULT_PORT = 4566


class SerialisedApp:
    """Wraps moto's WSGI app: one request at a time per service, long polls excepted."""

    def __init__(self, app: WsgiApp) -> None:
        self._app = app
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        service = target.split(".", 1)[0] or str(environ.get("PATH_INFO", "/"))
        if target == "AmazonSQS.ReceiveMessage" and _waits(environ):
            return list(self._app(environ, start_response))
        with self._lock_for(service):
            return list(self._app(environ, start_response))

    def _lock_for(self, service: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(service, threading.Lock())


def _waits(environ: dict[str, Any]) -> bool:
    """True for a ReceiveMessage that asks to long-poll; restores the body for the app."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    try:
        return int(json.loads(body or b"{}").get("WaitTimeSeconds", 0)) > 0
    except (ValueError, AttributeError):
        return False


def _all_items_sorted_by_value(self: Table) -> list[Any]:
    """moto's Table.all_items, sorting on each key's value once instead of comparing DynamoTypes.

    Every GSI query sorts the whole table first; with DynamoType comparisons (which compare the same
    cast values) that sort was most of the emulator's time once a table held thousands of items.
    """
    items = [item for hash_set in self.items.values() for item in _values(self, hash_set)]
    if self.range_key_attr:
        return sorted(items, key=lambda i: (i.hash_key.cast_value, i.range_key.cast_value))
    return sorted(items, key=lambda i: i.hash_key.cast_value)


def _values(table: Table, hash_set: Any) -> list[Any]:
    return list(hash_set.values()) if table.range_key_attr else [hash_set]


Table.all_items = _all_items_sorted_by_value  # type: ignore[method-assign]


class Emulator:
    """A moto server in a background thread of this process."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request drowns the rest
        app = SerialisedApp(DomainDispatcherApplication(create_backend_app))
        self._server: BaseWSGIServer = make_server(
            host, port, app, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="emulator", daemon=True)

    @property
    def endpoint_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Emulator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=5)

    def serve_forever(self) -> None:
        self._server.serve_forever()
