"""A record the worker could not start goes back to its queue after about its job's lease, not after
the queue's visibility timeout: failing records cannot pile up against SQS's in-flight cap."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from sundial.contract.vocabulary import Priority
from sundial.functions import clients, worker
from sundial.functions.worker import handler
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c
from sundial.shared import lifecycle
from tests.functions.conftest import api_event, invoke_api

NOOP = {"type": "python", "handler": "noop"}
# The emulator's queues for this test keep a failed record as long as SQS's own would.
HELD_FOR_SECONDS = c.QUEUE_VISIBILITY_TIMEOUT_SECONDS


def received_record(sqs: Any, url: str) -> dict[str, Any]:
    """One message as the event source hands it over: received, so it is in flight."""
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, AttributeNames=["All"])["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {},
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": arn,
        "awsRegion": "us-east-1",
    }


def fence_fails(job_id: str) -> None:
    def fault(params: dict[str, Any], **_: Any) -> None:
        if params["Key"]["pk"]["S"].endswith(job_id):
            raise ConnectionError("dynamodb unreachable")

    clients.clients().dynamodb().meta.events.register("provide-client-params.dynamodb.UpdateItem", fault)


def visibility_changes(sqs: Any) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []
    sqs.meta.events.register(
        "provide-client-params.sqs.ChangeMessageVisibility", lambda params, **_: changes.append(dict(params))
    )
    return changes


@pytest.fixture
def slow_queues(env: Resources, sqs: Any) -> Resources:
    for url in env.queue_urls.values():
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": str(HELD_FOR_SECONDS)})
    return env


def test_a_record_that_fails_at_its_fence_comes_back_after_its_lease(
    slow_queues: Resources, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = invoke_api(api_event("POST", "/jobs", {"target": NOOP, "timeout_seconds": 30}))
    job_id = answer.body["id"]
    url = slow_queues.queue_urls[Priority.MEDIUM]
    record = received_record(sqs, url)
    fence_fails(job_id)
    changes = visibility_changes(clients.clients().sqs())
    lease = lifecycle.lease_seconds(30)
    # The lease is a minute and more; the emulator's queue is asked for a second instead, to watch
    # the record come back rather than wait for it.
    monkeypatch.setattr(worker.lifecycle, "lease_seconds", lambda _: 1)

    result = handler({"Records": [record]}, new_context("worker", "us-east-1"))

    assert result == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert [(change["QueueUrl"], change["VisibilityTimeout"]) for change in changes] == [(url, 1)]
    back = []
    for _ in range(20):
        back = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=1).get("Messages", [])
        if back:
            break
    assert [json.loads(m["Body"])["job_id"] for m in back] == [job_id]
    monkeypatch.undo()
    assert lease < HELD_FOR_SECONDS / 10  # what it asks for outside this test: about the lease


def test_an_early_record_that_could_not_be_deferred_comes_back_at_its_instant(
    slow_queues: Resources, sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = slow_queues.queue_urls[Priority.HIGH]
    due_at = int(time.time() * 1000) + 200_000
    body = {"job_id": "01JD8ZQ3V6X4M7N2P5R8T1W9YB", "token": "0" * 16, "due_at": due_at, "priority": "high"}
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
    record = received_record(sqs, url)
    changes = visibility_changes(clients.clients().sqs())
    monkeypatch.setattr(clients.worker_dispatcher(), "send", list)  # every send fails

    result = handler({"Records": [record]}, new_context("worker", "us-east-1"))

    assert result == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    [change] = changes
    assert 195 <= change["VisibilityTimeout"] <= 200
