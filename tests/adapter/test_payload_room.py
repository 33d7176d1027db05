"""The payload limit of each target, held against what the emulator's SQS and SNS accept: the
largest payload the API lets a job carry is delivered, signed by as many keys as may sign, with the
envelope's fields at their longest, and one byte more is refused by the carrier."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from typing import Any

import boto3
import pytest

from sundial.shared.constants import PAYLOAD_LIMIT_BYTES
from sundial.shared.targets import Delivery, EventBridgeTarget, Signer, SnsTarget, SqsTarget, TargetError
from sundial.shared.targets.aws_delivery import envelope_json, publish_sns, send_sqs
from sundial.shared.targets.payload_room import CARRIER_BYTES, EVENT_TIME_BYTES, payload_room
from sundial.shared.targets.signing import MOST_KEYS

LONGEST = Delivery(
    job_id="7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
    scheduled_at="9999-12-30T23:59:59.999Z",
    attempt=21,
    idempotency_key="7ZZZZZZZZZZZZZZZZZZZZZZZZZ:9999-12-30T23:59:59.999Z",
    traceparent="00-4bf92f3577b34da6a3ce929d0e0736aa-00f067aa0ba902b7-01",  # every attempt carries one
)


@pytest.fixture
def rotating_signer(aws: dict[str, Any]) -> Signer:
    """A signing secret holding as many keys as may sign at once, on the emulator."""
    manager = boto3.client("secretsmanager", **aws)
    name = f"signing-{uuid.uuid4().hex}"
    keys = ["whsec_" + base64.b64encode(secrets.token_bytes(32)).decode() for _ in range(MOST_KEYS)]
    manager.create_secret(Name=name, SecretString=" ".join(keys))
    signer = Signer(lambda service: boto3.client(service, **aws), name, wall_clock=lambda: 9_999_999_999)
    assert len(signer.secrets()) == MOST_KEYS
    return signer


def carrying(size: int) -> Delivery:
    """The longest delivery, with a payload whose JSON is `size` bytes."""
    payload = "x" * (size - 2)
    assert len(json.dumps(payload).encode()) == size
    return LONGEST.model_copy(update={"payload": payload})


def test_an_sqs_target_takes_the_largest_payload_the_api_accepts(sqs: Any, rotating_signer: Signer) -> None:
    """A queue's own limit (1 MiB unless its owner set less) holds the API's 256 KiB and the envelope."""
    url = sqs.create_queue(QueueName=f"room-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    target = SqsTarget(type="sqs", queue_url=url)
    assert payload_room(target) is None

    send_sqs(target, carrying(PAYLOAD_LIMIT_BYTES), sqs, rotating_signer)

    [message] = sqs.receive_message(QueueUrl=url).get("Messages", [])
    assert len(json.loads(message["Body"])["payload"]) == PAYLOAD_LIMIT_BYTES - 2


def test_the_most_an_sns_target_carries_is_published_and_a_byte_more_is_refused(
    aws: dict[str, Any], rotating_signer: Signer
) -> None:
    sns = boto3.client("sns", **aws)
    target = SnsTarget(
        type="sns", topic_arn=sns.create_topic(Name=f"room-{uuid.uuid4().hex[:12]}")["TopicArn"]
    )
    room = payload_room(target)
    assert room is not None

    publish_sns(target, carrying(room), sns, rotating_signer)
    with pytest.raises(TargetError, match="sns Publish"):
        publish_sns(target, carrying(room + 1), sns, rotating_signer)


def test_the_room_is_exact_for_the_longest_signed_envelope(rotating_signer: Signer) -> None:
    topic = SnsTarget(type="sns", topic_arn="arn:aws:sns:us-east-1:123456789012:reports")
    bus = EventBridgeTarget(type="eventbridge", source="reports.daily", detail_type="Report due")
    sns_room, bus_room = payload_room(topic), payload_room(bus)
    assert sns_room is not None and bus_room is not None

    assert len(envelope_json(carrying(sns_room), rotating_signer).encode()) == CARRIER_BYTES
    detail = envelope_json(carrying(bus_room), rotating_signer).encode()
    entry = EVENT_TIME_BYTES + len(bus.source) + len(bus.detail_type) + len(detail)
    assert entry == CARRIER_BYTES
