"""A job placed far ahead waits with its token: the tick sends its message from the index row without
writing to the job, the fence starts it from its waiting status, and the row's implied lease is the
backstop for a message that started nothing."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.vocabulary import JobStatus, RunStatus
from sundial.local_stack.recovery import hand_on_in_flight
from sundial.shared import constants as c
from sundial.shared.clock import format_rfc3339
from sundial.shared.dispatch import JobMessage
from sundial.shared.engine.worker import Outcome
from sundial.shared.lifecycle import ahead_lease
from sundial.shared.store import items
from tests.adapter.conftest import Engine, python_target

SECOND = 1000
MINUTE = 60 * SECOND
HORIZON = c.DISPATCH_HORIZON_SECONDS * SECOND


def create(engine: Engine, **fields: Any) -> str:
    view, _ = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    return view.id


def one_off_in(engine: Engine, minutes: int) -> tuple[str, int]:
    run_at = engine.clock.now_ms() + minutes * MINUTE
    return create(engine, run_at=format_rfc3339(run_at)), run_at


def hourly(engine: Engine, misfire: str = "run_once") -> tuple[str, int]:
    job_id = create(engine, schedule="rate(1 hour)", misfire_policy=misfire)
    due = engine.store.get(job_id).due_at
    assert due is not None
    return job_id, due


def sent_until(engine: Engine, job_id: str) -> int:
    """The sent mark that covers the job's row."""
    return engine.store.sent_marks().of(items.shard_number(job_id))


def index_rows(engine: Engine, job_id: str) -> list[str]:
    return [row.due_key for row in engine.index_rows() if row.job_id == job_id]


def test_placed_far_ahead_a_job_waits_with_its_token_in_an_ahead_row(engine: Engine) -> None:
    job_id, run_at = one_off_in(engine, 10)

    job = engine.store.get(job_id)
    assert job.status is JobStatus.PENDING and job.token is not None
    assert job.lease_until == ahead_lease(run_at)
    assert index_rows(engine, job_id) == [items.ahead_key(run_at, job.token)]


def test_a_job_due_before_the_ahead_rows_start_is_queued_and_sent_by_its_create(engine: Engine) -> None:
    job_id, run_at = one_off_in(engine, 2)  # beyond the tick's horizon, within its margin

    job = engine.store.get(job_id)
    assert job.status is JobStatus.QUEUED and job.token is not None and job.lease_until is not None
    assert index_rows(engine, job_id) == [items.due_key(JobStatus.QUEUED, job.lease_until)]
    [message] = engine.receive()
    assert (message.job_id, message.token, message.due_at) == (job_id, job.token, run_at)
    assert engine.scheduler.tick().claimed == 0  # nothing for a tick to claim


def test_the_tick_sends_an_ahead_job_without_writing_to_it_and_once(engine: Engine) -> None:
    job_id, run_at = one_off_in(engine, 10)
    waiting = engine.store.get(job_id)
    engine.clock.set(run_at - 30 * SECOND)

    first = engine.scheduler.tick()
    second = engine.scheduler.tick()

    assert (first.claimed, first.sent_ahead, first.dispatched) == (0, 1, 1)
    assert (second.sent_ahead, second.dispatched) == (0, 0)
    assert engine.store.get(job_id) == waiting  # not one write to the job
    assert sent_until(engine, job_id) == run_at - 30 * SECOND + HORIZON
    assert engine.sent[-1]["DelaySeconds"] == 30
    engine.clock.set(run_at)
    [result] = engine.run_all()
    assert (result.outcome, result.lateness_ms) == (Outcome.SUCCEEDED, 0)
    assert engine.targets.count(job_id) == 1
    assert index_rows(engine, job_id) == []


def test_a_recurring_job_waits_ahead_after_each_run_and_no_tick_claims_it(engine: Engine) -> None:
    job_id, due = hourly(engine)
    for _ in range(3):
        engine.clock.set(due - 40 * SECOND)
        report = engine.scheduler.tick()
        assert (report.claimed, report.sent_ahead) == (0, 1)
        engine.clock.set(due)
        [result] = engine.run_all()
        assert result.outcome is Outcome.SUCCEEDED
        job = engine.store.get(job_id)
        assert (job.status, job.due_at, job.attempt) == (JobStatus.PENDING, due + 3600 * SECOND, 0)
        assert job.token is not None
        assert index_rows(engine, job_id) == [items.ahead_key(due + 3600 * SECOND, job.token)]
        assert job.last_run is not None and job.last_run.scheduled_at == due
        due += 3600 * SECOND
    assert engine.targets.count(job_id) == 3


def test_ticks_that_read_the_same_mark_send_copies_and_one_of_them_runs(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, run_at = one_off_in(engine, 10)
    engine.clock.set(run_at - 30 * SECOND)
    marks = engine.store.sent_marks()
    first = engine.scheduler.tick()
    monkeypatch.setattr(engine.store, "sent_marks", lambda: marks)  # read before the first wrote it
    second = engine.scheduler.tick()

    assert (first.sent_ahead, second.sent_ahead) == (1, 1)
    engine.clock.set(run_at)
    outcomes = sorted(result.outcome for result in engine.run_all())
    assert outcomes == sorted([Outcome.SUCCEEDED, Outcome.DROPPED])
    assert engine.targets.count(job_id) == 1


def test_a_failed_send_holds_the_mark_below_it_and_the_next_tick_sends_again(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, run_at = one_off_in(engine, 10)
    waiting = engine.store.get(job_id)
    engine.clock.set(run_at - 70 * SECOND)
    monkeypatch.setattr(engine.dispatcher, "send", list)  # every message failed

    failed = engine.scheduler.tick()

    assert (failed.sent_ahead, failed.send_failures) == (0, 1)
    assert sent_until(engine, job_id) < run_at  # held below the row that was not sent
    assert engine.store.get(job_id) == waiting  # nothing to release: it was never claimed
    monkeypatch.undo()
    engine.clock.set(run_at - 10 * SECOND)
    assert engine.scheduler.tick().sent_ahead == 1
    engine.clock.set(run_at)
    assert [r.outcome for r in engine.run_all()] == [Outcome.SUCCEEDED]


@pytest.mark.parametrize("misfire", ["skip", "run_once"])
def test_a_sent_message_that_started_nothing_is_sent_again_after_the_rows_lease(
    engine: Engine, misfire: str
) -> None:
    job_id, due = hourly(engine, misfire)
    engine.clock.set(due - 30 * SECOND)
    engine.scheduler.tick()
    assert len(engine.receive()) == 1  # and lost
    token = engine.store.get(job_id).token

    engine.clock.set(ahead_lease(due) + 1)
    report = engine.scheduler.tick()

    # Sent on time, it is not a misfire, even for `skip`: the occurrence runs, under the same token.
    assert (report.resent, report.caught_up) == (1, 0)
    queued = engine.store.get(job_id)
    assert (queued.status, queued.scheduled_at, queued.token) == (JobStatus.QUEUED, due, token)
    [result] = engine.run_all()
    assert result.outcome is Outcome.SUCCEEDED
    assert engine.targets.calls[0].scheduled_at == format_rfc3339(due)


@pytest.mark.parametrize("late", [90 * SECOND, 200 * SECOND], ids=["row's lease not over", "over"])
def test_an_ahead_row_never_sent_while_the_ticks_stopped_follows_the_misfire_policy(
    engine: Engine, late: int
) -> None:
    job_id, due = hourly(engine, "skip")
    engine.clock.set(due + late)

    report = engine.scheduler.tick()

    assert (report.claimed, report.caught_up, report.sent_ahead) == (1, 1, 0)
    job = engine.store.get(job_id)
    assert (job.status, job.scheduled_at) == (JobStatus.PENDING, due + 3600 * SECOND)
    assert engine.run_all() == [] and engine.targets.count(job_id) == 0


def test_a_worker_gone_after_an_ahead_fence_is_reclaimed_after_the_rows_lease(engine: Engine) -> None:
    job_id, due = hourly(engine)
    engine.clock.set(due - 30 * SECOND)
    engine.scheduler.tick()
    [message] = engine.receive()
    engine.clock.set(due)
    running = engine.worker.fence(message)  # ...and the worker is gone
    assert running.status is JobStatus.RUNNING and running.lease_until == ahead_lease(due)
    assert index_rows(engine, job_id) == [items.ahead_key(due, message.token)]  # the row stayed

    engine.clock.set(ahead_lease(due) - 1)
    assert engine.scheduler.tick().reclaimed == 0
    engine.clock.set(ahead_lease(due) + 1)
    assert engine.scheduler.tick().reclaimed == 1

    job = engine.store.get(job_id)
    assert job.last_run is not None and job.last_run.status is RunStatus.LOST
    assert [r.outcome for r in engine.run_all()] == [Outcome.SUCCEEDED]  # the retry, at once
    assert engine.targets.count(job_id) == 1


def test_a_late_delivery_under_an_ahead_lease_gets_a_fresh_lease(engine: Engine) -> None:
    job_id, due = hourly(engine)
    engine.clock.set(due - 30 * SECOND)
    engine.scheduler.tick()
    [message] = engine.receive()
    engine.clock.set(due + 170 * SECOND)  # ten seconds of the row's lease left

    running = engine.worker.fence(message)

    assert running.status is JobStatus.RUNNING and running.lease_until is not None
    assert running.lease_until > ahead_lease(due)
    assert index_rows(engine, job_id) == [items.due_key(JobStatus.RUNNING, running.lease_until)]


@pytest.mark.parametrize("action", ["pause", "cancel", "move"])
def test_a_user_action_after_the_send_voids_the_sent_message(engine: Engine, action: str) -> None:
    job_id, due = hourly(engine)
    engine.clock.set(due - 30 * SECOND)
    engine.scheduler.tick()
    if action == "pause":
        engine.service.pause(job_id)
    elif action == "cancel":
        engine.service.cancel(job_id)
    else:
        engine.service.update(job_id, _move("rate(2 hours)"))
    engine.clock.set(due)

    messages = engine.receive()
    results = [engine.worker.process(message) for message in messages]

    assert [r.outcome for r in results] == [Outcome.DROPPED]
    assert engine.targets.count(job_id) == 0


def test_a_change_that_keeps_the_occurrence_keeps_the_sent_message(engine: Engine) -> None:
    job_id, due = hourly(engine)
    engine.clock.set(due - 30 * SECOND)
    engine.scheduler.tick()
    engine.service.update(job_id, _move(None, payload={"v": 2}))
    engine.clock.set(due)

    [result] = engine.run_all()

    assert result.outcome is Outcome.SUCCEEDED
    assert engine.targets.calls[0].payload == {"v": 2}


def _move(schedule: str | None, **fields: Any) -> JobUpdate:
    body = {"schedule": schedule, **fields} if schedule else fields
    return JobUpdate.model_validate(body)


def test_a_message_built_from_an_ahead_row_is_the_jobs_own(engine: Engine) -> None:
    job_id, run_at = one_off_in(engine, 10)
    engine.clock.set(run_at - 30 * SECOND)
    engine.scheduler.tick()

    [message] = engine.receive()

    job = engine.store.get(job_id)
    assert message == JobMessage(job_id=job_id, token=job.token or "", due_at=run_at, priority=job.priority)


def test_a_local_stack_started_again_sends_again_what_died_with_its_queues(
    engine: Engine, dynamodb: Any
) -> None:
    job_id, run_at = one_off_in(engine, 10)
    engine.clock.set(run_at - 30 * SECOND)
    engine.scheduler.tick()
    assert len(engine.receive()) == 1  # the queue, and the message in it, die with the emulator

    hand_on_in_flight(dynamodb, engine.resources.table_name, engine.clock)

    assert sent_until(engine, job_id) == 0
    assert engine.scheduler.tick().sent_ahead == 1
    engine.clock.set(run_at)
    assert [r.outcome for r in engine.run_all()] == [Outcome.SUCCEEDED]
    assert engine.targets.count(job_id) == 1
