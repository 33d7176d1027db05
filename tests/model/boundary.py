"""The model's AWS boundary: faults armed for an actor's next calls, and SQS held as a bag of messages.

Each actor (api, tick, worker) has its own DynamoDB and SQS clients, so a fault armed for one actor
hits that actor's next calls and nobody else's. SQS sends never reach the emulator: a hook answers
them and hands the messages to the model, which delivers, duplicates, delays or drops them.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import urllib3
from botocore.awsrequest import AWSResponse
from botocore.config import Config

from sundial.shared import constants as c
from sundial.shared.dispatch import JobMessage
from sundial.shared.store.items import JOB_SK
from tests.chaos.faults import error_response

DYNAMODB_WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems"})
# Three attempts in all, two of them retries (DynamoDB's legacy backoff): three throttles in a row
# reach the code under test, one or two are absorbed by the SDK. (`max_attempts` would count the
# retries alone, and absorb three.)
CLIENT_CONFIG = Config(retries={"mode": "legacy", "total_max_attempts": 3}, max_pool_connections=4)
SQS_JSON = "application/x-amz-json-1.0"


class Crash(BaseException):
    """The process dies at this boundary: no handler in the code under test can swallow it."""


def _operation(request: Any) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    text = target.decode() if isinstance(target, bytes) else str(target)
    return text.rsplit(".", 1)[-1]


def _body(request: Any) -> dict[str, Any]:
    raw = request.body
    if hasattr(raw, "read"):
        raw = raw.read()
        request.body = raw
    return json.loads(raw or b"{}")


@dataclass
class DynamoFaults:
    """Faults for the next DynamoDB calls of one client, in order.

    `throttle` answers any call with a ThrottlingException; `conflict` answers a write with a
    TransactionConflictException; `lost` sends a write to the emulator itself (so it is applied) and
    answers 500, which the SDK retries with the same request: DynamoDB applied it, the answer was lost;
    `pass` lets one write through, for a fault meant for a later one; `held` keeps a write back, as a
    caller frozen mid-call would, and kills the caller (its client has given up on it): the write
    lands when `land_held` says. A `crash` hook kills the process before a matching call leaves.
    `dies before` kills the caller as the write would leave; `dies after` lets it apply, then kills
    the caller before it reads the answer.
    """

    http: urllib3.PoolManager
    pending: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    crash_when: Callable[[str, dict[str, Any]], bool] | None = None
    # Another actor's step, run once just before this client's first write to a job: what it does
    # lands between this actor's read and its conditional write.
    race: Callable[[str], None] | None = None
    held: list[tuple[str, str, Any, dict[str, Any]]] = field(default_factory=list)

    def arm(self, kind: str, count: int) -> None:
        self.pending.extend([kind] * count)

    def reset(self) -> None:
        self.pending.clear()
        self.crash_when = None
        self.race = None
        self.held.clear()

    def land_held(self) -> int:
        """Sends the oldest write kept back, as it was signed then; returns the HTTP status."""
        method, url, body, headers = self.held.pop(0)
        return int(self.http.request(method, url, body=body, headers=headers).status)

    def before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        operation = _operation(request)
        if self.race is not None and operation in ("UpdateItem", "TransactWriteItems"):
            job_id = written_job(operation, _body(request))
            if job_id is not None:
                race, self.race = self.race, None
                self.counts["race"] += 1
                race(job_id)
        if self.crash_when is not None and self.crash_when(operation, _body(request)):
            self.crash_when = None
            self.counts["crash"] += 1
            raise Crash(operation)
        if not self.pending:
            return None
        kind = self.pending[0]
        if kind != "throttle" and operation not in DYNAMODB_WRITES:
            return None
        self.pending.pop(0)
        if kind == "pass":  # this write goes through: the fault is for a later one
            return None
        self.counts[f"{kind} {operation}"] += 1
        if kind == "throttle":
            return error_response(request, "ThrottlingException")
        if kind == "conflict":
            return error_response(request, "TransactionConflictException")
        if kind == "held" or kind.startswith("dies"):
            self._die(kind, operation, request)
        self.http.request(request.method, request.url, body=request.body, headers=dict(request.headers))
        return error_response(request, "InternalServerError", status=500)

    def _die(self, kind: str, operation: str, request: Any) -> None:
        """The caller dies at this write: `held` keeps it for later, `dies after` lets it apply."""
        if kind == "held":
            self.held.append((request.method, request.url, request.body, dict(request.headers)))
            raise Crash(f"{operation} held")
        self.counts["crash"] += 1
        if kind == "dies after":
            self.http.request(request.method, request.url, body=request.body, headers=dict(request.headers))
        raise Crash(f"{kind.removeprefix('dies ')} {operation}")


def written_job(operation: str, body: dict[str, Any]) -> str | None:
    """The id of the job an UpdateItem or a transaction writes, or None when it writes no job."""
    if operation == "TransactWriteItems":
        body = next((entry["Update"] for entry in body.get("TransactItems", []) if "Update" in entry), {})
    key = body.get("Key", {})
    if key.get(c.SORT_KEY, {}).get("S") != JOB_SK:
        return None
    return str(key[c.PARTITION_KEY]["S"]).removeprefix("JOB#")


@dataclass
class Sent:
    """One message the model holds: what SQS would deliver, at least once, after its delay."""

    seq: int
    message: JobMessage
    visible_at: int

    def __repr__(self) -> str:
        return f"<msg#{self.seq} for job {self.message.job_id[3]} due={self.message.due_at}>"


@dataclass
class SqsBag:
    """Every SQS send of one client lands here instead of in a queue (see module docstring).

    `refused` fails the next send without delivering it; `lost` delivers it and fails the answer;
    `pass` lets it through, for a fault meant for a later one. `dies before` kills the sender as the
    send would leave; `dies after` delivers it, then kills the sender before it reads the answer.
    """

    now: Callable[[], int]
    on_job_message: Callable[[JobMessage, int], None]
    on_dead_letter: Callable[[dict[str, Any]], None]
    pending: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    crash_on_dead_letter: bool = False

    def arm(self, kind: str, count: int) -> None:
        self.pending.extend([kind] * count)

    def reset(self) -> None:
        self.pending.clear()
        self.crash_on_dead_letter = False

    def before_send(self, request: Any, **_: Any) -> AWSResponse | None:
        operation = _operation(request)
        if operation not in ("SendMessageBatch", "SendMessage"):
            return None
        params = _body(request)
        if operation == "SendMessage" and self.crash_on_dead_letter:
            self.crash_on_dead_letter = False
            self.counts["crash"] += 1
            raise Crash(operation)
        fault = self.pending.pop(0) if self.pending else None
        if fault is not None and fault != "pass":
            self.counts[f"{fault} {operation}"] += 1
        if fault == "refused":
            return _sqs_error(request)
        if fault == "dies before":
            raise Crash(f"before {operation}")
        answer = self._accept(operation, params)
        if fault == "dies after":
            raise Crash(f"after {operation}")
        return _sqs_error(request) if fault == "lost" else answer

    def _accept(self, operation: str, params: dict[str, Any]) -> AWSResponse:
        if operation == "SendMessage":
            self.on_dead_letter(json.loads(params["MessageBody"]))
            return _json_response({"MessageId": str(uuid.uuid4()), **_md5(params["MessageBody"])})
        successful = []
        for entry in params["Entries"]:
            visible = self.now() + int(entry.get("DelaySeconds", 0)) * 1000
            self.on_job_message(JobMessage.model_validate_json(entry["MessageBody"]), visible)
            successful.append(
                {"Id": entry["Id"], "MessageId": str(uuid.uuid4()), **_md5(entry["MessageBody"])}
            )
        return _json_response({"Successful": successful, "Failed": []})


def _md5(body: str) -> dict[str, str]:
    return {"MD5OfMessageBody": hashlib.md5(body.encode()).hexdigest()}


def _json_response(data: dict[str, Any]) -> AWSResponse:
    body = json.dumps(data).encode()
    return AWSResponse("", 200, {"Content-Type": SQS_JSON, "x-amzn-RequestId": str(uuid.uuid4())}, _Raw(body))


def _sqs_error(request: Any) -> AWSResponse:
    # A 400 the SDK does not retry: the dispatcher's own retries (and then the release) take over.
    body = json.dumps({"__type": "com.amazonaws.sqs#InternalError", "message": "injected"}).encode()
    headers = {"Content-Type": SQS_JSON, "x-amzn-query-error": "InternalError;Sender"}
    return AWSResponse(request.url, 400, headers, _Raw(body))


class _Raw:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data

    def read(self, *_: Any) -> bytes:
        return self._data


class InlineExecutor:
    """A ThreadPoolExecutor stand-in that runs everything at once, in order, on the calling thread.

    The tick claims in a pool and sends from a second thread; run inline, the order of its calls (and
    so which call an armed fault hits) is the same on every replay, which shrinking needs.
    """

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    def __enter__(self) -> InlineExecutor:
        return self

    def __exit__(self, *_: Any) -> None:
        return None

    def map(self, fn: Callable[..., Any], *iterables: Any) -> Any:
        return [fn(*args) for args in zip(*iterables, strict=False)]

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


class NoWait:
    """The time module without its waits: an SDK retry or a repeated write happens at once (the
    model keeps its own clock, and a wait would only slow the examples down)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(_seconds: float) -> None:
        return None


class Ids:
    """Job ids in the ULID alphabet, the same on every replay of an example (ids pick index shards):
    the label of the job being created, then how many jobs that label was given before."""

    def __init__(self) -> None:
        self.label = "A"
        self.given: Counter[str] = Counter()

    def reset(self) -> None:
        self.given.clear()

    def __call__(self) -> str:
        self.given[self.label] += 1
        return f"01K{self.label}{self.given[self.label]:022d}"
