"""Faults injected at the boundary: botocore event hooks on real clients pointed at the emulator.

Each injector counts what it did, so the ledger can bound re-executions by the crashes that
happened after a side effect.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import urllib3
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError, EndpointConnectionError

_http = urllib3.PoolManager(maxsize=20)


class Crash(BaseException):
    """A process dying: not an Exception, so no handler in the code under test can swallow it."""


class Faults:
    """The dice and the tally of every fault one simulation injects."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def roll(self, kind: str, probability: float) -> bool:
        with self._lock:
            hit = self.rng.random() < probability
            if hit:
                self.counts[kind] += 1
            return hit

    def draw(self, probability: float) -> bool:
        """A roll that counts nothing: for faults that are counted only once they took effect."""
        with self._lock:
            return self.rng.random() < probability

    def note(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1


def error_response(request: Any, code: str, status: int = 400) -> AWSResponse:
    body = f'{{"__type": "com.amazonaws.dynamodb.v20120810#{code}", "message": "injected {code}"}}'
    return AWSResponse(
        request.url, status, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(body.encode())
    )


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data

    def read(self, *_: Any) -> bytes:
        return self._data


def _operation(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    return (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]


def inject_dynamodb_errors(client: Any, faults: Faults, operations: dict[str, float], label: str) -> None:
    """Throttles and transaction conflicts on the wire, below botocore's retries: most are absorbed
    by the SDK's retry, some (several in a row) reach the code under test."""

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        operation = _operation(request)
        probability = operations.get(operation, 0.0)
        if probability and faults.roll(f"{label} {operation} throttled", probability):
            code = faults.rng.choice(["ThrottlingException", "ProvisionedThroughputExceededException"])
            return error_response(request, code)
        writes = operation in ("UpdateItem", "PutItem", "TransactWriteItems")
        if (
            writes
            and probability
            and faults.roll(f"{label} {operation} transaction conflict", probability / 2)
        ):
            return error_response(request, "TransactionConflictException")
        return None

    client.meta.events.register("before-send.dynamodb", before_send)


def lose_answers(client: Any, faults: Faults, operations: dict[str, float], label: str) -> None:
    """Writes that DynamoDB applies and whose answers are lost, each operation at its probability:
    the hook sends the request itself, then answers 500, so botocore sends it again
    (tests/adapter/lost_answers.py does this on demand). A write that failed its condition changed
    nothing, so its answer is passed on as it came."""

    def before_send(request: Any, **_: Any) -> AWSResponse | None:
        operation = _operation(request)
        if not faults.draw(operations.get(operation, 0.0)):
            return None
        headers = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()}
        sent = _http.request(request.method, request.url, body=request.body, headers=headers)
        if sent.status != 200:
            return AWSResponse(request.url, sent.status, dict(sent.headers), _Raw(sent.data))
        faults.note(f"{label} {operation} applied, answer lost")
        return error_response(request, "InternalServerError", status=500)

    client.meta.events.register("before-send.dynamodb", before_send)


class HeartbeatThrottle:
    """Throttles every heartbeat write of the chosen jobs for `window_ms` of simulated time from the
    first one: long enough for several heartbeats to exhaust botocore's retries in a row."""

    def __init__(self, faults: Faults, now_ms: Callable[[], int], window_ms: int) -> None:
        self.jobs: set[str] = set()
        self._faults = faults
        self._now_ms = now_ms
        self._window_ms = window_ms
        self._until: dict[str, int] = {}
        self._lock = threading.Lock()

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-send.dynamodb", self._before_send)

    def _before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        if _operation(request) != "UpdateItem":
            return None
        body = json.loads(request.body)
        values = body.get("ExpressionAttributeValues", {})
        # A heartbeat: a running job's lease moved, its status left as it is.
        if ":is_running" not in values or ":set_lease_until" not in values or ":set_status" in values:
            return None
        job_id = body["Key"]["pk"]["S"].removeprefix("JOB#")
        if job_id not in self.jobs:
            return None
        with self._lock:
            until = self._until.setdefault(job_id, self._now_ms() + self._window_ms)
        if self._now_ms() >= until:
            return None
        self._faults.note("worker heartbeat throttled (a long job's window)")
        return error_response(request, "ThrottlingException")


def refuse_dead_letters(client: Any, faults: Faults, url: str, probability: float, label: str) -> None:
    """The dead-letter send fails after its job was written DEAD: the alert stays owed for the tick."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        if params.get("QueueUrl") == url and faults.roll(f"{label} dead-letter send refused", probability):
            error = {"Error": {"Code": "KMS.ThrottlingException", "Message": "injected"}}
            raise ClientError(error, "SendMessage")  # type: ignore[arg-type]

    client.meta.events.register("provide-client-params.sqs.SendMessage", hook)


def crash_on(client: Any, event: str, predicate: Callable[[dict[str, Any]], bool]) -> None:
    """Raises Crash when a call's parameters match: the process dies at that boundary."""

    def hook(params: dict[str, Any], **_: Any) -> None:
        if predicate(params):
            raise Crash(event)

    client.meta.events.register(f"provide-client-params.{event}", hook)


class SqsOutage:
    """While `down` is set, every SQS call of the client fails to connect."""

    def __init__(self, client: Any, faults: Faults) -> None:
        self.down = False
        self._faults = faults

        def before_send(request: Any, **_: Any) -> None:
            if self.down:
                self._faults.note("sqs connection refused")
                raise EndpointConnectionError(endpoint_url=request.url)

        client.meta.events.register("before-send.sqs", before_send)


def partial_send_failures(client: Any, faults: Faults, probability: float) -> None:
    """SendMessageBatch accepts only some entries and reports the rest as failed, as SQS may."""
    dropped: dict[int, list[str]] = {}

    def drop(params: dict[str, Any], **_: Any) -> None:
        # A call that never got its answer (an outage) must not leave its failure to the thread's next.
        dropped.pop(threading.get_ident(), None)
        entries = params.get("Entries", [])
        if len(entries) < 2 or faults.rng.random() >= probability:
            return
        failed = entries[-1]  # SQS answers a batch entry by entry; one of them fails
        faults.note("sqs batch entry failed")
        dropped[threading.get_ident()] = [failed["Id"]]
        params["Entries"] = entries[:-1]

    def report(parsed: dict[str, Any], **_: Any) -> None:
        for entry_id in dropped.pop(threading.get_ident(), []):
            parsed.setdefault("Failed", []).append(
                {"Id": entry_id, "SenderFault": False, "Code": "InternalError", "Message": "injected"}
            )

    client.meta.events.register("provide-client-params.sqs.SendMessageBatch", drop)
    client.meta.events.register("after-call.sqs.SendMessageBatch", report)
