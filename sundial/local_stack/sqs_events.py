"""Turns messages from ReceiveMessage into the records of the SQS event Lambda hands a function."""

from __future__ import annotations

import base64
from typing import Any


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One record of a Lambda SQS event, from one message of a ReceiveMessage answer."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": {
            name: _lambda_attribute(value) for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def sqs_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Records": records}


def succeeded(records: list[dict[str, Any]], response: object) -> list[dict[str, Any]]:
    """The records a handler did not report as failed (partial batch response)."""
    failed = failed_ids(response)
    return [record for record in records if record["messageId"] not in failed]


def failed_ids(response: object) -> set[str]:
    """The message ids a handler reported in `batchItemFailures` (partial batch response)."""
    if not isinstance(response, dict):
        return set()
    failures = response.get("batchItemFailures") or []
    return {str(item["itemIdentifier"]) for item in failures if isinstance(item, dict)}


def _lambda_attribute(value: dict[str, Any]) -> dict[str, Any]:
    # Lambda spells message attributes in camelCase and always lists both list fields.
    shaped: dict[str, Any] = {
        "dataType": value.get("DataType", "String"),
        "stringListValues": [],
        "binaryListValues": [],
    }
    if "StringValue" in value:
        shaped["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        shaped["binaryValue"] = base64.b64encode(value["BinaryValue"]).decode()
    return shaped
