"""Feeds the worker handler from one queue, as the deployed event source mapping does: batches of up
to ten (infra/functions.py), no batching window, successes deleted in one call, failures left for
redelivery.

Each queue has its own pool, sized in jobs at once, so a flood of low-priority jobs never holds up
high ones (invariant 7). A poller receives only as many messages as its pool has free places (up to
a batch), and what one receive returns goes to one invocation thread as one event; the handler runs
the records side by side, so a message never waits behind a slow job, nor in a local buffer where
it could not be seen by anything else. Places are counted in jobs rather than invocations because
every job here writes to one emulator, which runs a few dozen executions a second: ten jobs per
invocation thread would let a low flood queue hundreds of writes ahead of a high job's fence.

Long polls of a second, as the event source mapping's are long (of 20 s): the emulator wakes a waiting
poll when a delayed message becomes visible (sundial/local_stack/emulator.py), so a message is
received on its instant, and an idle stack asks each queue once a second rather than every 150 ms
(which kept a core 8% busy doing nothing). A second, not 20, so that a stop does not wait for a poll.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sundial.contract.vocabulary import Priority
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.sqs_events import sqs_event, sqs_record, succeeded
from sundial.shared import constants as c

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef, MessageTypeDef

logger = logging.getLogger(__name__)
Handler = Callable[[dict[str, Any], Any], Any]
POLL_INTERVAL_SECONDS = 0.15
LONG_POLL_SECONDS = 1
ERROR_PAUSE_SECONDS = 1.0


class QueuePoller:
    def __init__(
        self,
        sqs: SQSClient,
        priority: Priority,
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
        self._capacity = capacity  # jobs at once
        self._idle = capacity
        self._changed = threading.Condition()
        self._handoff: queue.SimpleQueue[list[MessageTypeDef]] = queue.SimpleQueue()
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
            places = self._take_idle()
            if not places:
                continue
            try:
                messages = self._receive(places)
            except Exception:
                logger.exception("receiving from the %s queue failed", self.priority.value)
                messages = []
                self._stop.wait(ERROR_PAUSE_SECONDS)
            self._give_back(places - len(messages))
            if messages:
                self._handoff.put(messages)

    def _take_idle(self) -> int:
        """Reserves the free places for the next batch, up to a batch; 0 if none came free in a poll
        period."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._idle > 0, POLL_INTERVAL_SECONDS):
                return 0
            places = min(self._idle, c.WORKER_BATCH_SIZE)
            self._idle -= places
            return places

    def _give_back(self, places: int) -> None:
        if not places:
            return
        with self._changed:
            self._idle += places
            self._changed.notify_all()

    def _receive(self, places: int) -> list[MessageTypeDef]:
        response = self._sqs.receive_message(
            QueueUrl=self._url,
            MaxNumberOfMessages=places,
            WaitTimeSeconds=LONG_POLL_SECONDS,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return list(response.get("Messages", []))

    def _work(self) -> None:
        while True:
            messages = self._handoff.get()
            try:
                self._invoke(messages)
            except Exception:
                # As when a Lambda invocation fails: the batch comes back after its visibility timeout.
                logger.exception(
                    "the worker handler failed on a batch of %d from the %s queue",
                    len(messages),
                    self.priority.value,
                )
            finally:
                self._give_back(len(messages))

    def _invoke(self, messages: list[MessageTypeDef]) -> None:
        records = [sqs_record(dict(message), self._arn, self._region) for message in messages]
        response = self._handler(sqs_event(records), new_context("worker", self._region))
        # Failed records are left for redelivery after the visibility timeout, as the event source
        # mapping leaves them; the rest go in one DeleteMessageBatch.
        done: list[DeleteMessageBatchRequestEntryTypeDef] = [
            {"Id": str(n), "ReceiptHandle": record["receiptHandle"]}
            for n, record in enumerate(succeeded(records, response))
        ]
        if done:
            self._sqs.delete_message_batch(QueueUrl=self._url, Entries=done)
