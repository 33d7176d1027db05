"""Secret references and signatures against the emulator's Secrets Manager and SSM, checked by the
`standardwebhooks` library, which receivers use and which we did not write."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from typing import Any

import boto3
import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from sundial.shared.targets import (
    Delivery,
    DeliveryKeys,
    HttpTarget,
    SecretRef,
    SecretResolver,
    Signer,
    SqsTarget,
    TargetError,
    aws_client_config,
    deliver,
)
from tests.support.receivers import Receiver

DELIVERY = Delivery(
    job_id="01JD0000000000000000000000",
    scheduled_at="2026-12-01T09:00:00Z",
    attempt=2,
    idempotency_key="01JD0000000000000000000000:2026-12-01T09:00:00Z",
    payload={"report": "daily", "n": 1, "name": "Zoë"},
)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def secretsmanager(aws: dict[str, Any]) -> Any:
    return boto3.client("secretsmanager", **aws)


@pytest.fixture
def ssm(aws: dict[str, Any]) -> Any:
    return boto3.client("ssm", **aws)


def _client_for(aws: dict[str, Any]) -> Any:
    made: dict[str, Any] = {}

    def client_for(service: str) -> Any:
        if service not in made:
            made[service] = boto3.client(service, **aws)  # type: ignore[call-overload]
        return made[service]

    return client_for


def _signing_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def _new_secret(secretsmanager: Any, value: str) -> str:
    return str(secretsmanager.create_secret(Name=f"s-{uuid.uuid4().hex}", SecretString=value)["ARN"])


@pytest.fixture
def signing(secretsmanager: Any) -> tuple[str, str]:
    """(ARN, value) of a fresh signing secret."""
    value = _signing_secret()
    return _new_secret(secretsmanager, value), value


def _keys(aws: dict[str, Any], signing_arn: str, clock: _Clock | None = None) -> DeliveryKeys:
    client_for = _client_for(aws)
    clock = clock or _Clock()
    return DeliveryKeys(
        resolver=SecretResolver(client_for, clock=clock), signer=Signer(client_for, signing_arn, clock=clock)
    )


def _deliver(target: Any, keys: DeliveryKeys, clients: Any = None) -> None:
    deliver(target, DELIVERY, timeout_seconds=5, clients=clients, allow_private=True, keys=keys)


def test_references_are_read_at_delivery_and_the_delivery_verifies(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any, ssm: Any
) -> None:
    plain = _new_secret(secretsmanager, "Bearer plain-7f3a")
    keyed = _new_secret(secretsmanager, json.dumps({"user": "u", "token": "keyed-91bc"}))
    name = f"/sundial-test/{uuid.uuid4().hex}"
    ssm.put_parameter(Name=name, Value="param-5d2e", Type="SecureString")
    parameter = ssm.get_parameter(Name=name)["Parameter"]["ARN"]
    target = HttpTarget(
        type="http",
        url=receiver.url(),
        headers={
            "Authorization": SecretRef(secret=plain),
            "X-Token": SecretRef(secret=keyed, json_key="token"),
            "X-Param": SecretRef(secret=parameter),
            "X-Team": "finance",
        },
    )

    _deliver(target, _keys(aws, signing[0]))

    [request] = receiver.received
    headers = request.headers
    assert (headers["Authorization"], headers["X-Token"], headers["X-Param"]) == (
        "Bearer plain-7f3a",
        "keyed-91bc",
        "param-5d2e",
    )
    assert headers["webhook-id"] == f"{DELIVERY.idempotency_key}:{DELIVERY.attempt}"
    assert Webhook(signing[1]).verify(request.body, headers) == DELIVERY.payload


def test_a_tampered_body_and_an_old_timestamp_fail_verification(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str]
) -> None:
    target = HttpTarget(type="http", url=receiver.url())
    keys = _keys(aws, signing[0])
    _deliver(target, keys)
    assert keys.signer is not None
    stale = DeliveryKeys(signer=Signer(_client_for(aws), signing[0], wall_clock=lambda: 1_700_000_000.0))
    _deliver(target, stale)

    fresh, old = receiver.received
    webhook = Webhook(signing[1])
    webhook.verify(fresh.body, fresh.headers)
    with pytest.raises(WebhookVerificationError):
        webhook.verify(fresh.body.replace(b"daily", b"never"), fresh.headers)
    with pytest.raises(WebhookVerificationError):
        webhook.verify(old.body, old.headers)  # a replay long after it was signed
    with pytest.raises(WebhookVerificationError):
        Webhook(_signing_secret()).verify(fresh.body, fresh.headers)


def test_during_a_rotation_both_secrets_sign_and_either_verifies(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any
) -> None:
    arn, old = signing
    clock = _Clock()
    keys = _keys(aws, arn, clock)
    target = HttpTarget(type="http", url=receiver.url())
    _deliver(target, keys)
    new = _signing_secret()
    # The rotation as docs/operations.md gives it: the new key first, the old one after it.
    secretsmanager.put_secret_value(SecretId=arn, SecretString=f"{new} {old}")

    _deliver(target, keys)  # within the cache: still the old secret alone
    clock.now += 61
    _deliver(target, keys)
    secretsmanager.put_secret_value(SecretId=arn, SecretString=new)  # the overlap ends
    clock.now += 61
    _deliver(target, keys)

    before, cached, overlap, after = receiver.received
    assert [len(r.headers["webhook-signature"].split(" ")) for r in receiver.received] == [1, 1, 2, 1]
    for request in (before, cached, overlap):
        Webhook(old).verify(request.body, request.headers)
    for request in (overlap, after):
        Webhook(new).verify(request.body, request.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(after.body, after.headers)
    assert keys.signer is not None and keys.signer.reads == 3  # one read a minute, whatever it holds


def test_a_signing_secret_holding_a_bad_key_fails_the_attempt_without_showing_it(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any
) -> None:
    arn, old = signing
    secretsmanager.put_secret_value(SecretId=arn, SecretString=f"{old} not!base64")

    with pytest.raises(TargetError) as caught:
        _deliver(HttpTarget(type="http", url=receiver.url()), _keys(aws, arn))

    assert str(caught.value) == "the signing secret's key 2 of 2 is not whsec_<base64>"
    assert receiver.received == []


def test_an_sqs_envelope_carries_a_signature_over_the_rest_of_it(
    aws: dict[str, Any], signing: tuple[str, str]
) -> None:
    sqs = boto3.client("sqs", **aws)
    queue_url = sqs.create_queue(QueueName=f"signed-{uuid.uuid4().hex[:12]}")["QueueUrl"]

    class Clients:
        def client(self, service: str, timeout_seconds: float) -> Any:
            return boto3.client(service, config=aws_client_config(service, timeout_seconds), **aws)  # type: ignore[call-overload]

    _deliver(SqsTarget(type="sqs", queue_url=queue_url), _keys(aws, signing[0]), Clients())

    [message] = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"]
    envelope = json.loads(message["Body"])
    signature = envelope.pop("signature")
    assert envelope == DELIVERY.envelope()
    # What a receiver does: the envelope without `signature`, as compact JSON, is what was signed.
    signed = json.dumps(envelope, separators=(",", ":"))
    assert Webhook(signing[1]).verify(signed, signature) == DELIVERY.envelope()


def test_a_reference_that_cannot_be_read_fails_the_attempt_before_sending(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str]
) -> None:
    missing = "arn:aws:secretsmanager:us-east-1:123456789012:secret:nowhere-AbCdEf"
    target = HttpTarget(type="http", url=receiver.url(), headers={"Authorization": SecretRef(secret=missing)})

    with pytest.raises(TargetError) as caught:
        _deliver(target, _keys(aws, signing[0]))

    assert str(caught.value) == (
        f"header Authorization: secret {missing} could not be read (ResourceNotFoundException)"
    )
    assert receiver.received == []


def test_a_secret_is_read_once_a_minute(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any
) -> None:
    arn = _new_secret(secretsmanager, "first-4b1c")
    clock = _Clock()
    keys = _keys(aws, signing[0], clock)
    target = HttpTarget(type="http", url=receiver.url(), headers={"Authorization": SecretRef(secret=arn)})
    assert keys.resolver is not None and keys.signer is not None

    for _ in range(3):
        _deliver(target, keys)
    secretsmanager.put_secret_value(SecretId=arn, SecretString="second-8e2d")
    _deliver(target, keys)
    clock.now += 61
    _deliver(target, keys)

    sent = [request.headers["Authorization"] for request in receiver.received]
    assert sent == ["first-4b1c"] * 4 + ["second-8e2d"]
    assert keys.resolver.reads == 2
    assert keys.signer.reads == 2


def test_what_a_target_echoes_back_is_scrubbed_of_every_secret(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any
) -> None:
    arn = _new_secret(secretsmanager, json.dumps({"token": "json-held-6a0f"}))
    target = HttpTarget(
        type="http",
        url=receiver.url("/echo?api_key=query-3c9d"),
        headers={"X-Token": SecretRef(secret=arn, json_key="token"), "X-Pass": "inline-2f7e"},
    )

    with pytest.raises(TargetError) as caught:
        _deliver(target, _keys(aws, signing[0]))

    reason = str(caught.value)
    assert reason.startswith("HTTP 500 from http://127.0.0.1:")
    assert '"X-Pass": "***"' in reason  # the echo is there, its secrets are not
    for secret in ("json-held-6a0f", "inline-2f7e", "query-3c9d", signing[1].removeprefix("whsec_")):
        assert secret not in reason


def test_a_secret_with_a_newline_fails_the_attempt_without_showing_it(
    aws: dict[str, Any], receiver: Receiver, signing: tuple[str, str], secretsmanager: Any
) -> None:
    arn = _new_secret(secretsmanager, "Bearer from-a-file-61d0\n")
    target = HttpTarget(type="http", url=receiver.url(), headers={"Authorization": SecretRef(secret=arn)})

    with pytest.raises(TargetError) as caught:
        _deliver(target, _keys(aws, signing[0]))

    assert "holds a control character" in str(caught.value)
    assert "from-a-file" not in str(caught.value)
    assert receiver.received == []
