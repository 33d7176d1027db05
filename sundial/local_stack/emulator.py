"""The AWS emulator (moto server) on loopback, made safe for conditional writes, and able to fail.

moto checks a DynamoDB condition and then writes without a lock, so two concurrent requests can both
pass a condition that real DynamoDB would let only one pass. We serialise every request per service,
except SQS long polls, which loop inside the request and would stall everyone else for up to 20 s.

With a fault spec the emulator also misbehaves the way AWS does (see FaultyApp): the code under test
sees those faults only as HTTP answers, after its SDK's own retries, exactly as it would in AWS.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import logging
import pickle
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from moto import backends as moto_backends
from moto.core.utils import unix_time, unix_time_millis
from moto.dynamodb.models.table import Table
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import Validator
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.sqs.models import Message, Queue, SQSBackend
from werkzeug.serving import BaseWSGIServer, make_server

from sundial.local_stack import index_partitions
from sundial.local_stack.faults import FaultSpec, FaultyApp, new_seed
from sundial.local_stack.state.app import PersistentApp, WsgiApp
from sundial.local_stack.state.services import KeptServicesApp, ServicesOnDisk
from sundial.local_stack.state.tables_on_disk import Restored, TablesOnDisk

_DYNAMODB = "DynamoDB_20120810"
DEFAULT_PORT = 4566
# How long a stop waits for a request under way (a snapshot of 100,000 items takes about 3 s).
STOP_WAIT_SECONDS = 5.0
logger = logging.getLogger(__name__)


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
            answer = list(self._app(environ, start_response))
            if service == _DYNAMODB:
                index_partitions.after_request(target.split(".", 1)[-1])
            return answer

    def _lock_for(self, service: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(service, threading.Lock())

    @contextlib.contextmanager
    def idle(self, timeout: float) -> Iterator[None]:
        """Holds every service's lock, so that no request is half-way within; after `timeout` in
        all, goes on without the locks it could not have."""
        deadline = time.monotonic() + timeout
        with self._locks_guard:
            locks = list(self._locks.values())
        held = [lock for lock in locks if lock.acquire(timeout=max(0.0, deadline - time.monotonic()))]
        if len(held) < len(locks):
            logger.warning("stopping with a request still under way")
        try:
            yield
        finally:
            for lock in held:
                lock.release()


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
index_partitions.install()


def _retained(self: SQSBackend, queue_name: str, message: Message) -> bool:
    """moto's retention check on each message a receive returns, reading the one attribute it needs.

    moto builds every attribute of the queue three times over for it, counting the queue's messages
    each time, so a receive from a queue holding a burst cost more than the jobs' own writes.
    """
    retention_seconds = int(self.get_queue(queue_name).message_retention_period)  # type: ignore[attr-defined]
    return bool(retention_seconds + (message.sent_timestamp or 0) / 1000 > unix_time())


SQSBackend.is_message_valid_based_on_retention_period = _retained  # type: ignore[method-assign]


def _wait_for_messages(self: Queue, timeout: int) -> None:
    """moto's long poll, woken when a message arrives or when one becomes visible.

    moto waits up to `timeout` (a second) for a message to arrive; a delayed message whose delay ends,
    or one whose visibility timeout ends, wakes nothing, so a long poll answered it up to a second
    late. It waits until the first of those instants instead, so that the local stack's workers can
    long-poll and still start a job on its instant.
    """
    with self._messages_lock:
        self._messages_lock.wait_for(lambda: self.messages, timeout=min(timeout, _until_one_is_visible(self)))


def _until_one_is_visible(queue: Queue) -> float:
    """Seconds until the first message held back (delayed or in flight) becomes visible; moto calls it
    visible a millisecond past its instant."""
    now = unix_time_millis()
    instants = [max(m.visible_at, m.delayed_until) for m in queue._messages]
    upcoming = [instant for instant in instants if instant >= now]
    return (min(upcoming) - now + 1) / 1000 if upcoming else float("inf")


Queue.wait_for_messages = _wait_for_messages  # type: ignore[method-assign]


# moto parses an UpdateExpression twice per write (to check it, then to apply it) and deep-copies
# the tree before each use; the store sends the same few expressions with different values, so the
# trees are parsed once, kept unchanged, and copied through pickle, which is several times faster.
_parse_update_expression = functools.lru_cache(maxsize=512)(UpdateExpressionParser.make)
UpdateExpressionParser.make = _parse_update_expression


def _validator_init(self: Validator, expression: Any, *args: Any, **kwargs: Any) -> None:
    _moto_validator_init(self, None, *args, **kwargs)
    self.node_to_validate = pickle.loads(pickle.dumps(expression, pickle.HIGHEST_PROTOCOL))


_moto_validator_init = Validator.__init__
Validator.__init__ = _validator_init  # type: ignore[method-assign]


# moto lists its own package directory on every request to match the Host header against it.
_MOTO_MODULES = tuple(moto_backends.list_of_moto_modules())
moto_backends.list_of_moto_modules = lambda: _MOTO_MODULES


class Emulator:
    """A moto server in a background thread of this process.

    With `state`, its tables, KMS keys, secrets and parameters are first restored from that directory,
    and every change to them is recorded there before it is answered (local_stack.state); without,
    they live in memory only.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: FaultSpec | None = None,
        fault_seed: int | None = None,
        state: TablesOnDisk | None = None,
    ) -> None:
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request drowns the rest
        seed = new_seed() if fault_seed is None else fault_seed
        moto: WsgiApp = DomainDispatcherApplication(create_backend_app)
        self.state = state
        self.restored: Restored | None = None
        if state is not None:
            persistent = PersistentApp(moto, state)
            services = ServicesOnDisk(state.path)
            try:
                self.restored = state.restore(persistent.replay)
                services.restore()
            except BaseException:
                state.close()
                raise
            moto = KeptServicesApp(persistent, services)
        # Faults outside the lock: a duplicate send or a lost answer is two ordinary requests to moto.
        self._serialised = SerialisedApp(moto)
        self.faults = FaultyApp(self._serialised, faults or FaultSpec(), seed)
        app = self.faults
        self._server: BaseWSGIServer = make_server(
            host, port, app, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(target=self._server.serve_forever, name="emulator", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        return f"http://{self._server.server_address[0]!s}:{self.port}"

    def start(self) -> Emulator:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=STOP_WAIT_SECONDS)
        if self.state is not None:
            # A request's thread may still be writing the log or a snapshot: closing its file under
            # it could hand the descriptor to another file before that write lands.
            with self._serialised.idle(STOP_WAIT_SECONDS):
                self.state.close()
        if self.faults.spec:
            logger.info("faults injected: %s", self.faults.counts.snapshot())

    def serve_forever(self) -> None:
        self._server.serve_forever()
