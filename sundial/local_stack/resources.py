"""Creates the table and queues on the emulator, from the same constants as the CDK app. Idempotent."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sundial.contract.vocabulary import Priority
from sundial.shared import constants as c
from sundial.shared.store.upgrade import backfill_listing

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

# Standard Webhooks secrets are whsec_ and the base64 of 24 to 64 random bytes.
_SIGNING_KEY_BYTES = 32


@dataclass(frozen=True)
class Resources:
    table_name: str
    queue_urls: dict[Priority, str]
    dead_letter_queue_url: str
    signing_secret_arn: str | None = None
    header_key_arn: str | None = None


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


def table_definition(table_name: str, filter_indexes: int = len(c.FILTER_INDEXES)) -> dict[str, Any]:
    """The CreateTable request; the CDK table construct declares the same keys and indexes.
    `filter_indexes` leaves out the last of them: a table as an older release made it."""
    listing = [c.LIST_INDEX_NAME, *c.FILTER_INDEXES[:filter_indexes]]
    indexes = [index_definition(c.DUE_INDEX_NAME, c.DUE_SHARD_ATTRIBUTE, c.DUE_KEY_ATTRIBUTE)]
    indexes += [index_definition(name, c.LIST_INDEX_KEYS[name], c.LIST_SORT_ATTRIBUTE) for name in listing]
    keys = {key["AttributeName"] for index in indexes for key in index["KeySchema"]}
    return {
        "TableName": table_name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": name, "AttributeType": "S"}
            for name in (c.PARTITION_KEY, c.SORT_KEY, *sorted(keys))
        ],
        "KeySchema": [
            {"AttributeName": c.PARTITION_KEY, "KeyType": "HASH"},
            {"AttributeName": c.SORT_KEY, "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": indexes,
    }


def index_definition(name: str, partition: str, sort: str) -> dict[str, Any]:
    """One KEYS_ONLY index, as CreateTable and UpdateTable's Create take it."""
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": partition, "KeyType": "HASH"},
            {"AttributeName": sort, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    }


def _ensure_table(dynamodb: DynamoDBClient, table_name: str) -> None:
    # A describe, not ListTables: that answers 100 names a page, and an emulator shared by many
    # stacks holds more.
    try:
        dynamodb.describe_table(TableName=table_name)
    except dynamodb.exceptions.ResourceNotFoundException:
        pass
    else:
        upgrade_table(dynamodb, table_name)
        return
    dynamodb.create_table(**table_definition(table_name))
    dynamodb.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": c.TTL_ATTRIBUTE},
    )


def upgrade_table(dynamodb: DynamoDBClient, table_name: str) -> list[str]:
    """A table saved by an older release, moved onto the listing indexes as a deployed one is
    (docs/operations.md): every job given its listing keys, then each missing index added, one per
    UpdateTable. Returns the indexes added."""
    present = {
        index["IndexName"]
        for index in dynamodb.describe_table(TableName=table_name)["Table"].get("GlobalSecondaryIndexes", [])
    }
    missing = [
        i for i in table_definition(table_name)["GlobalSecondaryIndexes"] if i["IndexName"] not in present
    ]
    if not missing:
        return []  # made by this release: every job was written with its keys
    backfill_listing(dynamodb, table_name)
    added = []
    for index in missing:
        keys = [key["AttributeName"] for key in index["KeySchema"]]
        dynamodb.update_table(
            TableName=table_name,
            AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"} for name in keys],
            GlobalSecondaryIndexUpdates=[{"Create": index}],
        )
        added.append(index["IndexName"])
    return added


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


def ensure_header_key(kms: Any, *, prefix: str = "") -> str:
    """The ARN of the emulator's key that seals inline header values, made (with rotation) if missing."""
    alias = c.HEADER_KEY_ALIAS + (f"-{prefix.rstrip('-')}" if prefix else "")
    try:
        return str(kms.describe_key(KeyId=alias)["KeyMetadata"]["Arn"])
    except kms.exceptions.NotFoundException:
        pass
    made = kms.create_key(Description="Seals Sundial's inline header values")["KeyMetadata"]
    kms.enable_key_rotation(KeyId=made["KeyId"])
    kms.create_alias(AliasName=alias, TargetKeyId=made["KeyId"])
    return str(made["Arn"])
