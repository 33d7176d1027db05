"""What the emulator changes in moto to make it faster keeps moto's answers: through boto3, over HTTP."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any
from unittest import mock

import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.core.utils import unix_time_millis
from moto.dynamodb.models.table import Table
from moto.sqs.models import Queue, sqs_backends

from sundial.local_stack import index_partitions
from sundial.local_stack.resources import Resources
from sundial.shared import constants as c

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


# --- index queries read one partition ---------------------------------------------------------------

_SHARDS = ["a", "b", "c"]


def _index_table(dynamodb: Any) -> str:
    name = f"partitions-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": attribute, "AttributeType": kind}
            for attribute, kind in (("pk", "S"), ("sh", "S"), ("at", "N"))
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_shard",
                "KeySchema": [
                    {"AttributeName": "sh", "KeyType": "HASH"},
                    {"AttributeName": "at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            }
        ],
    )
    return name


def _every_answer(dynamodb: Any, table: str) -> list[Any]:
    """Each shard's query, newest first and oldest first, paged two at a time, with a count."""
    answers: list[Any] = []
    for shard in _SHARDS:
        for forward in (True, False):
            query = {
                "TableName": table,
                "IndexName": "by_shard",
                "KeyConditionExpression": "sh = :s AND #at > :from",
                "ExpressionAttributeNames": {"#at": "at"},
                "ExpressionAttributeValues": {":s": {"S": shard}, ":from": {"N": "2"}},
                "ScanIndexForward": forward,
                "Limit": 2,
            }
            pages, start = [], None
            while True:
                answer = dynamodb.query(**query, **({"ExclusiveStartKey": start} if start else {}))
                pages.append((answer["Items"], answer.get("LastEvaluatedKey")))
                start = answer.get("LastEvaluatedKey")
                if not start:
                    break
            counted = dynamodb.query(**query, Select="COUNT")
            answers.append((pages, counted["Count"]))
    return answers


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=st.lists(
        st.tuples(
            st.sampled_from(["put", "move", "drop", "unshard"]),
            st.integers(0, 7),
            st.sampled_from(_SHARDS),
            st.integers(0, 9),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_an_index_query_answers_as_moto_does_after_every_kind_of_write(
    dynamodb: Any, writes: list[tuple[str, int, str, int]]
) -> None:
    table = _index_table(dynamodb)
    for kind, key, shard, at in writes:
        item_key = {"pk": {"S": f"job-{key}"}}
        if kind == "put":
            dynamodb.put_item(TableName=table, Item={**item_key, "sh": {"S": shard}, "at": {"N": str(at)}})
        elif kind == "move":
            dynamodb.update_item(
                TableName=table,
                Key=item_key,
                UpdateExpression="SET sh = :s, #at = :at",
                ExpressionAttributeNames={"#at": "at"},
                ExpressionAttributeValues={":s": {"S": shard}, ":at": {"N": str(at)}},
            )
        elif kind == "drop":
            dynamodb.delete_item(TableName=table, Key=item_key)
        else:  # the item leaves the sparse index
            dynamodb.update_item(TableName=table, Key=item_key, UpdateExpression="REMOVE sh")

        from_partitions = _every_answer(dynamodb, table)
        with mock.patch.object(Table, "query", index_partitions._Patched.query):
            from_moto = _every_answer(dynamodb, table)

        assert from_partitions == from_moto


def _long_poll(sqs: Any, url: str, answers: dict[str, Any]) -> threading.Thread:
    def poll() -> None:
        answers["messages"] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5).get("Messages", [])
        answers["at_ms"] = unix_time_millis()

    thread = threading.Thread(target=poll)
    thread.start()
    return thread


def test_a_long_poll_answers_a_delayed_message_when_its_delay_ends_not_at_its_next_second(sqs: Any) -> None:
    """moto's long poll checks again each second from its start; a message whose delay ends between
    two checks was answered up to a second late (0.8 s here). The emulator wakes it at that instant."""
    url, queue = _queue(sqs, retention_seconds=60)
    answers: dict[str, Any] = {}
    poll = _long_poll(sqs, url, answers)
    time.sleep(0.2)
    sqs.send_message(QueueUrl=url, MessageBody="delayed", DelaySeconds=1)
    (message,) = queue._messages
    poll.join(10)
    assert [m["Body"] for m in answers["messages"]] == ["delayed"]
    assert 0 <= answers["at_ms"] - message.delayed_until < 400


def test_a_long_poll_answers_a_message_whose_visibility_timeout_ends_at_that_instant(sqs: Any) -> None:
    url, queue = _queue(sqs, retention_seconds=60)
    sqs.send_message(QueueUrl=url, MessageBody="again")
    (first,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=1)["Messages"]
    (message,) = queue._messages
    visible_at = message.visible_at
    time.sleep(0.7)
    answers: dict[str, Any] = {}
    poll = _long_poll(sqs, url, answers)  # its checks each second from now miss that instant by 0.7 s
    poll.join(10)
    assert [m["MessageId"] for m in answers["messages"]] == [first["MessageId"]]
    assert 0 <= answers["at_ms"] - visible_at < 400
