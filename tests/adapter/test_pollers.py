"""The local stack's poller hands the worker batches as the deployed event source mapping does."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from local_stack.pollers import QueuePoller
from local_stack.resources import Resources
from shared import constants as c


def test_a_poller_hands_over_batches_and_deletes_all_but_the_reported_failures(
    resources: Resources, sqs: Any
) -> None:
    url = resources.queue_urls[c.Priority.LOW]
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
    # One invocation at a time: every message it receives must come in one event, not one apiece.
    poller = QueuePoller(sqs, c.Priority.LOW, url, 1, handler, "us-east-1", stop).start()
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
