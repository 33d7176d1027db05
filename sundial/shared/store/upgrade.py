"""The backfill that moves jobs written before the sharded listing indexes onto them.

Every write since gives a job its listing keys itself (items.index_moves); this gives them to the
jobs written before, and their health (dead when their last occurrence died): a Scan of the table,
and for each job item whose keys are not yet what items.listing_attributes says, one UpdateItem of
those alone, conditional on the job's version read, so that it never writes keys from a state the
job has left (on a failed condition it reads the job again and decides again). It can stop at any
point: run again, it writes only what is still missing, and `start` skips the part of the table done
(docs/operations.md, "Upgrading the listing indexes").
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sundial.contract.vocabulary import Health, RunStatus
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import items
from sundial.shared.store.writes import is_condition_failure

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The listing keys, every one of which a job either holds with the right value or must not hold.
LISTING_KEYS = (c.LIST_SORT_ATTRIBUTE, *c.LIST_INDEX_KEYS.values())
ROUNDS = 5


@dataclass
class Progress:
    """How far the backfill went: items looked at, jobs given their keys, where to go on from."""

    scanned: int = 0
    written: int = 0
    next_start: str | None = None


def backfill_listing(
    client: DynamoDBClient,
    table: str,
    start: str | None = None,
    segment: int = 0,
    segments: int = 1,
    on_page: Callable[[Progress], None] | None = None,
) -> Progress:
    """Gives every job item its listing keys; `segment` of `segments` for a parallel run, `start`
    a `next_start` an earlier run reported. Returns when the segment is done (next_start None)."""
    progress = Progress(next_start=start)
    request: dict[str, Any] = {"TableName": table, "Segment": segment, "TotalSegments": segments}
    while True:
        if progress.next_start:
            request["ExclusiveStartKey"] = json.loads(base64.urlsafe_b64decode(progress.next_start))
        page = client.scan(**request)
        for item in page["Items"]:
            progress.scanned += 1
            if item[c.SORT_KEY]["S"] == items.JOB_SK and _give_keys(client, table, item):
                progress.written += 1
        last = page.get("LastEvaluatedKey")
        progress.next_start = base64.urlsafe_b64encode(json.dumps(last).encode()).decode() if last else None
        if on_page is not None:
            on_page(progress)
        if last is None:
            return progress


def _give_keys(client: DynamoDBClient, table: str, item: dict[str, Any]) -> bool:
    """True when this call wrote the job's keys; False when they were right already."""
    for _ in range(ROUNDS):
        job = _with_health(items.item_to_job(item), item)
        wanted = items.serialize({**items.listing_attributes(job), **_health_of(job, item)})
        derived = ("health", "consecutive_failures") if "health" in wanted else ()
        stale = [name for name in (*LISTING_KEYS, *derived) if item.get(name) != wanted.get(name)]
        if not stale:
            return False
        try:
            client.update_item(
                TableName=table, Key=items.job_key(_job_id(item)), **_request(item, wanted, stale)
            )
            return True
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
        found = client.get_item(TableName=table, Key=items.job_key(_job_id(item)), ConsistentRead=True)
        if "Item" not in found:
            return False
        item = found["Item"]
    raise RuntimeError(f"job '{_job_id(item)}' kept changing during the backfill; run it again")


def _with_health(job: Job, item: dict[str, Any]) -> Job:
    """A job written before health was kept: dead when its last occurrence died (one in a row, as
    far as anything tells), ok otherwise."""
    if "health" in item or job.last_run is None or job.last_run.status is not RunStatus.DEAD:
        return job
    return job.model_copy(update={"health": Health.DEAD, "consecutive_failures": 1})


def _health_of(job: Job, item: dict[str, Any]) -> dict[str, Any]:
    if "health" in item or job.health is Health.OK:
        return {}
    return {"health": job.health, "consecutive_failures": job.consecutive_failures}


def _request(item: dict[str, Any], wanted: dict[str, Any], stale: list[str]) -> dict[str, Any]:
    names = {f"#k{n}": name for n, name in enumerate(stale)}
    values = {f":k{n}": wanted[name] for n, name in enumerate(stale) if name in wanted}
    sets = [f"#k{n} = :k{n}" for n, name in enumerate(stale) if name in wanted]
    removes = [f"#k{n}" for n, name in enumerate(stale) if name not in wanted]
    expression = (f"SET {', '.join(sets)} " if sets else "") + (
        f"REMOVE {', '.join(removes)}" if removes else ""
    )
    names["#version"] = "version"
    if "version" in item:
        condition = "#version = :version"
        values[":version"] = item["version"]
    else:
        condition = "attribute_exists(#pk) AND attribute_not_exists(#version)"
        names["#pk"] = c.PARTITION_KEY
    request: dict[str, Any] = {
        "UpdateExpression": expression.strip(),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": names,
    }
    if values:
        request["ExpressionAttributeValues"] = values
    return request


def _job_id(item: dict[str, Any]) -> str:
    return str(item[c.PARTITION_KEY]["S"]).removeprefix("JOB#")
