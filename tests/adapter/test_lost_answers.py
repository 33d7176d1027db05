"""Writes that DynamoDB applied but whose answers were lost: each caller goes on exactly as if it had
heard the answer (dispatches, settles, answers 201), never as if it had lost a race."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.contract.bounds import LONGEST_TIMEOUT_SECONDS
from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.engine.heartbeat import Heartbeat
from sundial.shared.engine.worker import Outcome
from tests.adapter.conftest import Engine, placed_as_before_the_writers_reach, python_target
from tests.adapter.lost_answers import LostAnswers

SECOND = 1000
LEASE = (c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS) * SECOND


@pytest.fixture
def lost(engine: Engine) -> LostAnswers:
    return LostAnswers(engine.store._client)


def spec(**fields: Any) -> JobCreate:
    return JobCreate.model_validate({"target": python_target(), **fields})


def test_create_whose_reservation_answer_was_lost_is_a_create(engine: Engine, lost: LostAnswers) -> None:
    lost.lose("PutItem")  # the Idempotency-Key reservation

    view, created = engine.service.create(spec(), "key-lost-1")

    assert created and lost.lost == ["PutItem"]
    assert [m.job_id for m in engine.receive()] == [view.id]  # dispatched, not left for the lease


def test_create_whose_job_answer_was_lost_is_a_create(engine: Engine, lost: LostAnswers) -> None:
    lost.lose("PutItem", 2)  # the reservation, then the job

    view, created = engine.service.create(spec(), "key-lost-2")

    assert created and lost.lost == ["PutItem", "PutItem"]
    assert engine.store.get(view.id).status is JobStatus.QUEUED
    assert [m.job_id for m in engine.receive()] == [view.id]


def test_claim(engine: Engine, lost: LostAnswers) -> None:
    run_at = engine.clock.now_ms() + 100 * SECOND
    with placed_as_before_the_writers_reach():  # a run row, which the tick claims
        view, _ = engine.service.create(spec(run_at=_iso(run_at)))
    engine.clock.set(run_at - 10 * SECOND)
    lost.lose("UpdateItem")

    report = engine.scheduler.tick()

    assert (report.claimed, report.dispatched, report.lost_races) == (1, 1, 0)
    assert [m.job_id for m in engine.receive()] == [view.id]


def test_fence(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec())
    [message] = engine.receive()
    lost.lose("UpdateItem")

    result = engine.worker.process(message)

    assert result.outcome is Outcome.SUCCEEDED and engine.targets.count(view.id) == 1
    assert engine.store.get(view.id).attempt == 1


def test_late_fence(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec())
    [message] = engine.receive()
    engine.clock.advance(LEASE / SECOND + 5)
    lost.lose("UpdateItem", 2)  # the cheap fence fails its lease check; the renewing one is lost

    result = engine.worker.process(message)

    assert result.outcome is Outcome.SUCCEEDED and engine.targets.count(view.id) == 1


def test_heartbeat(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec(timeout_seconds=LONGEST_TIMEOUT_SECONDS))
    [message] = engine.receive()
    job = engine.store.fence(view.id, message.token, "w", engine.clock.now_ms())
    heartbeat = Heartbeat(engine.context, job, message.token, 3600)
    engine.clock.advance(60)
    lost.lose("UpdateItem")

    heartbeat.beat()

    assert not heartbeat.lost and lost.lost == ["UpdateItem"]


def test_completion_sends_the_next_occurrence(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec(schedule="rate(1 minute)"))
    [message] = engine.receive()
    engine.clock.set(message.due_at)
    engine.targets.during[view.id] = lambda: lost.lose("UpdateItem")  # after the fence

    result = engine.worker.process(message)

    assert result.outcome is Outcome.SUCCEEDED and lost.lost == ["UpdateItem"]
    [following] = engine.receive()
    assert following.due_at == message.due_at + 60 * SECOND


def test_failure_schedules_its_retry_and_spends_no_extra_attempt(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec(max_retries=2, backoff=[2, 4]))
    engine.targets.failures[view.id] = 99
    outcomes = []
    for attempt in range(3):
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        lost.lose("UpdateItem" if attempt != 1 else "TransactWriteItems")  # the fence or the settle
        outcomes.append(engine.worker.process(message).outcome)

    assert outcomes == [Outcome.FAILED, Outcome.FAILED, Outcome.DEAD]
    assert sorted(lost.lost) == ["TransactWriteItems", "UpdateItem", "UpdateItem"]
    assert engine.targets.count(view.id) == 3
    assert engine.store.get(view.id).status is JobStatus.DEAD


def test_a_reclaim_that_ends_a_job_dead_sends_its_alert(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec(max_retries=0))
    [message] = engine.receive()
    engine.store.fence(view.id, message.token, "vanished", engine.clock.now_ms())
    engine.clock.advance(LEASE / SECOND + 1)
    lost.lose("TransactWriteItems")

    report = engine.scheduler.tick()

    assert (report.reclaimed, report.dead, report.lost_races) == (1, 1, 0)
    assert json.loads(engine.dead_letters()[0])["job_id"] == view.id


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("cancel", JobStatus.CANCELLED),
        ("pause", JobStatus.PENDING),
        ("resume", JobStatus.PENDING),
        ("trigger", JobStatus.QUEUED),
        ("update", JobStatus.PENDING),
    ],
)
def test_api_actions(engine: Engine, lost: LostAnswers, action: str, expected: JobStatus) -> None:
    view, _ = engine.service.create(spec(schedule="rate(1 hour)"))
    if action == "resume":
        engine.service.pause(view.id)
    lost.lose("UpdateItem")
    calls = {
        "cancel": lambda: engine.service.cancel(view.id),
        "pause": lambda: engine.service.pause(view.id),
        "resume": lambda: engine.service.resume(view.id),
        "trigger": lambda: engine.service.trigger(view.id),
        "update": lambda: engine.service.update(view.id, JobUpdate.model_validate({"name": "renamed"})),
    }

    answer = calls[action]()

    assert answer.status is expected and lost.lost == ["UpdateItem"]
    if action == "trigger":
        assert [m.job_id for m in engine.receive()] == [view.id]


def test_retry_of_a_dead_job(engine: Engine, lost: LostAnswers) -> None:
    view, _ = engine.service.create(spec(max_retries=0))
    engine.targets.failures[view.id] = 1
    engine.run_all()
    lost.lose("UpdateItem")

    answer = engine.service.retry(view.id)

    assert answer.status is JobStatus.QUEUED and answer.attempt == 1  # numbering goes on
    assert [m.job_id for m in engine.receive()] == [view.id]


def _iso(epoch_ms: int) -> str:
    from sundial.shared.clock import format_rfc3339

    return format_rfc3339(epoch_ms)
