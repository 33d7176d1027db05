"""Every operation of the client against the local stack, with the API's own models and errors."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from sundial.client import Conflict, InvalidInput, JobCreate, JobView, NotFound, SundialClient
from sundial.contract.jobs import JobUpdate, PreviewRequest
from tests.client.conftest import FAIL, NOOP

pytestmark = pytest.mark.e2e


def _tag() -> str:
    return f"client-{uuid.uuid4().hex[:8]}"


def test_health(client: SundialClient) -> None:
    assert client.health().status == "ok"


def test_stats(client: SundialClient) -> None:
    found = client.stats()
    assert [queue.priority.value for queue in found.queues] == ["high", "medium", "low"]
    assert found.jobs.total == sum(sum(row.values()) for row in found.jobs.by_status.values())


def test_create_get_update_and_cancel_a_recurring_job(client: SundialClient) -> None:
    spec = JobCreate.model_validate(
        {"name": _tag(), "schedule": "rate(1 hour)", "target": NOOP, "priority": "low", "payload": {"n": 1}}
    )
    created = client.create_job(spec)
    assert (created.schedule, created.priority.value, created.payload) == ("rate(1 hour)", "low", {"n": 1})
    assert client.get_job(created.id) == created

    updated = client.update_job(created.id, JobUpdate(priority="high", max_retries=2))
    # Only the fields sent changed: the payload and the schedule are as created.
    assert (updated.priority.value, updated.max_retries) == ("high", 2)
    assert (updated.payload, updated.schedule, updated.name) == ({"n": 1}, "rate(1 hour)", created.name)

    cancelled = client.cancel_job(created.id)
    assert cancelled.status.value == "cancelled"
    # Cancelling again changes nothing and answers the job: why the client may retry it.
    assert client.cancel_job(created.id).status.value == "cancelled"


def test_pause_resume_and_trigger(client: SundialClient) -> None:
    job = client.create_job({"name": _tag(), "schedule": "rate(1 hour)", "target": NOOP})
    assert client.pause_job(job.id).paused is True
    assert client.resume_job(job.id).paused is False
    client.trigger_job(job.id)
    deadline = time.monotonic() + 20
    while not client.list_runs(job.id).runs:
        assert time.monotonic() < deadline, "the triggered occurrence never ran"
        time.sleep(0.2)
    (run,) = client.list_runs(job.id).runs
    assert run.status == "succeeded"
    client.cancel_job(job.id)


def test_a_dead_job_is_retried_and_its_runs_are_paged(client: SundialClient) -> None:
    job = client.create_job({"name": _tag(), "target": FAIL, "max_retries": 1, "backoff": [1]})
    dead = _wait(client, job.id, lambda view: view.status.value == "dead")
    # Read at once: the history shows the attempt the job recorded, its own row written or not.
    runs = list(client.iter_runs(job.id, page_size=1))
    first = client.list_runs(job.id, limit=1)
    assert len(first.runs) == 1 and first.next_token
    # Newest first, page by page: the dead attempt, then the failed one.
    assert [(r.attempt, r.status) for r in runs] == [(2, "dead"), (1, "failed")]
    assert runs[0] == first.runs[0]

    revived = client.retry_job(job.id)
    # Attempt numbers go on after a retry, so the history keeps both rounds apart.
    assert revived.status.value != "dead" and revived.attempt == 2
    assert dead.last_run is not None
    first_started = dead.last_run.started_at
    again = _wait(
        client,
        job.id,
        lambda view: (
            view.status.value == "dead"
            and view.last_run is not None
            and view.last_run.started_at != first_started
        ),
    )
    assert again.attempt == 4  # the retry policy counted afresh: one retry again
    history = [(r.attempt, r.status) for r in client.iter_runs(job.id)]
    assert history == [(4, "dead"), (3, "failed"), (2, "dead"), (1, "failed")]


def _wait(
    client: SundialClient, job_id: str, done: Callable[[JobView], bool], timeout: float = 30
) -> JobView:
    deadline = time.monotonic() + timeout
    view = client.get_job(job_id)
    while not done(view):
        assert time.monotonic() < deadline, view
        time.sleep(0.2)
        view = client.get_job(job_id)
    return view


def test_list_pages_through_every_job(client: SundialClient) -> None:
    tag = _tag()
    ids = [client.create_job({"name": tag, "schedule": "rate(1 day)", "target": NOOP}).id for _ in range(5)]
    page = client.list_jobs(limit=2)
    assert len(page.jobs) == 2 and page.next_token
    seen = [job.id for job in client.iter_jobs(page_size=2)]
    assert set(ids) <= set(seen)
    assert len(seen) == len(set(seen))
    # Newest first: the last created comes before the first.
    assert seen.index(ids[-1]) < seen.index(ids[0])
    pending = list(client.iter_jobs(status="pending", priority="medium", page_size=100))
    assert {job.id for job in pending} >= set(ids)
    assert all(job.status.value == "pending" and job.priority.value == "medium" for job in pending)


def test_preview(client: SundialClient) -> None:
    after = datetime(2026, 10, 31, tzinfo=UTC)
    answer = client.preview(
        PreviewRequest(schedule="30 1 * * *", timezone="America/New_York", count=3, after=after)
    )
    # 01:30 New York: EDT (-4) until the fall-back night, then EST (-5), once on that night.
    assert answer.next_runs == ["2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]


def test_the_same_idempotency_key_answers_the_first_job(client: SundialClient) -> None:
    spec = {"name": _tag(), "schedule": "rate(1 day)", "target": NOOP}
    key = uuid.uuid4().hex
    first = client.create_job(spec, idempotency_key=key)
    assert client.create_job(spec, idempotency_key=key).id == first.id
    with pytest.raises(Conflict) as refused:
        client.create_job({**spec, "name": "other"}, idempotency_key=key)
    assert refused.value.status == 409
    # Without a key of the caller's, each create has its own.
    assert client.create_job(spec).id != client.create_job(spec).id


def test_errors_carry_message_field_and_status(client: SundialClient) -> None:
    with pytest.raises(NotFound) as missing:
        client.get_job("01JD000000000000000000000Z")
    assert missing.value.status == 404 and "not found" in missing.value.message

    with pytest.raises(InvalidInput) as bad:
        client.create_job({"schedule": "61 * * * *", "target": NOOP})
    assert (bad.value.status, bad.value.field) == (400, "schedule")
    assert "minute must be 0-59" in bad.value.message

    one_off = client.create_job({"name": _tag(), "run_at": "2030-01-01T00:00:00Z", "target": NOOP})
    with pytest.raises(Conflict) as not_recurring:
        client.pause_job(one_off.id)
    assert not_recurring.value.status == 409 and "not recurring" in not_recurring.value.message
    with pytest.raises(Conflict):
        client.retry_job(one_off.id)
    with pytest.raises(InvalidInput) as bad_filter:
        client.list_jobs(limit=0)
    assert bad_filter.value.status == 400 and bad_filter.value.field == "limit"
    client.cancel_job(one_off.id)
