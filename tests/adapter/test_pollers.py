"""The local stack's poller hands the worker batches as the deployed event source mapping does."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from sundial.contract.vocabulary import Priority
from sundial.local_stack.pollers import QueuePoller
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c


def test_a_poller_hands_over_batches_and_deletes_all_but_the_reported_failures(
    resources: Resources, sqs: Any
) -> None:
    url = resources.queue_urls[Priority.LOW]
    sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": json.dumps({"n": n})} for n in range(10)]
    )
    events: list[list[int]] = []
    handled = threading.Event()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        bodies = [json.loads(record["body"])["n"] for record in event["Records"]]
        events.append(bodies)
        failed = [r["messageId"] for r in event["Records"] if json.loads(r["body"])["n"] == 3]
        if sum(len(batch) for batch in events) >= 10:
            handled.set()
        return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failed]}

    stop = threading.Event()
    # Room for a whole batch: the messages one receive returns must come in one event, not one apiece.
    poller = QueuePoller(sqs, Priority.LOW, url, c.WORKER_BATCH_SIZE, handler, "us-east-1", stop).start()
    try:
        assert handled.wait(10)
    finally:
        stop.set()
        assert poller.drain(5)

    assert sorted(n for batch in events for n in batch) == list(range(10))
    assert max(len(batch) for batch in events) > 1
    # Deleted but for the failure, which waits out its visibility timeout (the queue's 5,400 s).
    time.sleep(0.2)
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert (
        attributes["ApproximateNumberOfMessages"],
        attributes["ApproximateNumberOfMessagesNotVisible"],
    ) == (
        "0",
        "1",
    )


def test_a_poller_never_runs_more_jobs_at_once_than_its_pool_has_places(
    resources: Resources, sqs: Any
) -> None:
    """Places are jobs, not invocations: a pool of three never has a fourth job running, however the
    messages are batched, so a flood on one queue cannot pile up writes on the shared emulator."""
    url = resources.queue_urls[Priority.LOW]
    total = 12
    for start in (0, 10):
        entries = [
            {"Id": str(n), "MessageBody": json.dumps({"n": n})} for n in range(start, min(start + 10, total))
        ]
        sqs.send_message_batch(QueueUrl=url, Entries=entries)
    lock = threading.Lock()
    running = 0
    most = 0
    handled: list[int] = []
    done = threading.Event()

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        nonlocal running, most
        with lock:
            running += len(event["Records"])
            most = max(most, running)
        time.sleep(0.3)
        with lock:
            running -= len(event["Records"])
            handled.extend(json.loads(record["body"])["n"] for record in event["Records"])
            if len(handled) >= total:
                done.set()
        return {"batchItemFailures": []}

    stop = threading.Event()
    poller = QueuePoller(sqs, Priority.LOW, url, 3, handler, "us-east-1", stop).start()
    try:
        assert done.wait(20)
    finally:
        stop.set()
        assert poller.drain(5)

    assert sorted(handled) == list(range(total))
    assert most == 3
