"""GET /stats: the census, its bounded age, queue depths, the most overdue due entry and the last hour."""

from __future__ import annotations

from typing import Any

import boto3

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import Health, JobStatus, RunStatus
from sundial.local_stack.emulator import Emulator
from sundial.local_stack.resources import Resources
from sundial.shared import lifecycle
from sundial.shared.clock import FixedClock
from sundial.shared.models import Job, Run, RunSummary
from sundial.shared.service.stats import MINUTE_MS, StatsService, executions, percentile
from sundial.shared.store import items
from sundial.shared.store.stats_reads import Start, StatsReads
from tests.functions.conftest import api_event, env, header_key, invoke_api

__all__ = ["env", "header_key"]  # the fixtures, from the functions' conftest

NOW = 1_800_000_000_000  # a minute boundary: 2027-01-15T08:00:00Z


def _put_job(dynamodb: Any, table: str, job_id: str, status: JobStatus, **fields: Any) -> None:
    job = Job(
        id=job_id,
        status=status,
        target=PythonTarget(type="python", handler="noop"),
        created_at=fields.pop("created_at", NOW - 60_000),
        updated_at=NOW - 30_000,
        **fields,
    )
    item = items.job_to_item(job, "w")
    if job.last_run is not None:  # written by the settle that ends an attempt, not at create
        item["last_run"] = {"S": job.last_run.model_dump_json()}
    dynamodb.put_item(TableName=table, Item=item)


def _put_run(dynamodb: Any, table: str, job_id: str, scheduled: int, started: int, attempt: int = 1) -> None:
    run = Run(
        job_id=job_id,
        scheduled_at=scheduled,
        attempt=attempt,
        status=RunStatus.SUCCEEDED,
        started_at=started,
        finished_at=started + 5,
    )
    dynamodb.put_item(TableName=table, Item=items.run_to_item(run, NOW // 1000 + 3600))


def _service(emulator: Emulator, resources: Resources, clock: FixedClock) -> StatsService:
    aws = {"endpoint_url": emulator.endpoint_url, "region_name": "us-east-1"}
    reads = StatsReads(boto3.client("dynamodb", **aws), resources.table_name)
    return StatsService(reads, boto3.client("sqs", **aws), resources.queue_urls, clock, max_age_seconds=30)


def test_counts_dead_jobs_and_starts_come_from_one_census_kept_for_its_max_age(
    emulator: Emulator, resources: Resources, dynamodb: Any
) -> None:
    table = resources.table_name
    _put_job(dynamodb, table, "A" * 26, JobStatus.PENDING, priority="high", due_at=NOW - 5_000)
    # Created before its runs: a start is late from its instant, or from its job's creation if later.
    _put_job(dynamodb, table, "B" * 26, JobStatus.SUCCEEDED, priority="low", created_at=NOW - 3 * 3600_000)
    dead_run = RunSummary(scheduled_at=NOW - 90_000, attempt=1, status=RunStatus.DEAD, error="boom")
    _put_job(dynamodb, table, "C" * 26, JobStatus.DEAD, priority="high", last_run=dead_run)
    _put_run(dynamodb, table, "B" * 26, NOW - 120_000, NOW - 119_900)  # 100 ms late, two minutes ago
    _put_run(dynamodb, table, "B" * 26, NOW - 7200_000, NOW - 7200_000)  # two hours ago: outside
    clock = FixedClock(NOW)
    service = _service(emulator, resources, clock)

    stats = service.stats()

    assert stats.jobs.total == 3
    assert stats.jobs.by_status[JobStatus.PENDING]["high"] == 1
    assert stats.jobs.by_status[JobStatus.SUCCEEDED]["low"] == 1
    assert stats.jobs.by_status[JobStatus.DEAD]["high"] == 1
    assert [(d.id, d.error) for d in stats.dead] == [("C" * 26, "boom")]
    assert stats.executions.starts == 1 and stats.executions.lateness_p50_ms == 100
    high = next(q for q in stats.queues if q.priority == "high")
    assert high.oldest_due_seconds == 5.0  # the pending high job is due five seconds ago
    assert high.visible == 0

    _put_job(dynamodb, table, "D" * 26, JobStatus.PENDING, priority="low")
    clock.advance(29)
    assert service.stats().jobs.total == 3  # the census is 29 s old: kept
    clock.advance(2)
    again = service.stats()
    assert again.jobs.total == 4 and again.jobs.counted_at == "2027-01-15T08:00:31Z"


def test_a_recurring_job_whose_last_occurrence_died_is_counted_and_shown_with_the_dead(
    emulator: Emulator, resources: Resources, dynamodb: Any
) -> None:
    table = resources.table_name
    died = RunSummary(scheduled_at=NOW - 60_000, attempt=1, status=RunStatus.DEAD, error="down")
    recurring = {"schedule": "rate(1 minute)", "last_run": died, "consecutive_failures": 4}
    _put_job(dynamodb, table, "E" * 26, JobStatus.QUEUED, health=Health.DEAD, **recurring)
    _put_job(dynamodb, table, "F" * 26, JobStatus.FAILED, health=Health.FAILING)
    _put_job(dynamodb, table, "G" * 26, JobStatus.PENDING)

    stats = _service(emulator, resources, FixedClock(NOW)).stats()

    assert stats.jobs.by_health == {Health.OK: 1, Health.FAILING: 1, Health.DEAD: 1}
    assert [(d.id, d.error, d.dead_in_a_row) for d in stats.dead] == [("E" * 26, "down", 4)]
    assert stats.dead_total == 1


def test_queue_depths_are_sqs_counts(emulator: Emulator, resources: Resources) -> None:
    sqs = boto3.client("sqs", endpoint_url=emulator.endpoint_url, region_name="us-east-1")
    for _ in range(2):
        sqs.send_message(QueueUrl=resources.queue_urls["medium"], MessageBody="{}")
    sqs.send_message(QueueUrl=resources.queue_urls["medium"], MessageBody="{}", DelaySeconds=60)
    stats = _service(emulator, resources, FixedClock(NOW)).stats()
    medium = next(q for q in stats.queues if q.priority == "medium")
    assert (medium.visible, medium.delayed, medium.in_flight) == (2, 1, 0)


def test_executions_per_minute_and_lateness_of_first_attempts() -> None:
    counted = NOW + 30_000
    starts = [
        Start(started_at=NOW - 10, scheduled_at=NOW - 30, attempt=1),  # 20 ms late, in the minute before
        Start(started_at=NOW + 1_000, scheduled_at=NOW, attempt=1),  # 1000 ms late, this minute
        Start(started_at=NOW + 2_000, scheduled_at=NOW - 60_000, attempt=2),  # a retry: counted, no lateness
        Start(started_at=NOW - 3600_000, scheduled_at=NOW - 3600_000, attempt=1),  # 60 minutes ago: out
    ]
    view = executions(starts, counted)
    assert view.starts == 3
    assert view.per_minute[-1].minute == "2027-01-15T08:00:00Z"
    assert view.per_minute[-1].starts == 2 and view.per_minute[-1].lateness_p50_ms == 1000
    assert view.per_minute[-2].starts == 1 and view.per_minute[-2].lateness_p99_ms == 20
    assert (view.lateness_p50_ms, view.lateness_p99_ms) == (20, 1000)
    assert len(view.per_minute) == 60 and view.per_minute[0].minute == "2027-01-15T07:01:00Z"
    assert MINUTE_MS == 60_000


def test_percentile_is_nearest_rank() -> None:
    # 100 values 1..100: p50 is the 50th, p99 the 99th; one value is every percentile.
    assert percentile(list(range(1, 101)), 50) == 50
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([7], 99) == 7
    assert percentile([], 50) is None


def test_the_route_answers_stats_and_is_in_the_openapi_document(env: Resources) -> None:
    created = invoke_api(
        api_event(
            "POST",
            "/jobs",
            {"schedule": "rate(1 hour)", "priority": "low", "target": {"type": "python", "handler": "noop"}},
        )
    )
    assert created.status == 201, created.body
    answer = invoke_api(api_event("GET", "/stats"))
    assert answer.status == 200, answer.body
    assert answer.body["jobs"]["by_status"]["pending"] == {"high": 0, "medium": 0, "low": 1}
    assert [q["priority"] for q in answer.body["queues"]] == ["high", "medium", "low"]
    document = invoke_api(api_event("GET", "/openapi.json")).body
    operation = document["paths"]["/stats"]["get"]
    assert operation["operationId"] == "get_stats" and operation["tags"] == ["service"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "StatsView"
    )


def test_a_job_dated_in_the_past_is_late_from_its_creation_not_its_instant() -> None:
    years_ago = NOW - 6 * 365 * 86_400_000
    starts = [
        # Created at NOW for an instant six years before: it could not start before NOW.
        Start(started_at=NOW + 500, scheduled_at=years_ago, attempt=1, created_at=NOW),
        # Created before its instant: late from the instant, as always.
        Start(started_at=NOW + 1_200, scheduled_at=NOW + 1_000, attempt=1, created_at=NOW - 5_000),
    ]
    view = executions(starts, NOW + 30_000)
    assert (view.lateness_p50_ms, view.lateness_p99_ms) == (200, 500)


def test_the_census_dates_each_start_by_its_jobs_creation(
    emulator: Emulator, resources: Resources, dynamodb: Any
) -> None:
    table = resources.table_name
    _put_job(dynamodb, table, "H" * 26, JobStatus.SUCCEEDED, run_at=1_577_836_800_000)  # 2020-01-01
    # Created at NOW - 60 s (_put_job), started 1 s after: 1000 ms late, not six years.
    _put_run(dynamodb, table, "H" * 26, 1_577_836_800_000, NOW - 59_000)

    stats = _service(emulator, resources, FixedClock(NOW)).stats()

    assert (stats.executions.starts, stats.executions.lateness_p99_ms) == (1, 1000)


def test_a_start_inside_its_spread_window_is_late_from_its_own_start_not_the_instant(
    emulator: Emulator, resources: Resources, dynamodb: Any
) -> None:
    table = resources.table_name
    instant = NOW - 600_000
    spread = Job(
        id="W" * 26,
        status=JobStatus.SUCCEEDED,
        target=PythonTarget(type="python", handler="noop"),
        created_at=NOW - 3600_000,
        updated_at=NOW,
        run_at=instant,
        window_seconds=300,
    )
    opens = lifecycle.start_of(spread, instant)
    assert opens > instant + 1_000  # the window put its start well after the instant
    _put_job(
        dynamodb,
        table,
        spread.id,
        JobStatus.SUCCEEDED,
        created_at=spread.created_at,
        run_at=instant,
        window_seconds=300,
    )
    _put_run(dynamodb, table, spread.id, instant, opens + 40)  # 40 ms after its own start

    stats = _service(emulator, resources, FixedClock(NOW)).stats()

    assert (stats.executions.starts, stats.executions.lateness_p99_ms) == (1, 40)
