"""GET /stats: jobs per status and priority, dead jobs, queue depths and the last hour's starts.

What each figure costs and how fresh it is (docs/api.md, "Stats"):
- jobs, dead jobs and the last hour's starts come from one census of the table (a parallel Scan),
  kept for `max_age_seconds` per API execution environment: at most one census per that period,
  however often the console asks;
- queue depths are three SQS GetQueueAttributes calls, and the most overdue due-index entry per
  priority a one-row Query per shard (24), on every call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal

from sundial.contract.stats import DeadJobView, ExecutionsView, JobCounts, MinuteView, QueueView, StatsView
from sundial.contract.vocabulary import Health, JobStatus, Priority
from sundial.shared.clock import Clock, format_rfc3339
from sundial.shared.constants import PRIORITIES
from sundial.shared.store.stats_reads import Census, Start, StatsReads

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

WINDOW_MINUTES = 60
MINUTE_MS = 60_000
DEAD_SHOWN = 20
DEFAULT_MAX_AGE_SECONDS = 30.0
_QUEUE_ATTRIBUTES: list[
    Literal[
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


class StatsService:
    """Thread-safe: the local stack may serve two requests at once."""

    def __init__(
        self,
        reads: StatsReads,
        sqs: SQSClient,
        queue_urls: Mapping[Priority, str],
        clock: Clock,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        self._reads = reads
        self._sqs = sqs
        self._queue_urls = queue_urls
        self._clock = clock
        self._max_age_ms = int(max_age_seconds * 1000)
        self._lock = threading.Lock()
        self._census: tuple[int, Census] | None = None

    def stats(self) -> StatsView:
        now_ms = self._clock.now_ms()
        counted_at, census = self._fresh_census(now_ms)
        dead = sorted(census.dead, key=lambda d: d.updated_at, reverse=True)
        return StatsView(
            generated_at=format_rfc3339(now_ms),
            jobs=self._counts(census, counted_at),
            dead=[
                DeadJobView(
                    id=d.id,
                    name=d.name,
                    priority=Priority(d.priority),
                    died_at=format_rfc3339(d.updated_at),
                    error=d.error,
                    dead_in_a_row=d.dead_in_a_row,
                )
                for d in dead[:DEAD_SHOWN]
            ],
            dead_total=len(dead),
            queues=[self._queue(priority, now_ms) for priority in PRIORITIES],
            executions=executions(census.dated_starts(), counted_at),
        )

    def _fresh_census(self, now_ms: int) -> tuple[int, Census]:
        with self._lock:
            if self._census is None or now_ms - self._census[0] > self._max_age_ms:
                since = (now_ms // MINUTE_MS - WINDOW_MINUTES + 1) * MINUTE_MS
                self._census = (now_ms, self._reads.census(since))
            return self._census

    def _counts(self, census: Census, counted_at: int) -> JobCounts:
        by_status = {s: {p: census.counts[(s.value, p.value)] for p in PRIORITIES} for s in JobStatus}
        return JobCounts(
            counted_at=format_rfc3339(counted_at),
            max_age_seconds=self._max_age_ms / 1000,
            total=sum(census.counts.values()),
            paused=census.paused,
            by_status=by_status,
            by_health={health: census.health[health.value] for health in Health},
        )

    def _queue(self, priority: Priority, now_ms: int) -> QueueView:
        answer = self._sqs.get_queue_attributes(
            QueueUrl=self._queue_urls[priority], AttributeNames=list(_QUEUE_ATTRIBUTES)
        )["Attributes"]
        earliest = self._reads.earliest_due(priority.value)
        overdue_ms = max(0, now_ms - earliest) if earliest is not None else 0
        return QueueView(
            priority=priority,
            visible=int(answer.get("ApproximateNumberOfMessages", 0)),
            in_flight=int(answer.get("ApproximateNumberOfMessagesNotVisible", 0)),
            delayed=int(answer.get("ApproximateNumberOfMessagesDelayed", 0)),
            oldest_due_seconds=overdue_ms / 1000,
        )


def executions(starts: Iterable[Start], counted_at: int) -> ExecutionsView:
    """Starts per minute over the WINDOW_MINUTES minutes up to `counted_at`'s minute, and the start
    lateness of first attempts (Start.lateness_ms: from the scheduled instant, or from the job's
    creation when it was dated in the past): a retry starts late by design."""
    last_minute = counted_at // MINUTE_MS
    first_minute = last_minute - WINDOW_MINUTES + 1
    counts = [0] * WINDOW_MINUTES
    lateness: list[list[int]] = [[] for _ in range(WINDOW_MINUTES)]
    for start in starts:
        slot = start.started_at // MINUTE_MS - first_minute
        if 0 <= slot < WINDOW_MINUTES:
            counts[slot] += 1
            if start.attempt == 1:
                lateness[slot].append(start.lateness_ms)
    every = sorted(ms for minute in lateness for ms in minute)
    return ExecutionsView(
        window_minutes=WINDOW_MINUTES,
        starts=sum(counts),
        lateness_p50_ms=percentile(every, 50),
        lateness_p99_ms=percentile(every, 99),
        per_minute=[
            MinuteView(
                minute=format_rfc3339((first_minute + i) * MINUTE_MS),
                starts=counts[i],
                lateness_p50_ms=percentile(sorted(lateness[i]), 50),
                lateness_p99_ms=percentile(sorted(lateness[i]), 99),
            )
            for i in range(WINDOW_MINUTES)
        ],
    )


def percentile(ordered: list[int], pct: int) -> int | None:
    """Nearest-rank percentile of a sorted list; None for an empty one."""
    if not ordered:
        return None
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]
