"""What the emulator changes in moto to make it faster keeps moto's answers: through boto3, over HTTP."""

from __future__ import annotations

import uuid
from typing import Any
from unittest import mock

import pytest
from botocore.exceptions import ClientError
from moto.sqs.models import Queue, sqs_backends

from local_stack.resources import Resources
from shared import constants as c

ACCOUNT = "123456789012"
REGION = "us-east-1"


def _queue(sqs: Any, retention_seconds: int) -> tuple[str, Queue]:
    name = f"retention-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name, Attributes={"MessageRetentionPeriod": str(retention_seconds)})[
        "QueueUrl"
    ]
    return url, sqs_backends[ACCOUNT][REGION].get_queue(name)


def test_a_receive_returns_a_message_within_its_queues_retention_and_not_one_past_it(sqs: Any) -> None:
    kept_url, _ = _queue(sqs, retention_seconds=60)
    sqs.send_message(QueueUrl=kept_url, MessageBody="kept")
    expired_url, expired_queue = _queue(sqs, retention_seconds=60)
    sqs.send_message(QueueUrl=expired_url, MessageBody="expired")
    (expired,) = expired_queue._messages
    expired.sent_timestamp -= 61_000

    kept = sqs.receive_message(QueueUrl=kept_url, MaxNumberOfMessages=10).get("Messages", [])
    gone = sqs.receive_message(QueueUrl=expired_url, MaxNumberOfMessages=10).get("Messages", [])

    assert [message["Body"] for message in kept] == ["kept"]
    assert gone == []


def test_a_receive_builds_none_of_the_queues_attributes(sqs: Any) -> None:
    """moto's own check built them all for each message returned, counting the queue each time."""
    url, _ = _queue(sqs, retention_seconds=3600)
    sqs.send_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "MessageBody": str(n)} for n in range(5)])

    with mock.patch.object(Queue, "attributes", new_callable=mock.PropertyMock, return_value={}) as built:
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]

    assert len(received) == 5
    assert built.call_count == 0


def _set(
    dynamodb: Any, table: str, key: str, value: str, condition_value: str | None = None
) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    values = {":v": {"S": value}, ":one": {"N": "1"}, ":zero": {"N": "0"}}
    if condition_value is not None:
        extra["ConditionExpression"] = "#v = :seen"
        values[":seen"] = {"S": condition_value}
    item: dict[str, Any] = dynamodb.update_item(
        TableName=table,
        Key={c.PARTITION_KEY: {"S": key}, c.SORT_KEY: {"S": "JOB"}},
        UpdateExpression="SET #v = :v, #n = if_not_exists(#n, :zero) + :one",
        ExpressionAttributeNames={"#v": "v", "#n": "n"},
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
        **extra,
    )["Attributes"]
    return item


def test_one_update_expression_used_again_applies_each_writes_own_values(
    dynamodb: Any, resources: Resources
) -> None:
    """The parsed expression is kept and reused: nothing of one write may leak into the next."""
    table = resources.table_name
    first = _set(dynamodb, table, "a", "one")
    second = _set(dynamodb, table, "b", "two")
    again = _set(dynamodb, table, "a", "three", condition_value="one")

    assert (first["v"], first["n"]) == ({"S": "one"}, {"N": "1"})
    assert (second["v"], second["n"]) == ({"S": "two"}, {"N": "1"})
    assert (again["v"], again["n"]) == ({"S": "three"}, {"N": "2"})
    with pytest.raises(ClientError) as refused:
        _set(dynamodb, table, "a", "four", condition_value="one")
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"


def test_a_malformed_update_expression_is_still_refused_each_time(
    dynamodb: Any, resources: Resources
) -> None:
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            dynamodb.update_item(
                TableName=resources.table_name,
                Key={c.PARTITION_KEY: {"S": "x"}, c.SORT_KEY: {"S": "JOB"}},
                UpdateExpression="SET = :v",
                ExpressionAttributeValues={":v": {"S": "x"}},
            )
        assert refused.value.response["Error"]["Code"] == "ValidationException"
    key = {c.PARTITION_KEY: {"S": "x"}, c.SORT_KEY: {"S": "JOB"}}
    assert "Item" not in dynamodb.get_item(TableName=resources.table_name, Key=key)
