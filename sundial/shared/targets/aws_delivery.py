"""Delivers an occurrence's envelope to an AWS target: Lambda, SQS, SNS or EventBridge (docs/api.md)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, ReadTimeoutError

from sundial.contract.targets import EventBridgeTarget, LambdaTarget, SnsTarget, SqsTarget
from sundial.shared.targets.errors import TargetError, TargetTimedOut
from sundial.shared.targets.models import Delivery
from sundial.shared.targets.signing import Signer

# Enough of a function's error answer to explain it; the rest would be cut from the history anyway.
_ERROR_PAYLOAD_BYTES = 8192
# FIFO group and deduplication ids are at most 128 characters.
_FIFO_ID_LIMIT = 128


def envelope_json(delivery: Delivery, signer: Signer | None = None) -> str:
    """The envelope every non-http target receives, as compact JSON; with a signer, its `signature`
    holds the Standard Webhooks headers computed over the envelope without it (docs/api.md)."""
    unsigned = _compact(delivery.envelope())
    if signer is None:
        return unsigned
    return _compact(
        {**delivery.envelope(), "signature": signer.headers(delivery.message_id, unsigned.encode())}
    )


def _compact(document: Any) -> str:
    return json.dumps(document, separators=(",", ":"))


def invoke_lambda(
    target: LambdaTarget, delivery: Delivery, client: Any, signer: Signer | None = None
) -> None:
    """Invokes the function synchronously with the envelope.

    Raises TargetError when the call fails or the function reports an error.
    """
    with aws_errors(f"lambda Invoke of {target.function_arn}"):
        response = client.invoke(
            FunctionName=target.function_arn,
            InvocationType="RequestResponse",
            Payload=envelope_json(delivery, signer).encode(),
        )
        function_error = response.get("FunctionError")
        if function_error:
            text = _function_error_text(response["Payload"].read(_ERROR_PAYLOAD_BYTES))
            raise TargetError(f"lambda {target.function_arn} failed ({function_error}): {text}")
    status = int(response.get("StatusCode", 200))
    if not 200 <= status < 300:
        raise TargetError(f"lambda {target.function_arn} answered status {status}")


def send_sqs(target: SqsTarget, delivery: Delivery, client: Any, signer: Signer | None = None) -> None:
    """Sends the envelope to the queue (FIFO: grouped by job, deduplicated by idempotency key).

    Raises TargetError when the queue does not accept the message.
    """
    fifo = fifo_ids(delivery) if target.queue_url.endswith(".fifo") else {}
    with aws_errors(f"sqs SendMessage to {target.queue_url}"):
        client.send_message(QueueUrl=target.queue_url, MessageBody=envelope_json(delivery, signer), **fifo)


def publish_sns(target: SnsTarget, delivery: Delivery, client: Any, signer: Signer | None = None) -> None:
    """Publishes the envelope to the topic (FIFO: grouped by job, deduplicated by idempotency key).

    Raises TargetError when the topic does not accept the message.
    """
    fifo = fifo_ids(delivery) if target.topic_arn.endswith(".fifo") else {}
    with aws_errors(f"sns Publish to {target.topic_arn}"):
        client.publish(TopicArn=target.topic_arn, Message=envelope_json(delivery, signer), **fifo)


def put_event(
    target: EventBridgeTarget, delivery: Delivery, client: Any, signer: Signer | None = None
) -> None:
    """Puts one event whose detail is the envelope on the bus.

    Raises TargetError when the call fails or the bus rejects the entry (FailedEntryCount > 0).
    """
    entry = {
        "EventBusName": target.event_bus_name,
        "Source": target.source,
        "DetailType": target.detail_type,
        "Detail": envelope_json(delivery, signer),
    }
    with aws_errors(f"eventbridge PutEvents to {target.event_bus_name}"):
        response = client.put_events(Entries=[entry])
    if response.get("FailedEntryCount", 0) > 0:
        failed = (response.get("Entries") or [{}])[0]
        reason = _code_and_message(failed.get("ErrorCode"), failed.get("ErrorMessage"))
        raise TargetError(f"eventbridge bus {target.event_bus_name} rejected the event: {reason}")


def fifo_ids(delivery: Delivery) -> dict[str, str]:
    key = delivery.idempotency_key
    if len(key) > _FIFO_ID_LIMIT:
        key = hashlib.sha256(key.encode()).hexdigest()
    return {"MessageGroupId": delivery.job_id[:_FIFO_ID_LIMIT], "MessageDeduplicationId": key}


def _function_error_text(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    try:
        error = json.loads(text)
    except ValueError:
        return text.strip() or "(no error payload)"
    if isinstance(error, dict) and "errorMessage" in error:
        return f"{error.get('errorType', 'Error')}: {error['errorMessage']}"
    return text.strip()


def _code_and_message(code: str | None, message: str | None) -> str:
    return f"{code or 'UnknownError'}: {message}" if message else code or "UnknownError"


@contextlib.contextmanager
def aws_errors(call: str) -> Iterator[None]:
    """Turns what boto3 raises into TargetError naming the call, the AWS error code and message;
    into TargetTimedOut when the client's timeouts, set to fit the attempt's limit, ran out."""
    try:
        yield
    except (ReadTimeoutError, ConnectTimeoutError) as exc:
        raise TargetTimedOut(f"{call} timed out: {exc}") from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        reason = _code_and_message(error.get("Code"), error.get("Message"))
        raise TargetError(f"{call} failed: {reason}") from exc
    except BotoCoreError as exc:
        raise TargetError(f"{call} failed: {exc}") from exc
