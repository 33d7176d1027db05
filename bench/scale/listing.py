"""Items a listing page reads among 10 million jobs: the store's own listing code (JobStore.list_jobs:
the plan, the merge across shards, the total) on a real botocore client, answered by a model of the
table's listing indexes that holds every job, and counts what it reads to answer.

Ten million job items do not fit in memory as items; they are held as numbers. Job n's id is a ULID
made at BASE_MS + n * SPACING_MS (so ids sort as n does), and every other field follows from n (its
priority, its name, whether it is one of the few dead ones, the oldest). Each index partition keeps
the sorted numbers of its jobs, placed by the store's own functions (items.list_shard,
items.list_partition, items.name_key), so a Query reads rows from a position by bisection, and a
BatchGetItem builds each job item with items.job_to_item when it is read, checking that the item
names the very partitions the model put it in. What a page reads is counted at the source: the
rows each Query answer holds (Select=COUNT: the rows counted), and the items each BatchGetItem
returns.
"""

from __future__ import annotations

import base64
import bisect
import json
import threading
import time
from array import array
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse
from ulid import ULID

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import Health, JobStatus, Priority
from sundial.shared import constants as c
from sundial.shared.models import Job
from sundial.shared.store import DueShards, JobStore, ListFilter, items
from sundial.shared.store.listing import ulid_ms

BASE_MS = 1_893_456_000_000  # 2030-01-01T00:00:00Z: job n is created n * SPACING_MS later
SPACING_MS = 3_000  # 10 million jobs created over a year
JOBS = 10_000_000
DEAD = 2
PAGE = 50
PAGE_ROWS = 10_000  # a Query's answer stops at 1 MB: about this many rows of a keys-only index
_STANDARD = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_TO_CROCKFORD = str.maketrans(_STANDARD, _CROCKFORD)
_TARGET = PythonTarget(type="python", handler="noop")


def job_id(n: int) -> str:
    """Job n's ULID: its creation instant in its time part, n spread over its random part."""
    value = ((BASE_MS + n * SPACING_MS) << 80) | ((n * 0x9E3779B97F4A7C15F39C) & ((1 << 80) - 1))
    # 128 bits in 26 base-32 characters: the first holds 3 bits, so 2 zero bits go in front.
    text = base64.b32encode((value << 6).to_bytes(17, "big")).decode()[:26]
    return text.translate(_TO_CROCKFORD)


def number_of(job: str) -> int:
    return (ulid_ms(job) - BASE_MS) // SPACING_MS


def priority_of(n: int) -> Priority:
    return c.PRIORITIES[n % len(c.PRIORITIES)]


def job_of(n: int) -> Job:
    """Job n as the store holds it: the first DEAD are one-offs that died, the rest wait for 2031."""
    dead = n < DEAD
    created = BASE_MS + n * SPACING_MS
    return Job(
        id=job_id(n),
        name=f"report-{n:08d}",
        status=JobStatus.DEAD if dead else JobStatus.PENDING,
        health=Health.DEAD if dead else Health.OK,
        consecutive_failures=1 if dead else 0,
        priority=priority_of(n),
        target=_TARGET,
        run_at=created + 3_600_000,
        scheduled_at=created + 3_600_000,
        due_at=None if dead else created + 400 * 86_400_000,
        created_at=created,
        updated_at=created,
    )


@dataclass
class Reads:
    rows: int = 0  # index rows the page's queries read
    counted: int = 0  # index rows the total's COUNT queries read
    items: int = 0  # job items read
    queries: int = 0

    @property
    def total(self) -> int:
        return self.rows + self.counted + self.items


@dataclass
class ListingIndexes:
    """Each listing index's partitions: partition key value -> the sorted numbers of its jobs."""

    jobs: int
    partitions: dict[str, dict[str, array[int]]] = field(default_factory=dict)
    reads: Reads = field(default_factory=Reads)
    lock: threading.Lock = field(default_factory=threading.Lock)  # the listing queries from threads

    @classmethod
    def build(cls, jobs: int) -> ListingIndexes:
        for n in (0, 1, jobs - 1):
            ulid = ULID.from_timestamp((BASE_MS + n * SPACING_MS) / 1000)
            assert job_id(n)[:10] == str(ulid)[:10], "job ids carry their creation instant"
        shards = range(c.LIST_SHARDS)
        by_shard = [array("q") for _ in shards]
        priorities = [p.value for p in c.PRIORITIES]
        by_priority = [[array("q") for _ in shards] for _ in priorities]
        for n in range(jobs):
            shard = items.list_shard(job_id(n))
            by_shard[shard].append(n)
            by_priority[n % len(priorities)][shard].append(n)
        name_key = items.name_key(job_of(0).name or "")
        dead = defaultdict(lambda: array("q"))
        for n in range(DEAD):
            dead[items.list_shard(job_id(n))].append(n)

        def keyed(value: str, rows: list[array[int]] | dict[int, array[int]]) -> dict[str, array[int]]:
            pairs = enumerate(rows) if isinstance(rows, list) else rows.items()
            return {items.list_partition(value, shard): numbers for shard, numbers in pairs}

        partitions = {
            c.LIST_INDEX_NAME: keyed("JOBS", by_shard),
            c.PRIORITY_INDEX_NAME: {
                key: rows
                for value, per_shard in zip(priorities, by_priority, strict=True)
                for key, rows in keyed(value, per_shard).items()
            },
            c.NAME_INDEX_NAME: keyed(name_key, by_shard),  # every job's name starts alike
            c.STATUS_INDEX_NAME: keyed(JobStatus.DEAD.value, dead),
            c.HEALTH_INDEX_NAME: keyed(Health.DEAD.value, dead),
        }
        return cls(jobs, partitions)

    def answer(self, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        if operation == "Query":
            return self._query(body)
        if operation == "BatchGetItem":
            return self._batch_get(body)
        raise NotImplementedError(f"the listing model answers Query and BatchGetItem, not {operation}")

    def _query(self, body: dict[str, Any]) -> dict[str, Any]:
        index = body["IndexName"]
        key_attribute = c.LIST_INDEX_KEYS[index]
        partition = body["ExpressionAttributeValues"][":p"]["S"]
        rows = self.partitions[index].get(partition, array("q"))
        forward = bool(body.get("ScanIndexForward", True))
        start = body.get("ExclusiveStartKey")
        limit = min(int(body.get("Limit", PAGE_ROWS)), PAGE_ROWS)
        read = list(_window(rows, forward, start and number_of(start[c.LIST_SORT_ATTRIBUTE]["S"]), limit))
        more = bool(read) and (
            (forward and bisect.bisect_right(rows, read[-1]) < len(rows))
            or (not forward and read[-1] > rows[0])
        )
        with self.lock:
            self.reads.queries += 1
            if body.get("Select") == "COUNT":
                self.reads.counted += len(read)
            else:
                self.reads.rows += len(read)
        answer: dict[str, Any] = {"Count": len(read), "ScannedCount": len(read)}
        if body.get("Select") != "COUNT":
            answer["Items"] = [_row(key_attribute, partition, n) for n in read]
        if more:
            answer["LastEvaluatedKey"] = _row(key_attribute, partition, read[-1])
        return answer

    def _batch_get(self, body: dict[str, Any]) -> dict[str, Any]:
        (table, wanted), *_ = body["RequestItems"].items()
        found = []
        for key in wanted["Keys"]:
            n = number_of(key[c.PARTITION_KEY]["S"].split("#", 1)[1])
            item = items.job_to_item(job_of(n), "model")
            self._check_placed(n, item)
            found.append(item)
        with self.lock:
            self.reads.items += len(found)
        return {"Responses": {table: found}, "UnprocessedKeys": {}}

    def _check_placed(self, n: int, item: dict[str, Any]) -> None:
        """The item the store writes names each index partition the model holds the job in."""
        for index, attribute in c.LIST_INDEX_KEYS.items():
            value = item.get(attribute, {}).get("S")
            rows = self.partitions[index].get(value, array("q")) if value else array("q")
            at = bisect.bisect_left(rows, n)
            placed = at < len(rows) and rows[at] == n
            assert placed == (value is not None), f"job {n}: {attribute}={value}, placed {placed}"


def _window(rows: array[int], forward: bool, after: int | None, limit: int) -> Iterator[int]:
    if forward:
        start = 0 if after is None else bisect.bisect_right(rows, after)
        yield from rows[start : start + limit]
    else:
        end = len(rows) if after is None else bisect.bisect_left(rows, after)
        yield from reversed(rows[max(0, end - limit) : end])


def _row(key_attribute: str, partition: str, n: int) -> dict[str, Any]:
    ulid = job_id(n)
    return {
        c.PARTITION_KEY: {"S": items.job_pk(ulid)},
        c.SORT_KEY: {"S": items.JOB_SK},
        key_attribute: {"S": partition},
        c.LIST_SORT_ATTRIBUTE: {"S": ulid},
    }


class _Clock:
    def __init__(self, now_ms: int) -> None:
        self._now = now_ms

    def now_ms(self) -> int:
        return self._now


def store_on(indexes: ListingIndexes) -> JobStore:
    """The project's JobStore on a botocore client whose requests the model answers."""
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    client = session.client("dynamodb")

    def answer(request: Any, event_name: str, **_: Any) -> AWSResponse:
        body = json.loads(request.body or b"{}")
        answered = indexes.answer(event_name.rsplit(".", 1)[-1], body)
        return AWSResponse(request.url, 200, {}, MockRawResponse(json.dumps(answered).encode()))

    client.meta.events.register("before-send", answer)
    # A second after the last create: the total's estimate takes creates to go on evenly until now.
    now = BASE_MS + (indexes.jobs - 1) * SPACING_MS + 1000
    return JobStore(client, c.TABLE_NAME, _Clock(now), DueShards(c.DUE_SHARDS, None))


FILTERS: dict[str, ListFilter] = {
    "status=dead": ListFilter(status="dead"),
    "health=dead": ListFilter(health="dead"),
    "status=dead&priority=high": ListFilter(status="dead", priority="high"),
    "priority=high": ListFilter(priority="high"),
    "name_prefix=report": ListFilter(name_prefix="report"),
    "(none)": ListFilter(),
}
DEAD_FILTERS = ("status=dead", "health=dead", "status=dead&priority=high")


def measure(jobs: int = JOBS, ready: frozenset[str] | None = None) -> dict[str, Any]:
    """Builds the indexes, reads the first page of each filter, and says what each read. `ready`:
    the filter indexes the listing may use (None: all, as once the upgrade has backfilled them)."""
    started = time.monotonic()
    indexes = ListingIndexes.build(jobs)
    built = time.monotonic() - started
    store = store_on(indexes)
    dead = {job_id(n) for n in range(DEAD)}
    pages: dict[str, Any] = {}
    for name, wanted in FILTERS.items():
        indexes.reads = Reads()
        page = store.list_jobs(wanted, PAGE, None, ready)
        ids = [job.id for job in page.jobs]
        expected = dead if name in DEAD_FILTERS else None
        if name == "status=dead&priority=high":
            expected = {job_id(n) for n in range(DEAD) if priority_of(n) is Priority.HIGH}
        pages[name] = {
            "jobs": len(ids),
            "every_match": expected is None or (set(ids) == expected and page.next_token is None),
            "total": page.total,
            "total_is_estimate": page.total_is_estimate,
            "rows_read": indexes.reads.rows,
            "rows_counted": indexes.reads.counted,
            "items_read": indexes.reads.items,
            "read": indexes.reads.total,
            "queries": indexes.reads.queries,
        }
    return {"jobs": jobs, "page_size": PAGE, "shards": c.LIST_SHARDS, "build_seconds": round(built, 1)} | {
        "pages": pages
    }


def holds(report: dict[str, Any]) -> bool:
    """Each dead filter's first page holds every match, and reads at most page size + shards."""
    bound = report["page_size"] + report["shards"]
    return all(
        report["pages"][name]["every_match"] and report["pages"][name]["read"] <= bound
        for name in DEAD_FILTERS
    )


def main(jobs: int = JOBS) -> None:
    report = measure(jobs)
    print(f"== listing-{jobs:,}-jobs  ({report['build_seconds']:.0f} s to build the indexes)")
    bound = f"{PAGE} + {c.LIST_SHARDS}"
    print(f"   goal:     the first page of each dead filter holds every match; items read <= {bound}")
    for name, page in report["pages"].items():
        print(
            f"   {name:<28} jobs {page['jobs']:>3}  read {page['read']:>5} (rows {page['rows_read']}, "
            f"counted {page['rows_counted']}, items {page['items_read']}; {page['queries']} queries)  "
            f"total {page['total']}{' est.' if page['total_is_estimate'] else ''}"
        )
    print(f"   holds:    {'yes' if holds(report) else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
