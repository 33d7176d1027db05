"""The store's reads: jobs, payloads, the due index, listings and run history."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sundial.shared import constants as c
from sundial.shared import lifecycle
from sundial.shared.clock import Clock
from sundial.shared.errors import InvalidInput, JobNotFound
from sundial.shared.models import Job, Run, RunSummary
from sundial.shared.store import items, listing
from sundial.shared.store.listing import Listed, ListFilter

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import QueryOutputTypeDef

BATCH_GET_LIMIT = 100
# DynamoDB's limit on a sort key value; the keys this API issues are far shorter.
_KEY_VALUE_BYTES = 1024
READY_ALL = frozenset({c.LIST_INDEX_NAME, *c.FILTER_INDEXES})
_RUN_KEY_ATTRIBUTES = {c.PARTITION_KEY, c.SORT_KEY}

KeyCheck = Callable[[dict[str, str]], bool]


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
class SentMark:
    """How far the tick has sent one shard's ahead rows: every row due at or before `until`, and
    every row at or before `within` in the tick's own order (items.send_position), which a tick
    records as it goes, inside a second. Both are facts once written, so a stale one stays true."""

    until: int
    within: str = ""

    def covers(self, due_at: int, position: str) -> bool:
        return due_at <= self.until or (bool(self.within) and position <= self.within)

    def after(self, other: SentMark) -> bool:
        """Whether this mark says more than `other` (as the store's condition orders them)."""
        return (self.until, self.within) > (other.until, other.within)


@dataclass(frozen=True)
class SentMarks:
    """Every shard's sent mark. A shard without a mark of its own starts from the one mark of all
    shards that earlier versions kept (0 without one): that mark was true of every shard, so the
    upgrade neither skips nor repeats a send."""

    own: dict[int, SentMark]
    shared: int = 0

    def of(self, shard: int) -> int:
        return self.mark(shard).until

    def mark(self, shard: int) -> SentMark:
        return self.own.get(shard, SentMark(self.shared))


class StoreReads:
    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        clock: Clock,
        shards: items.DueShards | None = None,
        retention_days: int = c.DEFAULT_RETENTION_DAYS,
    ) -> None:
        self._client = client
        self._table = table_name
        self._clock = clock
        self.shards = shards or items.DueShards()
        # How long run history and the skip ledger are kept: a setting of the stage
        self.retention_seconds = retention_days * 24 * 3600

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
        own: dict[int, SentMark] = {}
        shared = 0
        for page in pages:
            for item in page["Items"]:
                sort_key, until = item[c.SORT_KEY]["S"], int(item[items.SENT_UNTIL]["N"])
                if sort_key.startswith(items.SENT_MARK_PREFIX):
                    within = item.get(items.SENT_WITHIN, {}).get("S", "")
                    own[int(sort_key.removeprefix(items.SENT_MARK_PREFIX))] = SentMark(until, within)
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
        self, wanted: ListFilter, limit: int, next_token: str | None, ready: frozenset[str] | None = None
    ) -> Listed:
        """Newest first, every job that `wanted` matches once across the pages, each page full
        unless nothing more matches (sundial/shared/store/listing.py). `ready`: the filter indexes that exist
        and are backfilled (None: all). Raises InvalidInput (field next_token) for a bad token."""
        the_plan = listing.plan(wanted, READY_ALL if ready is None else ready)
        lister = listing.Lister(self._client, self._table, self._query, self._batch_get, self._clock.now_ms())
        return lister.page(the_plan, wanted, limit, next_token)

    def runs(
        self, job_id: str, limit: int, next_token: str | None, settled: Run | None = None
    ) -> tuple[list[Run], str | None]:
        """Attempt history, newest first. `settled`: the attempt the job's last_run holds. The
        worker writes its history item just after the settle, so the first page shows it from the
        settle on, newer than every item and not among them yet."""
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
        token = _encode_token(response.get("LastEvaluatedKey"))
        if start or settled is None or (runs and _run_order(runs[0]) >= _run_order(settled)):
            return runs, token
        runs.insert(0, settled)
        if len(runs) > limit:
            del runs[limit:]
            token = _encode_token(_run_key(runs[-1]))
        return runs, token

    def runs_between(self, job_id: str, from_ms: int, until_ms: int) -> list[Run]:
        """Every history item of the instants in [from, until), oldest first (a consistent read)."""
        low, high = items.run_sk(max(0, from_ms), 0), items.run_sk(max(0, until_ms - 1), 999)
        return [items.item_to_run(item) for item in self._between(job_id, low, high)]

    def _between(self, job_id: str, low: str, high: str) -> list[dict[str, Any]]:
        """Every item of the job's partition whose sort key lies in [low, high], in their order, read
        strongly consistent and page after page."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :pk AND #sk BETWEEN :low AND :high",
            "ExpressionAttributeNames": {"#pk": c.PARTITION_KEY, "#sk": c.SORT_KEY},
            "ExpressionAttributeValues": {
                ":pk": {"S": items.job_pk(job_id)},
                ":low": {"S": low},
                ":high": {"S": high},
            },
            "ConsistentRead": True,
        }
        found: list[dict[str, Any]] = []
        while True:
            page = self._client.query(**request)
            found += page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return found
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def _query(self, request: Any) -> QueryOutputTypeDef:
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


def _run_order(run: Run) -> tuple[int, int]:
    return run.scheduled_at, run.attempt


def _run_key(run: Run) -> dict[str, Any]:
    """The start key of the page after `run`, as DynamoDB gives it for a history item."""
    return {
        c.PARTITION_KEY: {"S": items.job_pk(run.job_id)},
        c.SORT_KEY: {"S": items.run_sk(run.scheduled_at, run.attempt)},
    }


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
    return listing.not_issued()
