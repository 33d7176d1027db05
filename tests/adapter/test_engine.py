"""The engine end to end on the emulator: claim, dispatch, fence, run, retry, die, move on."""

from __future__ import annotations

import json

from sundial.contract.jobs import JobCreate
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.engine.worker import Outcome, Worker
from tests.adapter.conftest import Engine, placed_as_before_the_writers_reach, python_target

SECOND = 1000


def create(engine: Engine, **fields: object) -> str:
    body = {"target": python_target(), **fields}
    view, created = engine.service.create(JobCreate.model_validate(body))
    assert created
    return view.id


def test_a_job_due_now_is_dispatched_by_its_create_and_runs_once(engine: Engine) -> None:
    job_id = create(engine)

    assert engine.store.get(job_id).status is JobStatus.QUEUED
    results = engine.run_all()

    assert [r.outcome for r in results] == [Outcome.SUCCEEDED]
    assert engine.targets.count(job_id) == 1
    job = engine.store.get(job_id)
    assert job.status is JobStatus.SUCCEEDED
    assert job.last_run is not None and job.last_run.status == "succeeded"


def test_a_job_due_later_waits_in_the_index_until_the_tick_before_it(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 10 * 60 * SECOND
    job_id = create(engine, run_at=_iso(run_at))
    assert engine.store.get(job_id).status is JobStatus.PENDING

    assert engine.scheduler.tick().dispatched == 0
    engine.clock.set(run_at - 30 * SECOND)
    report = engine.scheduler.tick()

    # Placed far ahead, it waits with its token: the tick sends it without writing to it.
    assert (report.claimed, report.sent_ahead, report.dispatched) == (0, 1, 1)
    assert engine.store.get(job_id).status is JobStatus.PENDING
    assert engine.sent[-1]["DelaySeconds"] == 30
    engine.clock.advance(29.5)  # delivered a little early: the worker waits out the rest
    [result] = engine.run_all()
    assert result.outcome is Outcome.SUCCEEDED
    assert result.lateness_ms == 0


def test_a_job_dated_in_the_past_is_late_from_its_creation_not_its_date(engine: Engine) -> None:
    # Years before it existed: it could not have started before its creation, so the lateness the
    # worker reports (the start-lateness metric the alarm reads) counts from then.
    job_id = create(engine, run_at=_iso(engine.clock.now_ms() - 6 * 365 * 24 * 3600 * SECOND))
    engine.clock.advance(2)
    [result] = engine.run_all()

    assert (result.outcome, result.job_id) == (Outcome.SUCCEEDED, job_id)
    assert result.lateness_ms == 2 * SECOND


def test_a_duplicate_delivery_is_dropped_by_the_fence(engine: Engine) -> None:
    job_id = create(engine)
    [message] = engine.receive()

    first = engine.worker.process(message)
    second = engine.worker.process(message)

    assert (first.outcome, second.outcome) == (Outcome.SUCCEEDED, Outcome.DROPPED)
    assert engine.targets.count(job_id) == 1


def test_two_ticks_at_once_claim_each_job_once(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 100 * SECOND
    with placed_as_before_the_writers_reach():  # run rows, which the tick claims
        ids = [create(engine, run_at=_iso(run_at)) for _ in range(6)]
    engine.clock.set(run_at - 10 * SECOND)

    first, second = engine.scheduler.tick(), engine.scheduler.tick()

    assert first.claimed + second.claimed == 6
    assert sorted(m.job_id for m in engine.receive()) == sorted(ids)


def test_failures_retry_after_the_backoff_then_die_with_a_dead_letter(engine: Engine) -> None:
    job_id = create(engine, max_retries=2, backoff=[5, 30])
    engine.targets.failures[job_id] = 99
    outcomes = []
    gaps = []
    for _ in range(3):
        before = engine.clock.now_ms()
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        gaps.append((message.due_at - before) / SECOND)
        outcomes.append(engine.worker.process(message).outcome)

    assert outcomes == [Outcome.FAILED, Outcome.FAILED, Outcome.DEAD]
    assert 4.5 <= gaps[1] <= 5.5 and 27 <= gaps[2] <= 33  # backoff with ±10 % jitter
    job = engine.store.get(job_id)
    assert (job.status, job.attempt) == (JobStatus.DEAD, 3)
    [letter] = engine.dead_letters()
    assert json.loads(letter)["job_id"] == job_id
    runs, _ = engine.store.runs(job_id, 10, None)
    assert [r.status for r in runs] == ["dead", "failed", "failed"]
    assert engine.scheduler.tick().claimed == 0  # dead is final: never retried automatically


def test_a_retried_dead_job_gets_its_retries_afresh_and_keeps_every_attempt_in_its_history(
    engine: Engine,
) -> None:
    job_id = create(engine, max_retries=1, backoff=[5])
    engine.targets.failures[job_id] = 99
    for _ in range(2):
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        engine.worker.process(message)
    assert engine.store.get(job_id).status is JobStatus.DEAD

    engine.service.retry(job_id)
    outcomes = []
    for _ in range(2):
        [message] = engine.receive()
        engine.clock.set(max(engine.clock.now_ms(), message.due_at))
        outcomes.append(engine.worker.process(message).outcome)

    assert outcomes == [Outcome.FAILED, Outcome.DEAD]  # one retry again, as the policy says
    assert engine.targets.count(job_id) == 4
    runs, _ = engine.store.runs(job_id, 10, None)
    assert sorted((r.attempt, r.status) for r in runs) == [
        (1, "failed"),
        (2, "dead"),
        (3, "failed"),
        (4, "dead"),
    ]


def test_a_recurring_job_moves_on_to_its_next_occurrence(engine: Engine) -> None:
    """Two minutes apart, each occurrence is queued and sent by the completion before it, claimed
    by no tick."""
    job_id = create(engine, schedule="rate(2 minutes)")
    first = engine.store.get(job_id)
    assert first.status is JobStatus.QUEUED and first.due_at is not None

    engine.clock.set(first.due_at)
    [result] = engine.run_all()

    assert result.outcome is Outcome.SUCCEEDED
    after = engine.store.get(job_id)
    assert (after.status, after.scheduled_at) == (JobStatus.QUEUED, first.due_at + 120 * SECOND)
    [message] = engine.receive()
    assert (message.token, message.due_at) == (after.token, first.due_at + 120 * SECOND)
    assert engine.scheduler.tick().claimed == 0


def test_an_occurrence_before_the_next_tick_is_dispatched_by_the_completion(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    queued = engine.store.get(job_id)
    assert queued.status is JobStatus.QUEUED and queued.due_at is not None
    engine.clock.set(queued.due_at)

    [result] = engine.run_all()

    assert result.outcome is Outcome.SUCCEEDED
    after = engine.store.get(job_id)
    assert (after.status, after.due_at) == (JobStatus.QUEUED, queued.due_at + 60 * SECOND)
    [message] = engine.receive()
    assert (message.job_id, message.due_at) == (job_id, after.due_at)


def test_a_worker_that_vanished_loses_its_lease_and_the_tick_reclaims(engine: Engine) -> None:
    job_id = create(engine, max_retries=1)
    [message] = engine.receive()
    engine.store.fence(message.job_id, message.token, "crashed-worker", engine.clock.now_ms())

    engine.clock.advance(c.LEASE_CHUNK_SECONDS + c.LEASE_MARGIN_SECONDS + 1)
    report = engine.scheduler.tick()
    assert report.reclaimed == 1
    [again] = engine.receive()
    assert engine.worker.process(message).outcome is Outcome.DROPPED  # the zombie's copy
    assert engine.worker.process(again).outcome is Outcome.SUCCEEDED

    runs, _ = engine.store.runs(job_id, 10, None)
    assert [(r.attempt, r.status) for r in runs] == [(2, "succeeded"), (1, "lost")]


def test_high_priority_is_dispatched_first_within_a_tick(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 5 * 60 * SECOND
    for priority in ("low", "medium", "high"):
        create(engine, run_at=_iso(run_at), priority=priority)
    engine.clock.set(run_at - 10 * SECOND)
    engine.sent.clear()

    engine.scheduler.tick()

    priorities = [json.loads(entry["MessageBody"])["priority"] for entry in engine.sent]
    assert priorities == ["high", "medium", "low"]


def _iso(epoch_ms: int) -> str:
    from sundial.shared.clock import format_rfc3339

    return format_rfc3339(epoch_ms)


def test_failures_only_history_leaves_each_success_to_last_run(engine: Engine) -> None:
    worker = Worker(
        engine.context,
        engine.targets,
        "w-failures",
        sleep=lambda _: None,
        history=c.History.FAILURES,
    )
    recurring = create(engine, schedule="rate(1 minute)", max_retries=0)
    one_off = create(engine)
    engine.clock.set(engine.store.get(recurring).due_at or 0)
    results = {m.job_id: worker.process(m).outcome for m in engine.receive()}
    assert results == {recurring: Outcome.SUCCEEDED, one_off: Outcome.SUCCEEDED}
    succeeded = engine.store.get(recurring)
    assert succeeded.last_run is not None and succeeded.last_run.status == "succeeded"

    engine.targets.failures[recurring] = 1
    engine.clock.set(succeeded.due_at or 0)
    [message] = engine.receive()
    assert worker.process(message).outcome is Outcome.DEAD

    runs, _ = engine.store.runs(recurring, 10, None)
    assert [r.status for r in runs] == ["dead"]  # the success is in last_run only
    one_off_runs, _ = engine.store.runs(one_off, 10, None)
    assert one_off_runs == []  # a one-off's too: its runs answer it from last_run (test_run_history.py)
    assert engine.store.get(one_off).last_run.status == "succeeded"  # type: ignore[union-attr]
    assert engine.store.get(recurring).last_run.status == "dead"  # type: ignore[union-attr]
