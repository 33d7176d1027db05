"""Jobs stored before the API checked the range of instants (written into the emulator's table here):
the API lists, reads and cancels them, and the tick and the worker settle them instead of failing on
them again and again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus, MisfirePolicy, Priority
from sundial.functions import clients
from sundial.functions.scheduler import handler as tick_handler
from sundial.local_stack.lambda_context import new_context
from sundial.local_stack.resources import Resources
from sundial.shared.clock import SystemClock
from sundial.shared.models import Job
from sundial.shared.store.items import job_to_item
from tests.functions.conftest import Api, load_event
from tests.functions.test_worker import run, sqs_event, take

YEAR_0 = -62_135_647_200_000  # 0001-01-01T00:00:00+14:00: 0000-12-31T10:00:00Z
YEAR_10000 = 253_402_351_199_000  # 9999-12-31T23:59:59-14:00: 10000-01-01T13:59:59Z
IDS = iter(f"01JD8ZQ3V6X4M7N2P5R8T1W9{n:02d}" for n in range(10, 100))


def write(dynamodb: Any, env: Resources, instant_ms: int, **fields: Any) -> str:
    """A pending job due at `instant_ms`, put into the table as an older version could have left it."""
    now = SystemClock().now_ms()
    job = Job(
        id=next(IDS),
        status=JobStatus.PENDING,
        target=PythonTarget(type="python", handler="noop"),
        run_at=None if "schedule" in fields else instant_ms,
        scheduled_at=instant_ms,
        due_at=instant_ms,
        created_at=now,
        updated_at=now,
        **fields,
    )
    dynamodb.put_item(TableName=env.table_name, Item=job_to_item(job, "older"))
    return job.id


def test_a_stored_job_outside_the_range_is_listed_read_and_cancelled(
    api: Api, dynamodb: Any, env: Resources
) -> None:
    late = write(dynamodb, env, YEAR_10000)
    early = write(dynamodb, env, YEAR_0, schedule="rate(1 hour)")

    listed = api("GET", "/jobs")
    read = api("GET", f"/jobs/{late}")
    read_early = api("GET", f"/jobs/{early}")
    cancelled = api("DELETE", f"/jobs/{late}")
    both_cancelled = api("DELETE", f"/jobs/{early}")
    by_status = api("GET", "/jobs", query={"status": "cancelled"})

    assert listed.status == 200, listed.body
    assert {job["id"] for job in listed.body["jobs"]} == {late, early}
    assert read.status == 200
    # No RFC 3339 year holds these: ISO 8601's expanded year says what is stored.
    assert read.body["run_at"] == "+10000-01-01T13:59:59Z"
    assert read_early.body["next_run_at"] == "0000-12-31T10:00:00Z"
    assert (cancelled.status, cancelled.body["status"]) == (200, "cancelled")
    assert (both_cancelled.status, both_cancelled.body["status"]) == (200, "cancelled")
    assert by_status.status == 200
    assert {job["id"] for job in by_status.body["jobs"]} == {late, early}


def tick() -> dict[str, Any]:
    result: dict[str, Any] = tick_handler(
        load_event("eventbridge_scheduled.json"), new_context("scheduler", "us-east-1")
    )
    return result


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({}, id="one-off"),
        pytest.param({"schedule": "cron(0 9 * * ? *)"}, id="cron-run-once"),
        pytest.param({"schedule": "0 9 * * *", "misfire_policy": MisfirePolicy.SKIP}, id="cron-skip"),
        pytest.param(
            {"schedule": "rate(1 hour)", "misfire_policy": MisfirePolicy.RUN_ALL}, id="rate-run-all"
        ),
        pytest.param({"schedule": "rate(1 hour)", "start_at": YEAR_10000}, id="rate-starting-in-year-10000"),
    ],
)
def test_the_tick_and_the_worker_settle_a_stored_job_from_year_0(
    api: Api, dynamodb: Any, sqs: Any, env: Resources, fields: dict[str, Any]
) -> None:
    job_id = write(dynamodb, env, YEAR_0, **fields)
    never_due = write(dynamodb, env, YEAR_10000, **fields)

    first = tick()
    messages = take(sqs, env.queue_urls[Priority.MEDIUM])
    worked = run(sqs_event(*messages)) if messages else {"batchItemFailures": []}
    again = tick()

    assert first["claimed"] == 1
    assert worked == {"batchItemFailures": []}
    assert again == {"claimed": 0, "reclaimed": 0, "dispatched": 0}
    assert take(sqs, env.queue_urls[Priority.MEDIUM]) == []
    settled = clients.store().get(job_id)
    assert settled.status is JobStatus.SUCCEEDED, settled
    assert settled.due_at is None
    assert clients.store().get(never_due).status is JobStatus.PENDING
    assert api("GET", "/jobs").status == 200
    assert api("GET", f"/jobs/{job_id}").body["status"] == "succeeded"


def test_a_delivery_of_a_year_0_occurrence_names_the_instant_it_holds(
    api: Api, dynamodb: Any, sqs: Any, env: Resources
) -> None:
    job_id = write(dynamodb, env, YEAR_0)
    tick()
    [message] = take(sqs, env.queue_urls[Priority.MEDIUM])

    assert run(sqs_event(message)) == {"batchItemFailures": []}
    [history] = api("GET", f"/jobs/{job_id}/runs").body["runs"]
    assert history["scheduled_at"] == "0000-12-31T10:00:00Z"
    assert history["status"] == "succeeded"
    assert json.loads(message)["job_id"] == job_id
