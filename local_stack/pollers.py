"""Feeds the worker handler from one queue, as a Lambda event source mapping with batch size 1 does.

Each queue has its own pool of worker threads, so a flood of low-priority jobs never holds up high
ones (invariant 7). A poller receives only as many messages as it has idle threads, and each message
goes to its own thread as a one-record event: a message never waits in a batch behind a slow job,
nor in a local buffer where it could not be seen by anything else.

Short polls, often: a delayed message that becomes visible wakes no long poll on the emulator and
could come back up to a second late; messages arrive a second or two early (invariant 6) and the
worker waits out the rest, so a 150 ms poll keeps starts on their instant.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from local_stack.lambda_context import new_context
from local_stack.sqs_events import failed_ids, sqs_event, sqs_record
from shared import constants as c

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]
POLL_INTERVAL_SECONDS = 0.15
ERROR_PAUSE_SECONDS = 1.0
RECEIVE_LIMIT = 10  # SQS's largest ReceiveMessage


class QueuePoller:
    def __init__(
        self,
        sqs: SQSClient,
        priority: c.Priority,
        queue_url: str,
        capacity: int,
        handler: Handler,
        region: str,
        stop: threading.Event,
    ) -> None:
        self.priority = priority
        self._sqs = sqs
        self._url = queue_url
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        self._arn = attributes["Attributes"]["QueueArn"]
        self._capacity = capacity
        self._idle = capacity
        self._changed = threading.Condition()
        self._handoff: queue.SimpleQueue[MessageTypeDef] = queue.SimpleQueue()
        self._handler = handler
        self._region = region
        self._stop = stop
        # Daemon threads: a stop that outlasts its grace leaves unfinished attempts to the lease.
        self._threads = [
            threading.Thread(target=self._loop, name=f"poll-{priority.value}", daemon=True),
            *(
                threading.Thread(target=self._work, name=f"worker-{priority.value}-{n}", daemon=True)
                for n in range(capacity)
            ),
        ]

    def start(self) -> QueuePoller:
        for thread in self._threads:
            thread.start()
        return self

    def drain(self, timeout: float) -> bool:
        """After the stop: waits up to `timeout` for the attempts in flight; True if none is left."""
        self._threads[0].join(timeout)
        with self._changed:
            return self._changed.wait_for(lambda: self._idle == self._capacity, timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            idle = self._take_idle()
            if idle == 0:
                continue
            try:
                messages = self._receive(idle)
            except Exception:
                logger.exception("receiving from the %s queue failed", self.priority.value)
                messages = []
                self._stop.wait(ERROR_PAUSE_SECONDS)
            self._give_back(idle - len(messages))
            for message in messages:
                self._handoff.put(message)
            if not messages:
                self._stop.wait(POLL_INTERVAL_SECONDS)

    def _take_idle(self) -> int:
        """Reserves the idle threads (up to a receive's limit); 0 if none became idle in a poll period."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._idle > 0, POLL_INTERVAL_SECONDS):
                return 0
            taken = min(self._idle, RECEIVE_LIMIT)
            self._idle -= taken
            return taken

    def _give_back(self, count: int) -> None:
        with self._changed:
            self._idle += count
            self._changed.notify_all()

    def _receive(self, count: int) -> list[MessageTypeDef]:
        response = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=0,  # never a long poll: see the module's docstring
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return list(response.get("Messages", []))

    def _work(self) -> None:
        while True:
            message = self._handoff.get()
            try:
                self._invoke(message)
            except Exception:
                # As when a Lambda invocation fails: the message comes back after its visibility timeout.
                logger.exception("the worker handler failed on message %s", message.get("MessageId"))
            finally:
                self._give_back(1)

    def _invoke(self, message: MessageTypeDef) -> None:
        record = sqs_record(dict(message), self._arn, self._region)
        response = self._handler(sqs_event([record]), new_context("worker", self._region))
        if record["messageId"] in failed_ids(response):
            return  # left for redelivery after the visibility timeout, as the event source mapping does
        self._sqs.delete_message(QueueUrl=self._url, ReceiptHandle=record["receiptHandle"])
