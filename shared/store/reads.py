"""The store's reads: jobs, payloads, the due index, listings and run history."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared import constants as c
from shared import lifecycle
from shared.clock import Clock
from shared.errors import InvalidInput, JobNotFound
from shared.models import Job, Run, RunSummary
from shared.store import items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

BATCH_GET_LIMIT = 100
# DynamoDB's limit on a sort key value; the keys this API issues are far shorter.
_KEY_VALUE_BYTES = 1024
_LIST_KEY_ATTRIBUTES = {c.PARTITION_KEY, c.SORT_KEY, c.LIST_PARTITION_ATTRIBUTE, c.LIST_SORT_ATTRIBUTE}
_RUN_KEY_ATTRIBUTES = {c.PARTITION_KEY, c.SORT_KEY}

KeyCheck = Callable[[dict[str, str]], bool]
JobFilter = Callable[[Job], bool]


@dataclass(frozen=True)
class DueRow:
    """One due-index entry: a hint, since index reads are eventually consistent."""

    job_id: str
    due_key: str
    sort_key: str = items.JOB_SK  # the job itself, or an owed alert of one of its occurrences

    @property
    def due_at(self) -> int:
        return items.parse_due_key(self.due_key)[0]

    @property
    def is_lease(self) -> bool:
        return items.parse_due_key(self.due_key)[1] == items.LEASE_KIND

    @property
    def is_alert(self) -> bool:
        return items.parse_due_key(self.due_key)[1] == items.ALERT_KIND

    @property
    def ahead_token(self) -> str | None:
        """The token of a job waiting with it: its message may leave without a claim."""
        return items.ahead_token(self.due_key)

    @property
    def expires_at(self) -> int | None:
        """When the tick must look at the job itself: a lease's end, implied for an ahead row."""
        if self.is_lease:
            return self.due_at
        if self.ahead_token is not None:
            return lifecycle.ahead_lease(self.due_at)
        return None


@dataclass(frozen=True)
class SentMarks:
    """How far the tick has sent the messages of ahead rows, shard by shard. A shard without a mark
    of its own starts from the one mark of all shards that earlier versions kept (0 without one):
    that mark was true of every shard, so the upgrade neither skips nor repeats a send."""

    own: dict[int, int]
    shared: int = 0

    def of(self, shard: int) -> int:
        return self.own.get(shard, self.shared)


@dataclass(frozen=True)
class Page:
    jobs: list[Job]
    next_token: str | None


class StoreReads:
    def __init__(
        self, client: DynamoDBClient, table_name: str, clock: Clock, shards: items.DueShards | None = None
    ) -> None:
        self._client = client
        self._table = table_name
        self._clock = clock
        self.shards = shards or items.DueShards()

    @property
    def _written(self) -> int:
        return self.shards.written

    def get(self, job_id: str) -> Job:
        """The job, read strongly consistent. Raises JobNotFound."""
        response = self._client.get_item(
            TableName=self._table, Key=items.job_key(job_id), ConsistentRead=True
        )
        if "Item" not in response:
            raise JobNotFound(f"job '{job_id}' not found")
        return items.item_to_job(response["Item"])

    def owed_alert(self, job_id: str, sort_key: str) -> RunSummary | None:
        """The dead run whose alert is still owed, or None when it was sent meanwhile."""
        key = {c.PARTITION_KEY: {"S": items.job_pk(job_id)}, c.SORT_KEY: {"S": sort_key}}
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return items.item_to_alert(item) if item else None

    def sent_marks(self) -> SentMarks:
        """Every shard's sent mark, in one strongly consistent query of their partition."""
        partition = items.sent_mark_key(None)[c.PARTITION_KEY]
        paginator = self._client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :pk",
            ExpressionAttributeNames={"#pk": c.PARTITION_KEY},
            ExpressionAttributeValues={":pk": partition},
            ConsistentRead=True,
        )
        own: dict[int, int] = {}
        shared = 0
        for page in pages:
            for item in page["Items"]:
                sort_key, until = item[c.SORT_KEY]["S"], int(item["sent_until"]["N"])
                if sort_key.startswith(items.SENT_MARK_PREFIX):
                    own[int(sort_key.removeprefix(items.SENT_MARK_PREFIX))] = until
                else:
                    shared = until
        return SentMarks(own, shared)

    def load_payload(self, job: Job) -> Any:
        """The payload, from its own item when it was too large to keep on the job."""
        if not job.payload_stored_apart:
            return job.payload
        key = {c.PARTITION_KEY: {"S": items.job_pk(job.id)}, c.SORT_KEY: {"S": items.PAYLOAD_SK}}
        item = self._client.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
        return json.loads(item["payload"]["S"]) if item else None

    def due_rows(self, priority: str, shard: int, up_to_ms: int) -> Iterator[DueRow]:
        """Index entries of one shard due at or before up_to_ms, earliest first."""
        bound = f"{up_to_ms:013d}#~"  # '~' sorts after both kinds of entry
        paginator = self._client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self._table,
            IndexName=c.DUE_INDEX_NAME,
            KeyConditionExpression="#shard = :shard AND #due_key <= :bound",
            ExpressionAttributeNames={"#shard": c.DUE_SHARD_ATTRIBUTE, "#due_key": c.DUE_KEY_ATTRIBUTE},
            ExpressionAttributeValues={":shard": {"S": f"{priority}#{shard}"}, ":bound": {"S": bound}},
        )
        for page in pages:
            for item in page["Items"]:
                job_id = item[c.PARTITION_KEY]["S"].removeprefix("JOB#")
                yield DueRow(job_id, item[c.DUE_KEY_ATTRIBUTE]["S"], item[c.SORT_KEY]["S"])

    def list_jobs(
        self, limit: int, next_token: str | None, keep: JobFilter | None = None, max_reads: int = 1000
    ) -> Page:
        """Newest first, filtered by `keep(job)`.

        Reads at most `max_reads` index rows per call, so a rare filter answers a short page, even an
        empty one, with a next_token rather than a slow answer. The token is the position of the last
        job looked at, so following the tokens with the same filter gives every match exactly once.
        """
        start = _decode_token(next_token, _is_list_key)
        found: list[Job] = []
        read = 0
        while len(found) < limit and read < max_reads:
            # Unfiltered, every row is a job of the page; filtered, read whole batches and stop
            # mid-batch when the page is full.
            wanted = min(BATCH_GET_LIMIT, max_reads - read) if keep else limit - len(found)
            ids, start = self._list_page(start, wanted)
            read += len(ids)
            jobs = {job.id: job for job in self._batch_get(ids)}
            for index, job_id in enumerate(ids):
                job = jobs.get(job_id)
                if job is not None and (keep is None or keep(job)):
                    found.append(job)
                if len(found) == limit and index < len(ids) - 1:
                    start = _list_key(job_id)
                    break
            if start is None:
                break
        return Page(found, _encode_token(start))

    def runs(self, job_id: str, limit: int, next_token: str | None) -> tuple[list[Run], str | None]:
        """Attempt history, newest first."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND begins_with(#sk, :prefix)",
            "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY, "#sk": c.SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": items.job_pk(job_id)},
                ":prefix": {"S": items.RUN_PREFIX},
            },
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = _decode_token(next_token, _run_key_of(job_id))
        if start:
            request["ExclusiveStartKey"] = start
        response = self._query(request)
        runs = [items.item_to_run(item) for item in response["Items"]]
        return runs, _encode_token(response.get("LastEvaluatedKey"))

    def _list_page(self, start: dict[str, Any] | None, limit: int) -> tuple[list[str], dict[str, Any] | None]:
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.LIST_INDEX_NAME,
            "KeyConditionExpression": "#lp = :lp",
            "ExpressionAttributeNames": {"#lp": c.LIST_PARTITION_ATTRIBUTE},
            "ExpressionAttributeValues": {":lp": {"S": items.LIST_PK}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if start:
            request["ExclusiveStartKey"] = start
        response = self._query(request)
        ids = [item[c.LIST_SORT_ATTRIBUTE]["S"] for item in response["Items"]]
        return ids, response.get("LastEvaluatedKey")

    def _query(self, request: dict[str, Any]) -> QueryOutputTypeDef:
        """Raises InvalidInput when DynamoDB refuses the start key that a next_token gave."""
        try:
            return self._client.query(**request)
        except ClientError as exc:
            # The key was checked against what this API issues; this is the backstop for a rule of
            # DynamoDB's that the check does not know.
            refused = exc.response.get("Error", {}).get("Code") == "ValidationException"
            if refused and "ExclusiveStartKey" in request:
                raise _not_issued() from exc
            raise

    def _batch_get(self, job_ids: list[str]) -> list[Job]:
        if not job_ids:
            return []
        keys: list[Any] = [items.job_key(job_id) for job_id in job_ids]
        found: dict[str, Job] = {}
        while keys:
            response = self._client.batch_get_item(RequestItems={self._table: {"Keys": keys}})
            for item in response["Responses"].get(self._table, []):
                job = items.item_to_job(item)
                found[job.id] = job
            unprocessed: dict[str, Any] = dict(response.get("UnprocessedKeys") or {})
            keys = list(unprocessed.get(self._table, {}).get("Keys", []))
        return [found[job_id] for job_id in job_ids if job_id in found]


def _encode_token(key: dict[str, Any] | None) -> str | None:
    if not key:
        return None
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode().rstrip("=")


def _decode_token(token: str | None, fits: KeyCheck) -> dict[str, Any] | None:
    """The start key a next_token stands for, or None without one.

    Raises InvalidInput (field "next_token") unless the token decodes to a key whose attributes are
    all short strings and that `fits` the query it is offered to. A key of another shape, query or
    job would otherwise reach DynamoDB, whose refusal is no 400.
    """
    if not token:
        return None
    try:
        key = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
        raise _not_issued() from exc
    strings = _string_attributes(key)
    if strings is None or not fits(strings):
        raise _not_issued()
    start: dict[str, Any] = key
    return start


def _string_attributes(key: object) -> dict[str, str] | None:
    """{name: value} when every attribute of `key` is exactly {"S": value} with a value DynamoDB
    takes in a key; None otherwise."""
    if not isinstance(key, dict):
        return None
    strings: dict[str, str] = {}
    for name, attribute in key.items():
        if not (isinstance(attribute, dict) and attribute.keys() == {"S"}):
            return None
        value = attribute["S"]
        if not isinstance(value, str) or not _fits_a_key(value):
            return None
        strings[name] = value
    return strings


def _fits_a_key(value: str) -> bool:
    try:
        encoded = value.encode()
    except UnicodeEncodeError:  # a lone surrogate, which JSON's \u escapes can carry
        return False
    return len(encoded) <= _KEY_VALUE_BYTES


def _list_key(job_id: str) -> dict[str, Any]:
    """The list index's key of a job: where a page that ends on it goes on from."""
    return {
        c.PARTITION_KEY: {"S": items.job_pk(job_id)},
        c.SORT_KEY: {"S": items.JOB_SK},
        c.LIST_PARTITION_ATTRIBUTE: {"S": items.LIST_PK},
        c.LIST_SORT_ATTRIBUTE: {"S": job_id},
    }


def _is_list_key(key: dict[str, str]) -> bool:
    """A key the list index issues: a job item's, in the one listing partition."""
    return (
        key.keys() == _LIST_KEY_ATTRIBUTES
        and key[c.LIST_PARTITION_ATTRIBUTE] == items.LIST_PK
        and key[c.SORT_KEY] == items.JOB_SK
        and key[c.PARTITION_KEY] == items.job_pk(key[c.LIST_SORT_ATTRIBUTE])
    )


def _run_key_of(job_id: str) -> KeyCheck:
    """Accepts a key of one of this job's history items, and nothing else."""

    def fits(key: dict[str, str]) -> bool:
        return (
            key.keys() == _RUN_KEY_ATTRIBUTES
            and key[c.PARTITION_KEY] == items.job_pk(job_id)
            and key[c.SORT_KEY].startswith(items.RUN_PREFIX)
        )

    return fits


def _not_issued() -> InvalidInput:
    return InvalidInput("next_token is not one this API issued", field="next_token")
