"""A table full of jobs written before the sharded listing indexes, upgraded on the emulator as a
deployed one is (docs/operations.md): the backfill, then each index added, then every filter lists
what it should. The backfill resumes after a crash and never writes keys of a state the job left."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from click.testing import CliRunner
from ulid import ULID

from sundial.cli import cli
from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import Health, JobStatus
from sundial.local_stack.resources import ensure_resources, table_definition, upgrade_table
from sundial.shared import constants as c
from sundial.shared.clock import FixedClock
from sundial.shared.models import Job, RunSummary
from sundial.shared.store import JobStore, ListFilter, items
from sundial.shared.store.upgrade import LISTING_KEYS, backfill_listing

NOW = 1_900_000_000_000
_tables = itertools.count()
# (status, priority, name) of the old jobs, oldest first; history and idempotency items sit among them.
SHAPES = [
    (JobStatus.DEAD, "high", "report-eu"),
    (JobStatus.PENDING, "medium", "report-us"),
    (JobStatus.CANCELLED, "low", None),
    (JobStatus.PENDING, "high", "sync"),
    (JobStatus.SUCCEEDED, "medium", "report-apac"),
] * 6


def old_item(job: Job) -> dict[str, Any]:
    """The job as the release before wrote it: one listing partition, no filter keys."""
    item = items.job_to_item(job, "w0")
    for name in (*LISTING_KEYS, "health", "consecutive_failures"):  # none of these existed
        item.pop(name, None)
    item[c.LIST_PARTITION_ATTRIBUTE] = {"S": items.LIST_PK}
    item[c.LIST_SORT_ATTRIBUTE] = {"S": job.id}
    if job.last_run is not None:  # written by the settle that ended the attempt
        item["last_run"] = {"S": job.last_run.model_dump_json()}
    return item


def old_job(n: int, status: JobStatus, priority: str, name: str | None) -> Job:
    dead = RunSummary(scheduled_at=NOW, attempt=1, status="dead") if status is JobStatus.DEAD else None
    return Job(
        id=str(ULID.from_timestamp((NOW - 10_000_000 + n * 1000) / 1000)),
        name=name,
        status=status,
        priority=priority,
        target=PythonTarget(type="python", handler="noop"),
        last_run=dead,
        created_at=NOW,
        updated_at=NOW,
    )


@pytest.fixture
def old_table(dynamodb: Any) -> tuple[str, list[Job]]:
    """A table made by the release before, full of its jobs, with history and idempotency items."""
    name = f"upgrade-{next(_tables)}"
    dynamodb.create_table(**table_definition(name, filter_indexes=0))
    jobs = [old_job(n, *shape) for n, shape in enumerate(SHAPES)]
    for job in jobs:
        dynamodb.put_item(TableName=name, Item=old_item(job))
        dynamodb.put_item(
            TableName=name,
            Item=items.serialize({"pk": items.job_pk(job.id), "sk": items.run_sk(NOW, 1), "status": "dead"}),
        )
    dynamodb.put_item(
        TableName=name, Item=items.serialize({"pk": "IDEM#k", "sk": "IDEM", "job_id": jobs[0].id})
    )
    return name, jobs


def listed(store: JobStore, wanted: ListFilter, ready: frozenset[str] | None = None) -> list[str]:
    ids: list[str] = []
    token: str | None = None
    while True:
        page = store.list_jobs(wanted, 4, token, ready)
        ids += [job.id for job in page.jobs]
        token = page.next_token
        if token is None:
            return ids


FILTERS = [
    ListFilter(),
    ListFilter(status="dead"),
    ListFilter(status="pending", priority="high"),
    ListFilter(priority="low"),
    ListFilter(health="dead"),
    ListFilter(status="dead", priority="high"),
    ListFilter(name_prefix="report-"),
    ListFilter(name_prefix="rep", status="succeeded"),
]


def expected(jobs: list[Job], wanted: ListFilter) -> list[str]:
    """What the listing must answer once upgraded: a job whose last occurrence died is dead."""
    newest_first = sorted(jobs, key=lambda job: job.id, reverse=True)
    upgraded = [
        job.model_copy(update={"health": Health.DEAD}) if job.last_run else job for job in newest_first
    ]
    return [job.id for job in upgraded if wanted.matches(job)]


def test_an_upgraded_table_lists_every_old_job_by_every_filter(
    dynamodb: Any, old_table: tuple[str, list[Job]]
) -> None:
    name, jobs = old_table
    store = JobStore(dynamodb, name, FixedClock(NOW))
    without_status = frozenset({c.LIST_INDEX_NAME, c.HEALTH_INDEX_NAME})
    # Before: the new code on the old table reads the old partition, filters on the items.
    assert listed(store, ListFilter(status="dead"), ready=frozenset()) == expected(
        jobs, ListFilter(status="dead")
    )

    added = upgrade_table(dynamodb, name)

    assert added == list(c.FILTER_INDEXES)
    for wanted in FILTERS:
        assert listed(store, wanted) == expected(jobs, wanted), wanted
    assert store.get(jobs[0].id).health is Health.DEAD  # its last occurrence died: given its health
    assert store.get(jobs[1].id).health is Health.OK  # old items hold no health: read as ok
    assert backfill_listing(dynamodb, name).written == 0  # run again: nothing left to write
    # A deployment without the status index finds the dead among the unhealthy.
    assert listed(store, ListFilter(status="dead"), without_status) == expected(
        jobs, ListFilter(status="dead")
    )


def test_the_backfill_goes_on_from_where_a_crash_stopped_it(
    dynamodb: Any, old_table: tuple[str, list[Job]]
) -> None:
    name, jobs = old_table
    seen: list[str | None] = []

    def crash(progress: Any) -> None:
        seen.append(progress.next_start)
        raise KeyboardInterrupt

    request_pages = {"Limit": 20}
    dynamodb.meta.events.register(
        "provide-client-params.dynamodb.Scan", lambda params, **_: params.update(request_pages)
    )
    with pytest.raises(KeyboardInterrupt):
        backfill_listing(dynamodb, name, on_page=crash)
    first = seen[0]
    assert first is not None

    rest = backfill_listing(dynamodb, name, start=first)

    assert rest.next_start is None and 0 < rest.written < len(jobs)
    assert backfill_listing(dynamodb, name).written == 0  # all done between the two runs
    upgrade_table(dynamodb, name)
    assert listed(JobStore(dynamodb, name, FixedClock(NOW)), ListFilter()) == expected(jobs, ListFilter())


def test_a_job_that_changes_during_the_backfill_gets_the_keys_of_its_new_state(
    dynamodb: Any, old_table: tuple[str, list[Job]]
) -> None:
    name, jobs = old_table
    target = jobs[1]  # pending when the backfill reads it, cancelled before it writes
    changed: list[bool] = []

    def cancel_first(params: dict[str, Any], **_: Any) -> None:
        if changed or params["Key"]["pk"]["S"] != items.job_pk(target.id):
            return
        changed.append(True)  # first: this hook sees its own write too
        dynamodb.update_item(
            TableName=name,
            Key=items.job_key(target.id),
            UpdateExpression="SET #s = :s, #st = :st, #v = #v + :one",
            ExpressionAttributeNames={"#s": "status", "#st": c.STATUS_PARTITION_ATTRIBUTE, "#v": "version"},
            ExpressionAttributeValues={
                ":s": {"S": "cancelled"},
                ":st": {"S": items.list_partition("cancelled", items.list_shard(target.id))},
                ":one": {"N": "1"},
            },
        )

    dynamodb.meta.events.register("provide-client-params.dynamodb.UpdateItem", cancel_first)
    backfill_listing(dynamodb, name)

    assert changed
    item = dynamodb.get_item(TableName=name, Key=items.job_key(target.id), ConsistentRead=True)["Item"]
    shard = items.list_shard(target.id)
    assert item[c.STATUS_PARTITION_ATTRIBUTE] == {"S": items.list_partition("cancelled", shard)}
    assert item[c.LIST_PARTITION_ATTRIBUTE] == {"S": items.list_partition("JOBS", shard)}


def test_the_cli_backfills_a_table_in_segments_and_says_how_far_it_went(
    dynamodb: Any, aws: dict[str, Any], old_table: tuple[str, list[Job]]
) -> None:
    name, jobs = old_table
    args = ["upgrade-listing", "--table", name, "--segments", "3", "--endpoint-url", aws["endpoint_url"]]

    result = CliRunner().invoke(cli, [*args, "--region", aws["region_name"]])

    assert result.exit_code == 0, result.output
    assert (
        result.output.splitlines()[-1] == f"done: {len(jobs) * 2 + 1} items read, {len(jobs)} jobs given keys"
    )
    assert backfill_listing(dynamodb, name).written == 0


def test_the_local_stack_upgrades_a_table_saved_by_the_release_before_when_it_starts(
    dynamodb: Any, sqs: Any
) -> None:
    prefix = f"old-{next(_tables)}-"
    name = prefix + c.TABLE_NAME
    dynamodb.create_table(**table_definition(name, filter_indexes=0))
    jobs = [old_job(n, *shape) for n, shape in enumerate(SHAPES[:5])]
    for job in jobs:
        dynamodb.put_item(TableName=name, Item=old_item(job))

    ensure_resources(dynamodb, sqs, prefix=prefix)

    indexes = dynamodb.describe_table(TableName=name)["Table"]["GlobalSecondaryIndexes"]
    assert {index["IndexName"] for index in indexes} == {
        c.DUE_INDEX_NAME,
        c.LIST_INDEX_NAME,
        *c.FILTER_INDEXES,
    }
    store = JobStore(dynamodb, name, FixedClock(NOW))
    assert listed(store, ListFilter(priority="high")) == expected(jobs, ListFilter(priority="high"))
