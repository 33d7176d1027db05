"""SQS as the model answers it: standard queues with DelaySeconds (0 to 900: more is refused),
batches of ten, visibility timeouts, the in-flight cap (at which a receive silently gets nothing, as
a long poll does) and a redrive to the dead-letter queue after the queue's receive count.

A standard queue delivers at least once and only about in order, and a SendMessageBatch may fail
some of its entries: each at a share of messages drawn from the run's seed, off unless set
(bench/scale/limits.py). A duplicate is a copy left visible by the receive that took the message,
for another receive to take; a message out of order is one a receive passes over, for the next."""

from __future__ import annotations

import heapq
import itertools
import json
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.scale import limits
from sundial.shared import constants as c


@dataclass(eq=False)
class Message:
    id: str
    body: str
    visible_at: float
    receives: int = 0
    receipt: str | None = None


@dataclass
class Queue:
    name: str
    url: str
    arn: str
    dead_letter: Queue | None = None
    waiting: list[tuple[float, int, Message]] = field(default_factory=list)
    in_flight: dict[str, Message] = field(default_factory=dict)
    hidden: list[tuple[float, int, Message, str]] = field(default_factory=list)
    sent: int = 0
    sent_late: int = 0  # messages sent after the instant they carry (a job's due_at)
    copies: int = 0  # messages sent again for an occurrence's instant: all but one fence drops them
    _instants: set[int] = field(default_factory=set)
    cap_hits: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    duplicate_rate: float = 0.0
    out_of_order_rate: float = 0.0
    duplicates: int = 0  # copies a receive left visible, delivered again
    passed_over: int = 0  # visible messages a receive left for a later one

    def put(self, message: Message) -> None:
        heapq.heappush(self.waiting, (message.visible_at, next(_seq), message))
        self.sent += 1
        carried = json.loads(message.body)
        instant = hash((carried.get("job_id"), carried.get("due_at")))
        if instant in self._instants:
            self.copies += 1
        self._instants.add(instant)

    def next_visible(self) -> float | None:
        """When the next message can be received: a waiting one's time, or a hidden one's return."""
        self._expire_hidden()
        times = [self.waiting[0][0]] if self.waiting else []
        times += [self.hidden[0][0]] if self.hidden else []
        return min(times) if times else None

    def visible(self, now_s: float) -> bool:
        self._expire_hidden()
        return bool(self.waiting) and self.waiting[0][0] <= now_s

    def receive(self, now_s: float, most: int, visibility_s: float) -> list[Message]:
        self._expire_hidden()
        got: list[Message] = []
        passed: list[Message] = []
        while self.waiting and self.waiting[0][0] <= now_s and len(got) < most:
            if len(self.in_flight) >= limits.IN_FLIGHT_CAP.value:
                self.cap_hits += 1
                break
            _, _, message = heapq.heappop(self.waiting)
            if self.out_of_order_rate and self.rng.random() < self.out_of_order_rate:
                passed.append(message)
                continue
            message.receives += 1
            if message.receives > c.MAX_RECEIVE_COUNT and self.dead_letter is not None:
                self.dead_letter.put(Message(message.id, message.body, now_s))
                continue
            if self.duplicate_rate and self.rng.random() < self.duplicate_rate:
                # The copy on another server was not hidden: the next receive can take it too.
                self.duplicates += 1
                copy = Message(message.id, message.body, now_s, message.receives)
                heapq.heappush(self.waiting, (now_s, next(_seq), copy))
            message.receipt = secrets.token_hex(8)
            message.visible_at = now_s + visibility_s
            self.in_flight[message.receipt] = message
            self._hide(message)
            got.append(message)
        self.passed_over += len(passed)
        for message in passed:
            heapq.heappush(self.waiting, (message.visible_at, next(_seq), message))
        return got

    def delete(self, receipt: str) -> None:
        self.in_flight.pop(receipt, None)

    def change_visibility(self, receipt: str, seconds: float, now_s: float) -> bool:
        message = self.in_flight.get(receipt)
        if message is None:
            return False
        message.visible_at = now_s + seconds
        self._hide(message)
        return True

    def _hide(self, message: Message) -> None:
        assert message.receipt is not None
        heapq.heappush(self.hidden, (message.visible_at, next(_seq), message, message.receipt))

    def _expire_hidden(self) -> None:
        """Messages whose visibility ran out wait again (looked at lazily, on each receive)."""
        now_s = _clock_now[0]
        while self.hidden and self.hidden[0][0] <= now_s:
            at, _, message, receipt = heapq.heappop(self.hidden)
            if message.receipt != receipt or message.visible_at != at or receipt not in self.in_flight:
                continue  # deleted, or its visibility changed since
            del self.in_flight[receipt]
            message.receipt = None
            heapq.heappush(self.waiting, (message.visible_at, next(_seq), message))


_seq = itertools.count()
_clock_now = [0.0]


class SqsModel:
    def __init__(
        self,
        account: str = "123456789012",
        region: str = "us-east-1",
        rng: random.Random | None = None,
        duplicates: float = limits.DUPLICATE_RATE.value,
        out_of_order: float = limits.OUT_OF_ORDER_RATE.value,
        failed_entries: float = limits.FAILED_ENTRY_RATE.value,
    ) -> None:
        self.queues: dict[str, Queue] = {}
        self._account, self._region = account, region
        self.calls: dict[str, int] = {}
        self.on_put: Callable[[], None] = lambda: None  # after each message a job queue takes
        self.rng = rng or random.Random(0)
        self.duplicates, self.out_of_order, self.failed_entries = duplicates, out_of_order, failed_entries
        self.entries_failed = 0  # SendMessageBatch entries answered as failed by SQS's side
        self.delays_refused = 0  # messages refused for a DelaySeconds out of 0-900

    def create(self, name: str, dead_letter: Queue | None = None) -> Queue:
        url = f"https://sqs.{self._region}.amazonaws.com/{self._account}/{name}"
        queue = Queue(name, url, f"arn:aws:sqs:{self._region}:{self._account}:{name}", dead_letter)
        queue.rng = self.rng
        queue.duplicate_rate, queue.out_of_order_rate = self.duplicates, self.out_of_order
        self.queues[url] = queue
        return queue

    def answer(self, operation: str, body: bytes, now_s: float) -> tuple[int, dict[str, str], bytes]:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        _clock_now[0] = now_s
        request: dict[str, Any] = json.loads(body or b"{}")
        queue = self.queues.get(request.get("QueueUrl", ""))
        if queue is None:
            return _error("QueueDoesNotExist", "The specified queue does not exist.")
        if operation == "SendMessageBatch":
            return self._send_batch(queue, request, now_s)
        if operation == "SendMessage":
            delay = request.get("DelaySeconds", 0)
            if not _valid_delay(delay):
                self.delays_refused += 1
                return _error("InvalidParameterValue", _delay_refusal(delay))
            message = Message(secrets.token_hex(8), request["MessageBody"], now_s + delay)
            queue.put(message)
            return 200, {}, json.dumps({"MessageId": message.id, "MD5OfMessageBody": "0" * 32}).encode()
        if operation == "ChangeMessageVisibility":
            if not queue.change_visibility(request["ReceiptHandle"], request["VisibilityTimeout"], now_s):
                return _error("ReceiptHandleIsInvalid", "The receipt handle is not valid.")
            return 200, {}, b"{}"
        return _error("UnsupportedOperation", f"the model does not answer {operation}")

    def _send_batch(
        self, queue: Queue, request: dict[str, Any], now_s: float
    ) -> tuple[int, dict[str, str], bytes]:
        entries = request["Entries"]
        if len(entries) > limits.BATCH_ENTRIES.value:
            return _error("TooManyEntriesInBatchRequest", "Maximum number of entries per request are 10.")
        successful, failed = [], []
        for entry in entries:
            delay = entry.get("DelaySeconds", 0)
            if not _valid_delay(delay):
                self.delays_refused += 1
                failed.append(_failed(entry, "InvalidParameterValue", _delay_refusal(delay), sender=True))
                continue
            if self.failed_entries and self.rng.random() < self.failed_entries:
                self.entries_failed += 1
                failed.append(_failed(entry, "InternalError", "An internal error occurred.", sender=False))
                continue
            if json.loads(entry["MessageBody"]).get("due_at", now_s * 1000) < now_s * 1000:
                queue.sent_late += 1
            message = Message(secrets.token_hex(8), entry["MessageBody"], now_s + delay)
            queue.put(message)
            self.on_put()
            successful.append({"Id": entry["Id"], "MessageId": message.id, "MD5OfMessageBody": "0" * 32})
        return 200, {}, json.dumps({"Successful": successful, "Failed": failed}).encode()


def _valid_delay(delay: float) -> bool:
    return 0 <= delay <= limits.MAX_DELAY_S.value


def _delay_refusal(delay: float) -> str:
    return (
        f"Value {delay} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and "
        f"<= {limits.MAX_DELAY_S.value:.0f}."
    )


def _failed(entry: dict[str, Any], code: str, message: str, sender: bool) -> dict[str, Any]:
    return {"Id": entry["Id"], "SenderFault": sender, "Code": code, "Message": message}


def _error(code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = {"__type": f"com.amazonaws.sqs#{code}", "message": message}
    return 400, {"x-amzn-query-error": f"AWS.SimpleQueueService.{code};Sender"}, json.dumps(body).encode()
