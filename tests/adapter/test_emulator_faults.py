"""The emulator's fault mode, seen as the code under test sees it: through boto3, over HTTP.

Each test runs a second emulator with one fault at probability 1.0 beside the session's fault-free
one. Both serve the same in-process moto backends, so the fault-free client sets up and checks what
the faulty one did.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sundial.local_stack.emulator import Emulator
from sundial.local_stack.faults import FAULT_KINDS, FAULTS_PATH, FaultSpec

# Standard mode, as the Lambda functions' clients; a fixed number of attempts in all (botocore's default
# for DynamoDB differs between versions), so that the tests can count them.
ATTEMPTS = 3
RETRIES = Config(retries={"mode": "standard", "total_max_attempts": ATTEMPTS})
REGION = "us-east-1"


@pytest.fixture
def make_faulty() -> Iterator[Any]:
    started: list[Emulator] = []

    def start(spec: str) -> Emulator:
        emulator = Emulator(faults=FaultSpec.parse(spec), fault_seed=1).start()
        started.append(emulator)
        return emulator

    yield start
    for emulator in started:
        emulator.stop()


def _dynamodb(emulator: Emulator) -> Any:
    return boto3.client("dynamodb", endpoint_url=emulator.endpoint_url, region_name=REGION, config=RETRIES)


def _sqs(emulator: Emulator) -> Any:
    return boto3.client("sqs", endpoint_url=emulator.endpoint_url, region_name=REGION, config=RETRIES)


@pytest.fixture
def table(dynamodb: Any) -> str:
    name = f"faults-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


@pytest.fixture
def queue_url(sqs: Any) -> str:
    url: str = sqs.create_queue(QueueName=f"faults-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    return url


def _error_code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def _bodies(sqs: Any, url: str) -> list[str]:
    answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    return sorted(message["Body"] for message in answer.get("Messages", []))


def _report(emulator: Emulator) -> dict[str, Any]:
    with urllib.request.urlopen(f"{emulator.endpoint_url}{FAULTS_PATH}", timeout=5) as answer:
        report: dict[str, Any] = json.loads(answer.read())
        return report


def test_a_lost_answer_applies_the_conditional_write_and_its_retry_fails_the_condition(
    make_faulty: Any, dynamodb: Any, table: str
) -> None:
    faulty = make_faulty("lost-answer=1.0")

    with pytest.raises(ClientError) as error:
        _dynamodb(faulty).put_item(
            TableName=table,
            Item={"pk": {"S": "job-1"}, "v": {"N": "1"}},
            ConditionExpression="attribute_not_exists(pk)",
        )

    # The SDK retried the 500; the retry met the first attempt's own item.
    assert _error_code(error) == "ConditionalCheckFailedException"
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "job-1"}})["Item"]["v"] == {"N": "1"}
    # Only an applied write loses its answer: the failed retry's own answer came through.
    assert faulty.faults.counts.snapshot()["lost-answer"] == 1


def test_a_lost_answer_on_a_transaction_cancels_its_retry(
    make_faulty: Any, dynamodb: Any, table: str
) -> None:
    faulty = make_faulty("lost-answer=1.0")
    put = {
        "Put": {
            "TableName": table,
            "Item": {"pk": {"S": "job-2"}},
            "ConditionExpression": "attribute_not_exists(pk)",
        }
    }

    with pytest.raises(ClientError) as error:
        _dynamodb(faulty).transact_write_items(TransactItems=[put])

    assert _error_code(error) == "TransactionCanceledException"
    assert "Item" in dynamodb.get_item(TableName=table, Key={"pk": {"S": "job-2"}})


def test_an_unconditional_write_whose_answers_are_all_lost_is_applied_yet_reported_failed(
    make_faulty: Any, dynamodb: Any, table: str
) -> None:
    faulty = make_faulty("lost-answer=1.0")

    with pytest.raises(ClientError) as error:
        _dynamodb(faulty).update_item(
            TableName=table,
            Key={"pk": {"S": "job-3"}},
            UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}},
        )

    assert _error_code(error) == "InternalServerError"
    # Every attempt was applied: a retried counter counts each.
    assert dynamodb.get_item(TableName=table, Key={"pk": {"S": "job-3"}})["Item"]["n"] == {"N": str(ATTEMPTS)}
    assert faulty.faults.counts.snapshot()["lost-answer"] == ATTEMPTS


def test_reads_keep_their_answers_under_lost_answer(make_faulty: Any, dynamodb: Any, table: str) -> None:
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "job-4"}})
    faulty = make_faulty("lost-answer=1.0")

    item = _dynamodb(faulty).get_item(TableName=table, Key={"pk": {"S": "job-4"}})

    assert item["Item"] == {"pk": {"S": "job-4"}}
    assert faulty.faults.counts.snapshot()["lost-answer"] == 0


def test_a_throttled_call_is_not_applied(make_faulty: Any, dynamodb: Any, table: str) -> None:
    faulty = make_faulty("throttle=1.0")

    with pytest.raises(ClientError) as error:
        _dynamodb(faulty).put_item(TableName=table, Item={"pk": {"S": "job-5"}})

    assert _error_code(error) == "ThrottlingException"
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "job-5"}})
    assert faulty.faults.counts.snapshot()["throttle"] == ATTEMPTS


def test_a_duplicated_send_enqueues_the_message_twice(make_faulty: Any, sqs: Any, queue_url: str) -> None:
    faulty = make_faulty("sqs-duplicate=1.0")
    client = _sqs(faulty)

    client.send_message(QueueUrl=queue_url, MessageBody="one")
    answer = client.send_message_batch(
        QueueUrl=queue_url,
        Entries=[{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three"}],
    )

    assert sorted(entry["Id"] for entry in answer["Successful"]) == ["a", "b"]
    assert not answer.get("Failed")
    assert _bodies(sqs, queue_url) == ["one", "one", "three", "three", "two", "two"]
    assert faulty.faults.counts.snapshot()["sqs-duplicate"] == 3


def test_a_refused_send_or_delete_is_not_applied(make_faulty: Any, sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="kept")
    faulty = make_faulty("sqs-refuse=1.0")
    client = _sqs(faulty)

    with pytest.raises(ClientError) as error:
        client.send_message(QueueUrl=queue_url, MessageBody="refused")
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    batch = client.send_message_batch(
        QueueUrl=queue_url,
        Entries=[{"Id": "a", "MessageBody": "refused-a"}, {"Id": "b", "MessageBody": "refused-b"}],
    )
    # In a batch each entry fails on its own, under Failed, as SQS reports a part-failure.
    assert sorted(entry["Id"] for entry in batch["Failed"]) == ["a", "b"]
    assert not batch.get("Successful")
    [message] = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0)["Messages"]
    with pytest.raises(ClientError):
        client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])

    assert _bodies(sqs, queue_url) == ["kept"]
    # The single send and delete were each tried ATTEMPTS times; the batch was not retried.
    assert faulty.faults.counts.snapshot()["sqs-refuse"] == ATTEMPTS + 2 + ATTEMPTS


def test_the_counts_are_served_over_http(make_faulty: Any, dynamodb: Any, table: str) -> None:
    faulty = make_faulty("throttle=1.0,sqs-duplicate=0.5")
    with pytest.raises(ClientError):
        _dynamodb(faulty).get_item(TableName=table, Key={"pk": {"S": "x"}})

    report = _report(faulty)

    assert report["spec"] == "throttle=1,sqs-duplicate=0.5"
    assert report["seed"] == 1
    assert report["injected"] == {"lost-answer": 0, "throttle": ATTEMPTS, "sqs-refuse": 0, "sqs-duplicate": 0}


def test_a_fault_free_emulator_passes_every_call_through(
    emulator: Emulator, sqs: Any, queue_url: str
) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="once")

    assert _bodies(sqs, queue_url) == ["once"]
    assert not emulator.faults.spec
    assert _report(emulator)["injected"] == dict.fromkeys(FAULT_KINDS, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lost=0.1", "expected KIND=PROBABILITY"),
        ("throttle", "expected KIND=PROBABILITY"),
        ("throttle=often", "is not a number"),
        ("throttle=1.5", "between 0 and 1"),
    ],
)
def test_a_bad_spec_is_refused_naming_the_part(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FaultSpec.parse(text)


def test_a_spec_reads_every_kind() -> None:
    spec = FaultSpec.parse("lost-answer=0.03, throttle=0.08,sqs-refuse=0.05,sqs-duplicate=0.03")

    assert [spec.probability(kind) for kind in FAULT_KINDS] == [0.03, 0.08, 0.05, 0.03]
    assert str(spec) == "lost-answer=0.03,throttle=0.08,sqs-refuse=0.05,sqs-duplicate=0.03"
    assert not FaultSpec.parse("")
