"""Seals the inline header values and url queries of jobs stored before sealing (docs/operations.md,
"Sealed header values"): a Scan of the table, and for each job whose target still holds a plain value that
answers mask, one UpdateItem of its target alone, conditional on the target read. A target never changes
after its create, so a failed condition means another run sealed it first. Run again, it writes
nothing that is sealed already.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sundial.contract.targets import AnyTarget, HttpTarget
from sundial.shared import constants as c
from sundial.shared.store import items
from sundial.shared.store.writes import is_condition_failure
from sundial.shared.targets.models import is_shown_header, plain_query

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# (target, job id) -> the target with its inline values sealed for that job
Seal = Callable[[AnyTarget, str], AnyTarget]


@dataclass
class Resealed:
    scanned: int = 0
    sealed: int = 0


def reseal_headers(client: DynamoDBClient, table: str, seal: Seal) -> Resealed:
    """Seals every job's plain inline header values and url query; returns how many items it read
    and sealed."""
    done = Resealed()
    request: dict[str, Any] = {"TableName": table}
    while True:
        page = client.scan(**request)
        for item in page["Items"]:
            done.scanned += 1
            if item[c.SORT_KEY]["S"] == items.JOB_SK and _reseal(client, table, item, seal):
                done.sealed += 1
        if "LastEvaluatedKey" not in page:
            return done
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _reseal(client: DynamoDBClient, table: str, item: dict[str, Any], seal: Seal) -> bool:
    job = items.item_to_job(item)
    if not _has_plain_values(job.target):
        return False
    sealed = seal(job.target, job.id)
    try:
        client.update_item(
            TableName=table,
            Key=items.job_key(job.id),
            UpdateExpression="SET #target = :sealed",
            ConditionExpression="#target = :read",
            ExpressionAttributeNames={"#target": "target"},
            ExpressionAttributeValues={":sealed": {"S": sealed.model_dump_json()}, ":read": item["target"]},
        )
    except ClientError as exc:
        if not is_condition_failure(exc):
            raise
        return False
    return True


def _has_plain_values(target: AnyTarget) -> bool:
    if not isinstance(target, HttpTarget):
        return False
    return bool(plain_query(target)) or any(
        isinstance(value, str) and not is_shown_header(name) for name, value in target.headers.items()
    )
