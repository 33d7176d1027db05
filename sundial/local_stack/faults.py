"""Faults the emulator injects on request (`sundial emulator --faults`): answers lost after the
write, throttles, refused and duplicated SQS sends, each counted at GET /_sundial/faults."""

from __future__ import annotations

import io
import json
import random
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sundial.local_stack.state.app import WsgiApp, whole_response

FAULTS_ENV = "SUNDIAL_EMULATOR_FAULTS"
FAULT_SEED_ENV = "SUNDIAL_EMULATOR_FAULT_SEED"
FAULTS_PATH = "/_sundial/faults"
LOST_ANSWER = "lost-answer"
THROTTLE = "throttle"
SQS_REFUSE = "sqs-refuse"
SQS_DUPLICATE = "sqs-duplicate"
FAULT_KINDS = (LOST_ANSWER, THROTTLE, SQS_REFUSE, SQS_DUPLICATE)
_DYNAMODB_WRITES = frozenset({"UpdateItem", "PutItem", "DeleteItem", "TransactWriteItems"})
_SQS_SENDS = frozenset({"SendMessage", "SendMessageBatch"})
_SQS_REFUSABLE = _SQS_SENDS | {"DeleteMessage", "DeleteMessageBatch"}
_AMZ_JSON = "application/x-amz-json-1.0"


@dataclass(frozen=True)
class FaultSpec:
    """How often each kind of fault strikes, e.g. `lost-answer=0.03,throttle=0.08`; unnamed kinds never."""

    probabilities: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """Raises ValueError naming the part at fault."""
        probabilities: dict[str, float] = {}
        for part in filter(None, (piece.strip() for piece in text.split(","))):
            kind, _, value = (word.strip() for word in part.partition("="))
            if kind not in FAULT_KINDS or not value:
                raise ValueError(f"'{part}': expected KIND=PROBABILITY, KIND one of {', '.join(FAULT_KINDS)}")
            probabilities[kind] = _probability(part, value)
        return cls(probabilities)

    def probability(self, kind: str) -> float:
        return self.probabilities.get(kind, 0.0)

    def __bool__(self) -> bool:
        return any(self.probabilities.values())

    def __str__(self) -> str:
        return ",".join(f"{kind}={p:g}" for kind, p in self.probabilities.items())


def _probability(part: str, value: str) -> float:
    try:
        probability = float(value)
    except ValueError:
        raise ValueError(f"'{part}': '{value}' is not a number") from None
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"'{part}': a probability is between 0 and 1")
    return probability


@dataclass
class _Answer:
    """A whole WSGI response, held so that a fault can look at it and replace it."""

    status: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def ok(self) -> bool:
        return self.status.startswith("2")

    def json(self) -> dict[str, Any]:
        data = json.loads(self.body or b"{}")
        return data if isinstance(data, dict) else {}

    def with_json(self, data: dict[str, Any]) -> _Answer:
        return _Answer(self.status, self.headers, json.dumps(data).encode())

    def send(self, start_response: Callable[..., Any]) -> list[bytes]:
        headers = [(name, value) for name, value in self.headers if name.lower() != "content-length"]
        start_response(self.status, [*headers, ("Content-Length", str(len(self.body)))])
        return [self.body]


def _aws_error(status: str, error_type: str, message: str, *extra: tuple[str, str]) -> _Answer:
    """An error as the JSON protocol spells it, which botocore parses (and retries) as from AWS."""
    headers = [("Content-Type", _AMZ_JSON), ("x-amzn-RequestId", str(uuid.uuid4())), *extra]
    return _Answer(status, headers, json.dumps({"__type": error_type, "message": message}).encode())


def _dynamodb_lost_answer() -> _Answer:
    return _aws_error(
        "500 Internal Server Error",
        "com.amazonaws.dynamodb.v20120810#InternalServerError",
        "Internal server error (injected after the write was applied)",
    )


def _dynamodb_throttled() -> _Answer:
    return _aws_error(
        "400 Bad Request",
        "com.amazonaws.dynamodb.v20120810#ThrottlingException",
        "Rate of requests exceeds the allowed throughput (injected)",
    )


def _sqs_refused() -> _Answer:
    # SQS on the JSON protocol names the error for query-compatible clients in this header too.
    return _aws_error(
        "500 Internal Server Error",
        "com.amazonaws.sqs#InternalError",
        "Internal error (injected; nothing was applied)",
        ("x-amzn-query-error", "InternalError;Receiver"),
    )


@dataclass(frozen=True)
class _Request:
    """A request with its body read, so that it can be handed to the app twice, or changed."""

    environ: dict[str, Any]
    body: bytes

    @classmethod
    def read(cls, environ: dict[str, Any]) -> _Request:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        return cls(environ, environ["wsgi.input"].read(length) if length else b"")

    def json(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.body or b"{}")
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def with_json(self, data: dict[str, Any]) -> _Request:
        return _Request(self.environ, json.dumps(data).encode())

    def call(self, app: WsgiApp) -> _Answer:
        environ = {**self.environ, "wsgi.input": io.BytesIO(self.body), "CONTENT_LENGTH": str(len(self.body))}
        return _Answer(*whole_response(app, environ))


class FaultCounts:
    """How many faults of each kind were injected; a batch counts each entry it refused or doubled."""

    def __init__(self) -> None:
        self._counts = dict.fromkeys(FAULT_KINDS, 0)
        self._lock = threading.Lock()

    def add(self, kind: str, count: int = 1) -> None:
        with self._lock:
            self._counts[kind] += count

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class FaultyApp:
    """Wraps the emulator's app with AWS's misbehaviour, each kind at its probability:

    - lost-answer: a DynamoDB write (UpdateItem, PutItem, DeleteItem, TransactWriteItems) is applied,
      then answered 500 InternalServerError. The SDK retries it, and the retry of a conditional
      write fails its condition on the first one's own effect.
    - throttle: any DynamoDB call is answered 400 ThrottlingException, unapplied.
    - sqs-refuse: SendMessage and DeleteMessage are answered 500, unapplied; in a batch, single entries
      are refused under `Failed` instead, which the SDK does not retry (as SQS does in part-failures).
    - sqs-duplicate: a sent message is enqueued twice, as SQS's at-least-once delivery may do.

    GET /_sundial/faults answers the spec, the seed and the counts, so a test can see the faults fired.
    """

    def __init__(self, app: WsgiApp, spec: FaultSpec, seed: int) -> None:
        self._app = app
        self.spec = spec
        self.seed = seed
        self.counts = FaultCounts()
        # Seeded, so a failure can be chased again; concurrent requests still interleave as they will.
        self._random = random.Random(seed)
        self._random_lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == FAULTS_PATH:
            return self._report().send(start_response)
        service, _, action = str(environ.get("HTTP_X_AMZ_TARGET", "")).partition(".")
        if self.spec and service.startswith("DynamoDB_"):
            return self._dynamodb(action, _Request.read(environ)).send(start_response)
        if self.spec and service == "AmazonSQS" and action in _SQS_REFUSABLE:
            return self._sqs(action, _Request.read(environ)).send(start_response)
        return self._app(environ, start_response)

    def _report(self) -> _Answer:
        report = {"spec": str(self.spec), "seed": self.seed, "injected": self.counts.snapshot()}
        return _Answer("200 OK", [("Content-Type", "application/json")], json.dumps(report).encode())

    def _strikes(self, kind: str) -> bool:
        probability = self.spec.probability(kind)
        if probability <= 0.0:
            return False  # no draw: adding a kind to a spec leaves the others' draws as they were
        with self._random_lock:
            return self._random.random() < probability

    def _dynamodb(self, action: str, request: _Request) -> _Answer:
        if self._strikes(THROTTLE):
            self.counts.add(THROTTLE)
            return _dynamodb_throttled()
        lose = action in _DYNAMODB_WRITES and self._strikes(LOST_ANSWER)
        answer = request.call(self._app)
        if lose and answer.ok:  # a write that failed its condition changed nothing: no answer to lose
            self.counts.add(LOST_ANSWER)
            return _dynamodb_lost_answer()
        return answer

    def _sqs(self, action: str, request: _Request) -> _Answer:
        params = request.json()
        if action.endswith("Batch") and params is not None:
            return self._sqs_batch(action, request, params)
        if self._strikes(SQS_REFUSE):
            self.counts.add(SQS_REFUSE)
            return _sqs_refused()
        answer = request.call(self._app)
        if action in _SQS_SENDS and answer.ok and self._strikes(SQS_DUPLICATE):
            request.call(self._app)
            self.counts.add(SQS_DUPLICATE)
        return answer

    def _sqs_batch(self, action: str, request: _Request, params: dict[str, Any]) -> _Answer:
        entries = [entry for entry in params.get("Entries", []) if isinstance(entry, dict)]
        refused = [entry for entry in entries if self._strikes(SQS_REFUSE)]
        kept = [entry for entry in entries if not any(entry is r for r in refused)]
        if not refused:
            answer = request.call(self._app)
        elif kept:
            answer = request.with_json({**params, "Entries": kept}).call(self._app)
        else:  # SQS refuses an empty batch, so answer for the entries we refused ourselves
            answer = _Answer("200 OK", [("Content-Type", _AMZ_JSON)], b'{"Successful": []}')
        self.counts.add(SQS_REFUSE, len(refused))
        if action in _SQS_SENDS and answer.ok:
            self._send_again(request, params, kept, answer)
        return _with_failures(answer, refused)

    def _send_again(
        self, request: _Request, params: dict[str, Any], sent: list[dict[str, Any]], answer: _Answer
    ) -> None:
        accepted = {str(entry.get("Id")) for entry in answer.json().get("Successful", [])}
        again = [e for e in sent if str(e.get("Id")) in accepted and self._strikes(SQS_DUPLICATE)]
        if again:
            request.with_json({**params, "Entries": again}).call(self._app)
            self.counts.add(SQS_DUPLICATE, len(again))


def _with_failures(answer: _Answer, refused: list[dict[str, Any]]) -> _Answer:
    """The batch answer with the refused entries under `Failed`, as SQS reports a part-failure."""
    if not refused or not answer.ok:
        return answer
    data = answer.json()
    failed = [
        {"Id": entry.get("Id"), "SenderFault": False, "Code": "InternalError", "Message": "injected"}
        for entry in refused
    ]
    return answer.with_json({**data, "Failed": [*data.get("Failed", []), *failed]})


def new_seed() -> int:
    return random.SystemRandom().randrange(2**31)
