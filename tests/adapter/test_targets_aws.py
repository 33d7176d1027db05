"""AWS targets against the emulator: what arrives on SQS, SNS and EventBridge, and how failures read.

moto cannot run a Lambda function without Docker, so Lambda's answers are injected at the HTTP
boundary of a real client (botocore's before-send hook) and parsed by botocore as AWS's would be.
"""

from __future__ import annotations

import io
import json
import socket
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

from sundial.shared.errors import InvalidInput
from sundial.shared.targets import (
    Delivery,
    EventBridgeTarget,
    LambdaTarget,
    SnsTarget,
    SqsTarget,
    Target,
    TargetError,
    TargetTimedOut,
    aws_client_config,
    check_target,
    deliver,
)

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000",
    scheduled_at="2026-12-01T09:00:00Z",
    attempt=3,
    idempotency_key="01JD0000000000000000000000#1795942800000",
    payload={"report": "daily", "rows": [1, 2, 3]},
)
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:report"


LIMIT = 5


class EmulatorClients:
    """The AwsClients a worker would pass: one lazily built client per service and limit, configured
    as the worker's are."""

    def __init__(self, aws: dict[str, Any]) -> None:
        self._aws = aws
        self._clients: dict[tuple[str, float], Any] = {}

    def client(self, service: str, timeout_seconds: float = LIMIT) -> Any:
        key = (service, timeout_seconds)
        if key not in self._clients:
            config = aws_client_config(service, timeout_seconds)
            self._clients[key] = boto3.client(service, config=config, **self._aws)  # type: ignore[call-overload]
        return self._clients[key]


@pytest.fixture
def clients(aws: dict[str, Any]) -> EmulatorClients:
    return EmulatorClients(aws)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def run(target: Target, clients: EmulatorClients) -> None:
    deliver(target, DELIVERY, timeout_seconds=LIMIT, clients=clients, allow_private=False)


def queue(sqs: Any, fifo: bool = False) -> tuple[str, str]:
    attributes = {"FifoQueue": "true"} if fifo else {}
    url = sqs.create_queue(QueueName=unique("target") + (".fifo" if fifo else ""), Attributes=attributes)[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def received(sqs: Any, url: str) -> list[dict[str, Any]]:
    answer = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"], WaitTimeSeconds=0
    )
    return list(answer.get("Messages", []))


# --- SQS ------------------------------------------------------------------------------------------


def test_sqs_receives_the_envelope(clients: EmulatorClients, sqs: Any) -> None:
    url, _ = queue(sqs)
    run(SqsTarget(type="sqs", queue_url=url), clients)
    [message] = received(sqs, url)
    assert json.loads(message["Body"]) == DELIVERY.envelope()
    assert json.loads(message["Body"])["idempotency_key"] == DELIVERY.idempotency_key


def test_sqs_fifo_groups_by_job_and_deduplicates_by_idempotency_key(
    clients: EmulatorClients, sqs: Any
) -> None:
    url, _ = queue(sqs, fifo=True)
    target = SqsTarget(type="sqs", queue_url=url)
    run(target, clients)
    run(target, clients)  # a re-run of the same occurrence, as after a crash
    [message] = received(sqs, url)
    assert message["Attributes"]["MessageGroupId"] == DELIVERY.job_id
    assert message["Attributes"]["MessageDeduplicationId"] == DELIVERY.idempotency_key


def test_sqs_missing_queue_is_a_target_error(clients: EmulatorClients, aws: dict[str, Any]) -> None:
    url = f"{aws['endpoint_url']}/123456789012/{unique('absent')}"
    with pytest.raises(
        TargetError, match=rf"^sqs SendMessage to {url} failed: .*(NonExistentQueue|QueueDoesNotExist)"
    ):
        run(SqsTarget(type="sqs", queue_url=url), clients)


# --- SNS ------------------------------------------------------------------------------------------


def test_sns_publishes_the_envelope_to_subscribers(clients: EmulatorClients, sqs: Any) -> None:
    sns = clients.client("sns")
    topic = sns.create_topic(Name=unique("topic"))["TopicArn"]
    url, arn = queue(sqs)
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"})
    run(SnsTarget(type="sns", topic_arn=topic), clients)
    [message] = received(sqs, url)
    assert json.loads(message["Body"]) == DELIVERY.envelope()


def test_sns_fifo_topic_gets_group_and_deduplication_ids(clients: EmulatorClients) -> None:
    sns = clients.client("sns")
    topic = sns.create_topic(Name=unique("topic") + ".fifo", Attributes={"FifoTopic": "true"})["TopicArn"]
    sent: list[dict[str, Any]] = []
    sns.meta.events.register(
        "provide-client-params.sns.Publish", lambda params, **_: sent.append(dict(params))
    )
    # The emulator refuses a FIFO publish without a group id, so acceptance shows the ids went out.
    run(SnsTarget(type="sns", topic_arn=topic), clients)
    assert sent[0]["MessageGroupId"] == DELIVERY.job_id
    assert sent[0]["MessageDeduplicationId"] == DELIVERY.idempotency_key


def test_sns_missing_topic_is_a_target_error(clients: EmulatorClients) -> None:
    topic = f"arn:aws:sns:us-east-1:123456789012:{unique('absent')}"
    with pytest.raises(TargetError, match=rf"^sns Publish to {topic} failed: NotFound"):
        run(SnsTarget(type="sns", topic_arn=topic), clients)


# --- EventBridge ----------------------------------------------------------------------------------


def bus_routed_to_queue(clients: EmulatorClients, sqs: Any) -> tuple[str, str]:
    events = clients.client("events")
    bus = unique("bus")
    events.create_event_bus(Name=bus)
    events.put_rule(Name="all", EventBusName=bus, EventPattern=json.dumps({"source": ["sundial.test"]}))
    url, arn = queue(sqs)
    events.put_targets(Rule="all", EventBusName=bus, Targets=[{"Id": "q", "Arn": arn}])
    return bus, url


def test_eventbridge_puts_the_envelope_as_detail(clients: EmulatorClients, sqs: Any) -> None:
    bus, url = bus_routed_to_queue(clients, sqs)
    run(
        EventBridgeTarget(
            type="eventbridge", event_bus_name=bus, detail_type="report due", source="sundial.test"
        ),
        clients,
    )
    [message] = received(sqs, url)
    event = json.loads(message["Body"])
    assert (event["source"], event["detail-type"]) == ("sundial.test", "report due")
    assert event["detail"] == DELIVERY.envelope()


def test_eventbridge_failed_entry_is_a_target_error(clients: EmulatorClients) -> None:
    rejected = {
        "FailedEntryCount": 1,
        "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "try again later"}],
    }
    # PutEvents answers 200 even when an entry fails; this answer comes back instead of the emulator's.
    sent = answer_with(clients, "events", "PutEvents", json.dumps(rejected).encode(), {})
    target = EventBridgeTarget(
        type="eventbridge", event_bus_name="jobs", detail_type="d", source="sundial.test"
    )
    with pytest.raises(
        TargetError, match=r"^eventbridge bus jobs rejected the event: InternalFailure: try again later$"
    ):
        run(target, clients)
    [entry] = json.loads(sent[0].body)["Entries"]  # type: ignore[arg-type]
    assert (entry["EventBusName"], entry["Source"], entry["DetailType"]) == ("jobs", "sundial.test", "d")
    assert json.loads(entry["Detail"]) == DELIVERY.envelope()


def test_eventbridge_missing_bus_is_a_target_error(clients: EmulatorClients) -> None:
    target = EventBridgeTarget(type="eventbridge", event_bus_name="absent-bus", detail_type="d", source="s")
    with pytest.raises(
        TargetError, match=r"^eventbridge PutEvents to absent-bus failed: ResourceNotFoundException"
    ):
        run(target, clients)


# --- Lambda ---------------------------------------------------------------------------------------


class _Raw(io.BytesIO):
    """What botocore reads an HTTP answer's body from."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.read()


def answer_with(
    clients: EmulatorClients, service: str, operation: str, body: bytes, headers: dict[str, str]
) -> list[AWSPreparedRequest]:
    """Makes the client's calls of `operation` come back with this HTTP answer; returns the requests."""
    sent: list[AWSPreparedRequest] = []

    def answer(request: AWSPreparedRequest, **_: Any) -> AWSResponse:
        sent.append(request)
        return AWSResponse(request.url, 200, headers, _Raw(body))

    hook: Callable[..., AWSResponse] = answer
    clients.client(service).meta.events.register(f"before-send.{service}.{operation}", hook)
    return sent


def lambda_answers(
    clients: EmulatorClients, body: bytes, headers: dict[str, str]
) -> list[AWSPreparedRequest]:
    return answer_with(clients, "lambda", "Invoke", body, headers)


def test_lambda_is_invoked_synchronously_with_the_envelope(clients: EmulatorClients) -> None:
    sent = lambda_answers(clients, b'{"ok": true}', {"X-Amz-Executed-Version": "$LATEST"})
    run(LambdaTarget(type="lambda", function_arn=FUNCTION_ARN), clients)
    [request] = sent
    assert request.headers["X-Amz-Invocation-Type"] == b"RequestResponse"
    assert json.loads(request.body) == DELIVERY.envelope()  # type: ignore[arg-type]


def test_lambda_function_error_is_a_target_error_with_its_text(clients: EmulatorClients) -> None:
    error = {"errorType": "KeyError", "errorMessage": "'customer_id'", "stackTrace": ["..."]}
    lambda_answers(clients, json.dumps(error).encode(), {"X-Amz-Function-Error": "Unhandled"})
    with pytest.raises(
        TargetError, match=rf"^lambda {FUNCTION_ARN} failed \(Unhandled\): KeyError: 'customer_id'$"
    ):
        run(LambdaTarget(type="lambda", function_arn=FUNCTION_ARN), clients)


def test_lambda_function_error_without_json_keeps_the_raw_text(clients: EmulatorClients) -> None:
    lambda_answers(clients, b"Task timed out after 3.00 seconds", {"X-Amz-Function-Error": "Unhandled"})
    with pytest.raises(TargetError, match=r"\(Unhandled\): Task timed out after 3\.00 seconds$"):
        run(LambdaTarget(type="lambda", function_arn=FUNCTION_ARN), clients)


def test_lambda_missing_function_is_a_target_error(clients: EmulatorClients) -> None:
    arn = f"arn:aws:lambda:us-east-1:123456789012:function:{unique('absent')}"
    with pytest.raises(TargetError, match=rf"^lambda Invoke of {arn} failed: ResourceNotFoundException: "):
        run(LambdaTarget(type="lambda", function_arn=arn), clients)


def test_an_unreachable_endpoint_is_a_target_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = EmulatorClients({"endpoint_url": f"http://127.0.0.1:{port}", "region_name": "us-east-1"})
    url = f"http://127.0.0.1:{port}/123456789012/q"
    with pytest.raises(
        TargetError, match=rf"^sqs SendMessage to {url} failed: Could not connect to the endpoint URL"
    ):
        run(SqsTarget(type="sqs", queue_url=url), unreachable)


# --- Sundial's own queues -------------------------------------------------------------------------


def test_an_sqs_target_naming_an_own_queue_is_refused_without_sending(
    clients: EmulatorClients, sqs: Any
) -> None:
    url, _ = queue(sqs)
    account, name = url.rsplit("/", 2)[1:]
    # The same queue as the deployed settings would spell it: another host, same account and name.
    own = frozenset({f"https://sqs.us-east-1.amazonaws.com/{account}/{name}"})
    with pytest.raises(TargetError, match=r"one of Sundial's own queues"):
        deliver(
            SqsTarget(type="sqs", queue_url=url),
            DELIVERY,
            timeout_seconds=5,
            clients=clients,
            allow_private=False,
            forbidden_queue_urls=own,
        )
    assert received(sqs, url) == []


def test_an_own_queue_is_refused_at_create_in_the_emulator_form(sqs: Any) -> None:
    url, _ = queue(sqs)
    account, name = url.rsplit("/", 2)[1:]
    with pytest.raises(InvalidInput) as caught:
        check_target(
            SqsTarget(type="sqs", queue_url=f"https://queue.amazonaws.com/{account}/{name}"),
            allow_private=False,
            forbidden_queue_urls=frozenset({url}),
        )
    assert caught.value.field == "target.queue_url"


def test_other_queues_are_still_delivered_to_beside_own_ones(clients: EmulatorClients, sqs: Any) -> None:
    own, _ = queue(sqs)
    url, _ = queue(sqs)
    deliver(
        SqsTarget(type="sqs", queue_url=url),
        DELIVERY,
        timeout_seconds=5,
        clients=clients,
        allow_private=False,
        forbidden_queue_urls=frozenset({own}),
    )
    assert len(received(sqs, url)) == 1


# --- timeouts -------------------------------------------------------------------------------------

TIMEOUT_TARGETS: list[tuple[Target, str, str]] = [
    (LambdaTarget(type="lambda", function_arn=FUNCTION_ARN), "lambda", "Invoke"),
    (
        SqsTarget(type="sqs", queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/q"),
        "sqs",
        "SendMessage",
    ),
    (SnsTarget(type="sns", topic_arn="arn:aws:sns:us-east-1:123456789012:t"), "sns", "Publish"),
    (EventBridgeTarget(type="eventbridge", detail_type="d", source="s"), "events", "PutEvents"),
]


def stall_with(clients: EmulatorClients, service: str, operation: str, error: Exception) -> list[object]:
    """Makes every attempt of `operation` end in `error`, as botocore raises it; returns the attempts."""
    attempts: list[object] = []

    def stall(request: AWSPreparedRequest, **_: Any) -> None:
        attempts.append(request)
        raise error

    clients.client(service).meta.events.register(f"before-send.{service}.{operation}", stall)
    return attempts


@pytest.mark.parametrize(("target", "service", "operation"), TIMEOUT_TARGETS)
def test_a_read_timeout_is_told_apart_as_timed_out(
    clients: EmulatorClients, target: Target, service: str, operation: str
) -> None:
    attempts = stall_with(clients, service, operation, ReadTimeoutError(endpoint_url="https://aws.example"))
    with pytest.raises(TargetTimedOut, match=r"timed out: Read timeout on endpoint URL"):
        run(target, clients)
    # Invoke runs the function again when retried; sends may be retried within the limit.
    assert len(attempts) == (
        1 if service == "lambda" else aws_client_config(service, LIMIT).retries["total_max_attempts"]
    )


@pytest.mark.parametrize(("target", "service", "operation"), TIMEOUT_TARGETS)
def test_a_connect_timeout_is_told_apart_as_timed_out(
    clients: EmulatorClients, target: Target, service: str, operation: str
) -> None:
    stall_with(clients, service, operation, ConnectTimeoutError(endpoint_url="https://aws.example"))
    with pytest.raises(TargetTimedOut, match=r"timed out: Connect timeout on endpoint URL"):
        run(target, clients)


def test_an_aws_error_is_not_a_timeout(clients: EmulatorClients, aws: dict[str, Any]) -> None:
    url = f"{aws['endpoint_url']}/123456789012/{unique('absent')}"
    with pytest.raises(TargetError) as caught:
        run(SqsTarget(type="sqs", queue_url=url), clients)
    assert not isinstance(caught.value, TargetTimedOut)
