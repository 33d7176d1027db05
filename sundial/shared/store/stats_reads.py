"""The reads behind GET /stats: one census of the table and the earliest due-index entry per priority.

Neither touches the engine's write path. The census is a parallel Scan, so its cost grows with the
table (run history included): callers cache its result (sundial/shared/service/stats.py) and say how
old it is. The due-index reads are one single-row Query per shard.
"""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sundial.contract.calendar import Calendar
from sundial.contract.vocabulary import Health, JobStatus
from sundial.shared import constants as c
from sundial.shared.models import RunSummary, recurring_schedule
from sundial.shared.schedules.schedule import parse_schedule
from sundial.shared.schedules.windows import start_instant
from sundial.shared.store import items

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# Parallel segments of the census: enough to overlap round trips, few enough for a Lambda's sockets.
SCAN_SEGMENTS = 4
_JOB_FIELDS = (
    "status",
    "priority",
    "paused",
    "name",
    "updated_at",
    "last_run",
    "health",
    "consecutive_failures",
    "created_at",
    "window_seconds",
    "schedule",
    "timezone",
    "calendar",
)
_RUN_FIELDS = ("scheduled_at", "started_at", "attempt")


@dataclass(frozen=True)
class DeadJob:
    id: str
    name: str | None
    priority: str
    updated_at: int
    error: str | None
    # A recurring job whose last occurrence died (its status is its next occurrence's): how many
    # in a row have; 0 for a one-off job that is DEAD.
    dead_in_a_row: int = 0


@dataclass(frozen=True)
class Start:
    """One attempt's start, for executions per minute and start lateness."""

    started_at: int
    scheduled_at: int
    attempt: int
    # When its job was created (None: the job item was not read): a job dated in the past cannot
    # start before it exists.
    created_at: int | None = None
    # Where its job's spread window put the occurrence's start (None: at its instant).
    opens_at: int | None = None

    @property
    def lateness_ms(self) -> int:
        """Start minus the first instant it could have started: max(its start inside its window,
        creation)."""
        opens = self.opens_at if self.opens_at is not None else self.scheduled_at
        could_start = max(opens, self.created_at or opens)
        return max(0, self.started_at - could_start)


@dataclass
class Census:
    """Jobs per (status, priority) and per health, the paused ones, the dead ones (one-off jobs that
    are DEAD and recurring jobs whose last occurrence died) and the attempts since an instant."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    health: Counter[str] = field(default_factory=Counter)
    paused: int = 0
    dead: list[DeadJob] = field(default_factory=list)
    starts: list[Start] = field(default_factory=list)
    # Job id -> when it was created, to date each start's job (its run items carry no creation).
    created: dict[str, int] = field(default_factory=dict)
    # Job id -> its spread window, for the jobs that have one: (seconds, schedule, time zone, calendar).
    windows: dict[str, tuple[int, str | None, str, Calendar | None]] = field(default_factory=dict)
    started_jobs: list[str] = field(default_factory=list)  # the job of each of `starts`

    def add(self, other: Census) -> None:
        self.counts.update(other.counts)
        self.health.update(other.health)
        self.paused += other.paused
        self.dead += other.dead
        self.starts += other.starts
        self.created |= other.created
        self.windows |= other.windows
        self.started_jobs += other.started_jobs

    def dated_starts(self) -> list[Start]:
        """The starts, each with its job's creation and its start inside its spread window: the job
        item and its runs may be read by different segments of the scan, so these are known only
        once every segment is in."""
        return [
            replace(start, created_at=self.created.get(job_id), opens_at=self._opens_at(job_id, start))
            for start, job_id in zip(self.starts, self.started_jobs, strict=True)
        ]

    def _opens_at(self, job_id: str, start: Start) -> int | None:
        window = self.windows.get(job_id)
        if window is None:
            return None
        seconds, expression, timezone, calendar = window
        schedule = parse_schedule(expression, timezone, calendar) if expression else None
        return start_instant(job_id, start.scheduled_at, seconds, schedule)


class StatsReads:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    def census(self, starts_since_ms: int, segments: int = SCAN_SEGMENTS) -> Census:
        """Every job item and every history item of an attempt started at or after `starts_since_ms`,
        read by a parallel Scan (eventually consistent: a write of the last second may be missing)."""
        with ThreadPoolExecutor(max_workers=segments, thread_name_prefix="census") as pool:
            parts = list(
                pool.map(lambda n: self._census_segment(n, segments, starts_since_ms), range(segments))
            )
        total = Census()
        for part in parts:
            total.add(part)
        return total

    def earliest_due(self, priority: str) -> int | None:
        """The earliest due instant (epoch ms) in the priority's due-index shards, or None when empty."""
        earliest: int | None = None
        for shard in range(c.DUE_SHARDS):
            response = self._client.query(
                TableName=self._table,
                IndexName=c.DUE_INDEX_NAME,
                KeyConditionExpression="#shard = :shard",
                ExpressionAttributeNames={"#shard": c.DUE_SHARD_ATTRIBUTE},
                ExpressionAttributeValues={":shard": {"S": f"{priority}#{shard}"}},
                Limit=1,
            )
            for item in response["Items"]:
                due_at = items.parse_due_key(item[c.DUE_KEY_ATTRIBUTE]["S"])[0]
                earliest = due_at if earliest is None else min(earliest, due_at)
        return earliest

    def _census_segment(self, segment: int, segments: int, since_ms: int) -> Census:
        names = {f"#{n}": n for n in {*_JOB_FIELDS, *_RUN_FIELDS, c.PARTITION_KEY, c.SORT_KEY}}
        request: dict[str, Any] = {
            "TableName": self._table,
            "Segment": segment,
            "TotalSegments": segments,
            "ProjectionExpression": ", ".join(names),
            # History items outside the window, payloads, alerts and idempotency records are left out
            # here; DynamoDB still reads (and bills) them.
            "FilterExpression": f"#{c.SORT_KEY} = :job OR "
            f"(begins_with(#{c.SORT_KEY}, :run) AND #started_at >= :since)",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": {
                ":job": {"S": items.JOB_SK},
                ":run": {"S": items.RUN_PREFIX},
                ":since": {"N": str(since_ms)},
            },
        }
        census = Census()
        for page in self._client.get_paginator("scan").paginate(**request):
            for item in page["Items"]:
                _count(census, items.deserialize(item))
        return census


def _count(census: Census, values: dict[str, Any]) -> None:
    job_id = str(values[c.PARTITION_KEY]).removeprefix("JOB#")
    if values[c.SORT_KEY] != items.JOB_SK:
        census.starts.append(
            Start(int(values["started_at"]), int(values["scheduled_at"]), int(values["attempt"]))
        )
        census.started_jobs.append(job_id)
        return
    if "created_at" in values:
        census.created[job_id] = int(values["created_at"])
    if values.get("window_seconds"):
        schedule = values.get("schedule")
        # As lifecycle.start_of: a recurring job's window ends before its next instant.
        census.windows[job_id] = (
            int(values["window_seconds"]),
            str(schedule) if recurring_schedule(schedule) else None,
            str(values.get("timezone", "UTC")),
            Calendar.model_validate_json(values["calendar"]) if values.get("calendar") else None,
        )
    census.counts[(str(values["status"]), str(values["priority"]))] += 1
    health = str(values.get("health", Health.OK.value))
    census.health[health] += 1
    census.paused += bool(values.get("paused"))
    if values["status"] == JobStatus.DEAD.value or health == Health.DEAD.value:
        last = values.get("last_run")
        error = RunSummary.model_validate_json(last).error if last else None
        name = values.get("name")
        in_a_row = (
            int(values.get("consecutive_failures", 0)) if values["status"] != JobStatus.DEAD.value else 0
        )
        census.dead.append(
            DeadJob(job_id, name, str(values["priority"]), int(values["updated_at"]), error, in_a_row)
        )
