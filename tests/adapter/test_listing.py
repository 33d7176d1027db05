"""GET /jobs on the emulator: each filter reads its own sharded index, pages are full while more
matches exist, newest first across shards, every match once, a total, and the health of recurring jobs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import Health, JobStatus
from sundial.shared import constants as c
from sundial.shared.engine.worker import AttemptResult, Outcome
from sundial.shared.errors import InvalidInput
from sundial.shared.store import ListFilter, listing
from tests.adapter.conftest import Engine, python_target
from tests.adapter.test_engine import create

SECOND = 1000
LATER = {"schedule": "rate(1 day)", "start_at": "2099-01-01T00:00:00Z"}


def later_jobs(engine: Engine, count: int, **fields: Any) -> list[str]:
    """Jobs that nothing runs during the test, oldest first."""
    return [create(engine, **LATER, **fields) for _ in range(count)]


def dead_job(engine: Engine) -> str:
    job_id = create(engine, max_retries=0)
    assert die_once(engine, job_id).dead_in_a_row is None  # one-off: its death is JobsDead alone
    return job_id


def die_once(engine: Engine, job_id: str) -> AttemptResult:
    """Runs the job's next message, whose target fails: with no retries its occurrence dies."""
    engine.targets.failures[job_id] = 1
    (message,) = (m for m in engine.receive() if m.job_id == job_id)
    engine.clock.set(max(engine.clock.now_ms(), message.due_at))
    result = engine.worker.process(message)
    assert result.outcome is Outcome.DEAD
    return result


def every_page(engine: Engine, wanted: ListFilter, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    token: str | None = None
    while True:
        page = engine.store.list_jobs(wanted, limit, token)
        pages.append([job.id for job in page.jobs])
        token = page.next_token
        if token is None:
            return pages


class Reads:
    """Index rows and job items the client read, from DynamoDB's own answers (a botocore hook).

    Rows are the Count of each answer: with no filter expression that is what DynamoDB reads, while
    the emulator's ScannedCount counts the table it scans to answer an index query."""

    def __init__(self, dynamodb: Any) -> None:
        self.rows = 0  # index rows a page's queries read
        self.counted = 0  # index rows the total's COUNT queries read
        self.items = 0  # job items fetched
        dynamodb.meta.events.register("after-call.dynamodb.Query", self._query)
        dynamodb.meta.events.register("after-call.dynamodb.BatchGetItem", self._batch)

    def _query(self, parsed: dict[str, Any], **_: Any) -> None:
        if "Items" not in parsed:  # Select=COUNT
            self.counted += parsed.get("Count", 0)
        else:
            self.rows += parsed.get("Count", 0)

    def _batch(self, parsed: dict[str, Any], **_: Any) -> None:
        self.items += sum(len(found) for found in parsed.get("Responses", {}).values())


@pytest.fixture
def reads(engine: Engine, dynamodb: Any) -> Reads:
    del engine
    return Reads(dynamodb)


def test_two_dead_among_many_are_the_first_page_and_it_reads_no_more_than_page_size_plus_shards(
    engine: Engine, dynamodb: Any
) -> None:
    dead = [dead_job(engine) for _ in range(2)]  # the oldest jobs of all
    later_jobs(engine, 150)
    counter = Reads(dynamodb)

    page = engine.store.list_jobs(ListFilter(status="dead"), 50, None)

    assert [job.id for job in page.jobs] == list(reversed(dead))
    assert (page.next_token, page.total, page.total_is_estimate) == (None, 2, False)
    assert counter.rows + counter.counted + counter.items <= 50 + c.LIST_SHARDS
    assert counter.rows == 2 and counter.items == 2


def test_a_page_of_one_still_finds_the_newest_match_without_reading_the_rest(
    engine: Engine, dynamodb: Any
) -> None:
    dead = [dead_job(engine) for _ in range(2)]
    later_jobs(engine, 60)
    counter = Reads(dynamodb)

    page = engine.store.list_jobs(ListFilter(status="dead"), 1, None)

    assert [job.id for job in page.jobs] == [dead[1]]
    assert page.total == 2 and page.next_token is not None
    assert counter.rows + counter.counted + counter.items <= 1 + c.LIST_SHARDS
    rest = engine.store.list_jobs(ListFilter(status="dead"), 1, page.next_token)
    assert ([job.id for job in rest.jobs], rest.next_token, rest.total) == ([dead[0]], None, 2)


def test_unfiltered_pages_merge_the_shards_newest_first_every_job_once(engine: Engine, reads: Reads) -> None:
    made = later_jobs(engine, 45)

    pages = every_page(engine, ListFilter(), 7)

    assert [job_id for page in pages for job_id in page] == list(reversed(made))
    assert all(len(page) == 7 for page in pages[:-1])
    first = engine.store.list_jobs(ListFilter(), 20, None)
    assert (first.total, first.total_is_estimate) == (45, False)


def test_a_full_page_reads_at_most_a_share_of_the_page_more_per_shard(engine: Engine, dynamodb: Any) -> None:
    later_jobs(engine, 120)
    counter = Reads(dynamodb)

    page = engine.store.list_jobs(ListFilter(), 50, None)

    assert len(page.jobs) == 50
    # Each shard's rows read and not taken are at most its share of the page (three of fifty).
    assert counter.rows <= 50 + c.LIST_SHARDS * (50 // c.LIST_SHARDS)
    assert counter.items == 50


def test_creates_spread_over_every_shard_of_each_index(engine: Engine, dynamodb: Any) -> None:
    later_jobs(engine, 80, name="report-daily", priority="high")  # medium jobs are in no priority row
    scanned = dynamodb.scan(TableName=engine.resources.table_name)["Items"]
    jobs = [item for item in scanned if item["sk"]["S"] == "JOB"]

    for attribute in (c.LIST_PARTITION_ATTRIBUTE, c.PRIORITY_PARTITION_ATTRIBUTE, c.NAME_PARTITION_ATTRIBUTE):
        per_partition = Counter(item[attribute]["S"] for item in jobs)
        # Five per shard on average: a shard may be missed by chance, twelve never are.
        assert c.LIST_SHARDS - 4 <= len(per_partition) <= c.LIST_SHARDS, attribute
        assert max(per_partition.values()) < len(jobs) / 4


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (ListFilter(priority="high"), ["report-a", "sync-high"]),
        (ListFilter(name_prefix="REPORT-"), ["report-b", "report-a"]),
        (ListFilter(name_prefix="rep", priority="low"), ["report-b"]),
        (ListFilter(status="cancelled", name="PORT"), ["report-b"]),
        (ListFilter(status="pending", priority="high", name_prefix="rep"), ["report-a"]),
        (ListFilter(health="ok", priority="high"), ["report-a", "sync-high"]),
    ],
    ids=["priority", "prefix", "prefix+priority", "status+name", "three", "health-ok"],
)
def test_filters_combine(engine: Engine, wanted: ListFilter, expected: list[str]) -> None:
    later_jobs(engine, 30, name="filler")
    names = {}
    for name, priority in [
        ("sync-high", "high"),
        ("report-a", "high"),
        ("reporter", "medium"),
        ("report-b", "low"),
    ]:
        names[create(engine, **LATER, name=name, priority=priority)] = name
    engine.service.cancel(next(job_id for job_id, name in names.items() if name == "report-b"))
    later_jobs(engine, 30, name="filler")

    pages = every_page(engine, wanted, 1)

    assert [names[job_id] for page in pages for job_id in page] == expected
    assert all(len(page) == 1 for page in pages[:-1])  # never a short page before the last


def test_a_recurring_job_whose_occurrences_die_is_dead_counted_and_listed_until_one_succeeds(
    engine: Engine,
) -> None:
    later_jobs(engine, 20)
    view, _ = engine.service.create(
        JobCreate.model_validate({"target": python_target(), "schedule": "rate(1 minute)", "max_retries": 0})
    )
    for streak in (1, 2, 3):
        job = engine.store.get(view.id)
        assert job.due_at is not None
        engine.clock.set(job.due_at - 20 * SECOND)
        engine.scheduler.tick()
        assert die_once(engine, view.id).dead_in_a_row == streak  # the alarm's metric
        job = engine.store.get(view.id)
        # The next occurrence is a minute away: the settle that killed this one queued it.
        assert (job.health, job.consecutive_failures, job.status) == (Health.DEAD, streak, JobStatus.QUEUED)

    for health in ("dead", "failing"):
        page = engine.store.list_jobs(ListFilter(health=health), 10, None)
        assert ([j.id for j in page.jobs], page.total) == ([view.id], 1)
    assert engine.service.get(view.id).health is Health.DEAD

    job = engine.store.get(view.id)
    assert job.due_at is not None
    engine.clock.set(job.due_at - 20 * SECOND)
    engine.scheduler.tick()
    engine.clock.set(job.due_at)
    assert [r.outcome for r in engine.run_all()] == [Outcome.SUCCEEDED]

    healed = engine.store.get(view.id)
    assert (healed.health, healed.consecutive_failures) == (Health.OK, 0)
    assert engine.store.list_jobs(ListFilter(health="failing"), 10, None).jobs == []


def test_a_failed_attempt_waiting_for_its_retry_is_failing_not_dead(engine: Engine) -> None:
    job_id = create(engine, max_retries=2, backoff=[5])
    engine.targets.failures[job_id] = 1
    [message] = engine.receive()
    assert engine.worker.process(message).outcome is Outcome.FAILED

    assert engine.store.get(job_id).health is Health.FAILING
    assert [j.id for j in engine.store.list_jobs(ListFilter(health="failing"), 10, None).jobs] == [job_id]
    assert engine.store.list_jobs(ListFilter(health="dead"), 10, None).jobs == []


def test_a_total_above_the_exact_count_is_an_estimate_marked_as_one(
    engine: Engine, dynamodb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    later_jobs(engine, 64)
    monkeypatch.setattr(listing, "EXACT_TOTAL_UP_TO", c.LIST_SHARDS)  # one row counted per shard
    counter = Reads(dynamodb)

    first = engine.store.list_jobs(ListFilter(), 5, None)

    assert first.total_is_estimate
    # Stretched over the ids' age (here a few milliseconds): rough, never below what it counted.
    assert 0 < counter.counted <= first.total
    second = engine.store.list_jobs(ListFilter(), 5, first.next_token)
    assert (second.total, second.total_is_estimate) == (first.total, True)  # carried by the token


def test_a_token_of_another_filter_or_edited_is_refused(engine: Engine) -> None:
    later_jobs(engine, 3)
    token = engine.store.list_jobs(ListFilter(), 1, None).next_token
    assert token is not None
    for wanted, bad in [
        (ListFilter(status="dead"), token),
        (ListFilter(), token[:-4] + "AAAA"),
        (ListFilter(), "x"),
    ]:
        with pytest.raises(InvalidInput) as caught:
            engine.store.list_jobs(wanted, 1, bad)
        assert caught.value.field == "next_token"


def test_a_listing_index_not_ready_yet_is_not_read(engine: Engine, dynamodb: Any) -> None:
    later_jobs(engine, 5)
    cancelled = create(engine, **LATER)
    engine.service.cancel(cancelled)
    used: list[str] = []
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Query", lambda params, **_: used.append(params.get("IndexName"))
    )

    page = engine.store.list_jobs(
        ListFilter(status="cancelled"), 10, None, ready=frozenset({c.LIST_INDEX_NAME})
    )

    assert [job.id for job in page.jobs] == [cancelled]
    assert set(used) == {c.LIST_INDEX_NAME}


def test_a_triggered_run_that_dies_makes_a_recurring_job_dead_while_its_schedule_goes_on(
    engine: Engine,
) -> None:
    job_id = create(engine, schedule="rate(1 day)", max_retries=0)
    engine.service.trigger(job_id)

    die_once(engine, job_id)

    job = engine.store.get(job_id)
    assert (job.health, job.consecutive_failures, job.status) == (Health.DEAD, 1, JobStatus.PENDING)
    assert [j.id for j in engine.store.list_jobs(ListFilter(health="dead"), 10, None).jobs] == [job_id]


def _item(engine: Engine, dynamodb: Any, job_id: str) -> dict[str, Any]:
    key = {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}}
    return dict(dynamodb.get_item(TableName=engine.resources.table_name, Key=key)["Item"])


def test_recurring_job_that_runs_well_never_enters_the_status_index(engine: Engine, dynamodb: Any) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    (message,) = (m for m in engine.receive() if m.job_id == job_id)
    engine.clock.set(max(engine.clock.now_ms(), message.due_at))

    assert engine.worker.process(message).outcome is Outcome.SUCCEEDED

    item = _item(engine, dynamodb, job_id)
    assert item["status"]["S"] in (JobStatus.PENDING, JobStatus.QUEUED)  # its next occurrence
    assert c.STATUS_PARTITION_ATTRIBUTE not in item  # no key moved: an execution costs no index write
    listed = engine.store.list_jobs(ListFilter(status=item["status"]["S"]), 50, None)
    assert job_id in [job.id for job in listed.jobs]  # a live status is checked on the items


def test_one_off_enters_the_status_index_when_its_occurrence_ends(engine: Engine, dynamodb: Any) -> None:
    job_id = dead_job(engine)

    assert _item(engine, dynamodb, job_id)[c.STATUS_PARTITION_ATTRIBUTE]["S"].startswith("dead#")


def test_a_one_off_that_succeeds_stays_out_of_the_status_index_and_is_listed_by_status(
    engine: Engine, dynamodb: Any
) -> None:
    # Most one-offs end succeeded: the entry cost each a write unit, and a listing of them finds
    # mostly matches through the index of every job.
    job_id = create(engine)
    (message,) = (m for m in engine.receive() if m.job_id == job_id)
    engine.clock.set(max(engine.clock.now_ms(), message.due_at))
    assert engine.worker.process(message).outcome is Outcome.SUCCEEDED
    dead = dead_job(engine)

    assert c.STATUS_PARTITION_ATTRIBUTE not in _item(engine, dynamodb, job_id)
    succeeded = engine.store.list_jobs(ListFilter(status=JobStatus.SUCCEEDED), 50, None)
    assert [job.id for job in succeeded.jobs] == [job_id]
    assert [job.id for job in engine.store.list_jobs(ListFilter(status=JobStatus.DEAD), 50, None).jobs] == [
        dead
    ]


def test_a_medium_job_stays_out_of_the_priority_index_and_is_listed_by_priority(
    engine: Engine, dynamodb: Any
) -> None:
    # Medium is the default: a row cost most creates a write unit, and a listing of medium jobs
    # finds mostly matches among every job.
    medium, high = create(engine), create(engine, priority="high")

    assert c.PRIORITY_PARTITION_ATTRIBUTE not in _item(engine, dynamodb, medium)
    assert _item(engine, dynamodb, high)[c.PRIORITY_PARTITION_ATTRIBUTE]["S"].startswith("high#")
    for priority, expected in (("medium", medium), ("high", high)):
        listed = engine.store.list_jobs(ListFilter(priority=priority), 50, None)
        assert [job.id for job in listed.jobs] == [expected]
