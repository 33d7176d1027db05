"""Creates the table and queues on the emulator, from the same constants as the CDK app. Idempotent."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared import constants as c

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

# Standard Webhooks secrets are whsec_ and the base64 of 24 to 64 random bytes.
_SIGNING_KEY_BYTES = 32


@dataclass(frozen=True)
class Resources:
    table_name: str
    queue_urls: dict[c.Priority, str]
    dead_letter_queue_url: str
    signing_secret_arn: str | None = None


def ensure_resources(
    dynamodb: DynamoDBClient, sqs: SQSClient, *, prefix: str = "", visibility_timeout: int | None = None
) -> Resources:
    """Creates what is missing; `prefix` lets tests keep their own table and queues on one emulator."""
    table_name = prefix + c.TABLE_NAME
    _ensure_table(dynamodb, table_name)
    dead_url = sqs.create_queue(
        QueueName=prefix + c.DEAD_LETTER_QUEUE_NAME,
        Attributes={"MessageRetentionPeriod": str(c.DEAD_LETTER_RETENTION_DAYS * 24 * 3600)},
    )["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    redrive = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": c.MAX_RECEIVE_COUNT})
    visibility = str(visibility_timeout or c.QUEUE_VISIBILITY_TIMEOUT_SECONDS)
    queue_urls = {
        priority: sqs.create_queue(
            QueueName=prefix + name,
            Attributes={"VisibilityTimeout": visibility, "RedrivePolicy": redrive},
        )["QueueUrl"]
        for priority, name in c.QUEUE_NAMES.items()
    }
    return Resources(table_name, queue_urls, dead_url)


def table_definition(table_name: str) -> dict[str, Any]:
    """The CreateTable request; the CDK table construct declares the same keys and indexes."""
    keys_only = {"ProjectionType": "KEYS_ONLY"}
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"}
            for name in (
                c.PARTITION_KEY,
                c.SORT_KEY,
                c.DUE_SHARD_ATTRIBUTE,
                c.DUE_KEY_ATTRIBUTE,
                c.LIST_PARTITION_ATTRIBUTE,
                c.LIST_SORT_ATTRIBUTE,
            )
        ],
        "KeySchema": [
            {"AttributeName": c.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": c.SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": c.DUE_INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": c.DUE_SHARD_ATTRIBUTE, "KeyType": "HASH"},
                    {"AttributeName": c.DUE_KEY_ATTRIBUTE, "KeyType": "RANGE"},
                ],
                "Projection": keys_only,
            },
            {
                "IndexName": c.LIST_INDEX_NAME,
                "KeySchema": [
                    {"AttributeName": c.LIST_PARTITION_ATTRIBUTE, "KeyType": "HASH"},
                    {"AttributeName": c.LIST_SORT_ATTRIBUTE, "KeyType": "RANGE"},
                ],
                "Projection": keys_only,
            },
        ],
    }


def _ensure_table(dynamodb: DynamoDBClient, table_name: str) -> None:
    if table_name in dynamodb.list_tables()["TableNames"]:
        return
    dynamodb.create_table(**table_definition(table_name))
    dynamodb.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": c.TTL_ATTRIBUTE},
    )


def ensure_signing_secret(secretsmanager: Any, *, prefix: str = "") -> str:
    """The ARN of the emulator's signing secret, made with a fresh random key if missing."""
    name = prefix + c.SIGNING_SECRET_NAME
    try:
        return str(secretsmanager.describe_secret(SecretId=name)["ARN"])
    except secretsmanager.exceptions.ResourceNotFoundException:
        pass
    value = "whsec_" + base64.b64encode(secrets.token_bytes(_SIGNING_KEY_BYTES)).decode()
    made = secretsmanager.create_secret(
        Name=name, SecretString=value, Description="Signs Sundial's deliveries (Standard Webhooks)"
    )
    return str(made["ARN"])
