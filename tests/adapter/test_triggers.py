"""A trigger is recorded intent: every acknowledged trigger runs once, unless a later pause or cancel
drops it, and every answer says what the call did to a waiting trigger, retry or deferred run."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.jobs import Effect, JobCreate, JobUpdate, JobView
from sundial.contract.vocabulary import JobStatus
from sundial.shared import constants as c
from sundial.shared.clock import format_rfc3339
from sundial.shared.errors import Conflict
from sundial.shared.schedules import first_occurrence, parse_schedule
from tests.adapter.conftest import Engine, python_target
from tests.adapter.test_exactly_once import run_due

SECOND = 1000
MINUTE = 60 * SECOND


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def patch(engine: Engine, job_id: str, **fields: Any) -> JobView:
    return engine.service.update(job_id, JobUpdate.model_validate(fields))


def effects(view: JobView) -> list[tuple[str, str]]:
    return [(effect.subject, effect.fate) for effect in view.effects]


def scheduled(engine: Engine, job_id: str) -> list[str]:
    return [call.scheduled_at for call in engine.targets.calls if call.job_id == job_id]


def test_recurring_job_triggered_then_patched_schedule_runs_its_extra_run(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.service.trigger(job_id)
    new_first = first_occurrence(parse_schedule("rate(2 hours)", "UTC"), engine.clock.now_ms(), None, None)

    view = patch(engine, job_id, schedule="rate(2 hours)")

    assert ("trigger", "kept") in effects(view) and view.triggers_waiting == 1
    run_due(engine)
    assert engine.targets.count(job_id) == 1  # the extra run
    job = engine.store.get(job_id)
    assert job.status is JobStatus.PENDING and job.deferred_at is None
    assert job.scheduled_at == new_first  # the schedule resumes where the change put it


def test_one_off_due_in_ten_minutes_triggered_then_patched_run_at_runs_both(engine: Engine) -> None:
    run_at = engine.clock.now_ms() + 10 * MINUTE
    job_id = create(engine, run_at=format_rfc3339(run_at))
    engine.service.trigger(job_id)
    moved_to = run_at + 10 * MINUTE

    view = patch(engine, job_id, run_at=format_rfc3339(moved_to))

    assert ("trigger", "kept") in effects(view) and ("deferred_run", "moved") in effects(view)
    run_due(engine)
    assert engine.targets.count(job_id) == 1  # the extra run, now
    engine.clock.set(moved_to)
    run_due(engine)
    assert scheduled(engine, job_id)[-1] == format_rfc3339(moved_to)
    assert engine.targets.count(job_id) == 2
    assert engine.store.get(job_id).status is JobStatus.SUCCEEDED


def test_one_off_triggered_then_patched_to_the_triggered_instant_is_refused_and_runs_both(
    engine: Engine,
) -> None:
    """The one-off's own run may not move onto the instant of its waiting triggered run: the two
    would share one idempotency key, so a target that honours keys would run only one. The PATCH is
    refused, changes nothing, and both runs happen, each on its own instant."""
    run_at = engine.clock.now_ms() + 10 * MINUTE
    job_id = create(engine, run_at=format_rfc3339(run_at))
    triggered = engine.service.trigger(job_id)
    assert triggered.next_run_at is not None
    before = engine.store.get(job_id)

    with pytest.raises(Conflict) as refused:
        patch(engine, job_id, run_at=triggered.next_run_at)

    assert refused.value.field == "run_at" and "triggered run at" in str(refused.value)
    assert engine.store.get(job_id) == before
    run_due(engine)
    engine.clock.set(run_at)
    run_due(engine)
    assert scheduled(engine, job_id) == [triggered.next_run_at, format_rfc3339(run_at)]
    assert engine.store.get(job_id).status is JobStatus.SUCCEEDED


def test_recurring_job_triggered_twice_a_second_apart_runs_two_extra_runs(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    first = engine.service.trigger(job_id)
    engine.clock.advance(1)

    second = engine.service.trigger(job_id)

    assert effects(first) == [("trigger", "runs_now")] and first.triggers_waiting == 1
    assert effects(second) == [("trigger", "waits")] and second.triggers_waiting == 2
    run_due(engine)
    assert engine.targets.count(job_id) == 2
    calls = scheduled(engine, job_id)
    assert len(set(calls)) == 2  # two occurrences, each with its own idempotency key
    job = engine.store.get(job_id)
    assert (job.status, job.triggers, job.deferred_at) == (JobStatus.PENDING, 0, None)


def test_running_job_triggered_twice_runs_two_extra_runs_one_after_another(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    answers: list[JobView] = []
    engine.targets.during[job_id] = lambda: answers.extend(engine.service.trigger(job_id) for _ in range(2))

    run_due(engine)

    assert [effects(a) for a in answers] == [[("trigger", "waits")]] * 2
    assert [a.triggers_waiting for a in answers] == [1, 2]
    assert engine.targets.count(job_id) == 3


def test_job_with_the_most_waiting_triggers_refuses_another_and_changes_nothing(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    for _ in range(c.MAX_WAITING_TRIGGERS):
        engine.service.trigger(job_id)
    before = engine.store.get(job_id)

    with pytest.raises(Conflict, match="triggered runs waiting"):
        engine.service.trigger(job_id)

    assert engine.store.get(job_id).version == before.version
    run_due(engine)
    assert engine.targets.count(job_id) == c.MAX_WAITING_TRIGGERS


def test_paused_job_with_waiting_triggers_drops_them_and_says_so(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.service.trigger(job_id)
    engine.service.trigger(job_id)

    view = engine.service.pause(job_id)

    dropped, deferred = view.effects
    assert dropped == Effect(subject="trigger", fate="dropped", count=2, message=dropped.message)
    assert (deferred.subject, deferred.fate) == ("deferred_run", "held")  # the regular occurrence
    assert view.triggers_waiting == 0
    run_due(engine)
    assert engine.targets.count(job_id) == 0


def test_cancelled_job_with_a_trigger_waiting_behind_its_attempt_says_it_dropped_it(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    answers: list[JobView] = []

    def trigger_then_cancel() -> None:
        engine.service.trigger(job_id)
        answers.append(engine.service.cancel(job_id))

    engine.targets.during[job_id] = trigger_then_cancel
    run_due(engine)

    assert effects(answers[0]) == [("trigger", "dropped")]
    assert engine.targets.count(job_id) == 1
    assert engine.store.get(job_id).status is JobStatus.CANCELLED


def test_running_job_cancelled_then_triggered_refuses_the_trigger_and_changes_nothing(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)
    refusals: list[Conflict] = []

    def cancel_then_trigger() -> None:
        engine.service.cancel(job_id)
        before = engine.store.get(job_id)
        with pytest.raises(Conflict, match="being cancelled") as refused:
            engine.service.trigger(job_id)
        assert engine.store.get(job_id).version == before.version
        refusals.append(refused.value)

    engine.targets.during[job_id] = cancel_then_trigger
    run_due(engine)

    assert len(refusals) == 1
    assert engine.targets.count(job_id) == 1
    assert engine.store.get(job_id).status is JobStatus.CANCELLED


def test_failed_job_in_its_backoff_patched_to_no_retries_keeps_the_scheduled_retry_and_says_so(
    engine: Engine,
) -> None:
    job_id = create(engine, max_retries=2, backoff=[30])
    engine.targets.failures[job_id] = 99
    run_due(engine)
    retry_at = engine.store.get(job_id).due_at

    view = patch(engine, job_id, max_retries=0)

    assert view.status is JobStatus.QUEUED and retry_at is not None
    [kept] = view.effects
    assert (kept.subject, kept.fate, kept.at) == ("retry", "kept", format_rfc3339(retry_at))
    engine.clock.set(retry_at)
    run_due(engine)
    job = engine.store.get(job_id)
    assert engine.targets.count(job_id) == 2 and job.status is JobStatus.DEAD  # no retry after it


def test_recurring_job_in_its_backoff_patched_to_a_run_at_runs_the_retry_then_the_new_instant(
    engine: Engine,
) -> None:
    """The new run_at makes the job a one-off; the retry already scheduled still runs, as the
    occurrence it was, and the new instant waits behind it as a deferred run (the job used to end on
    the retry, and the new instant never ran)."""
    job_id = create(engine, schedule="rate(1 minute)", max_retries=1, backoff=[30])
    engine.targets.failures[job_id] = 1
    engine.clock.advance(60)
    run_due(engine)
    first = engine.store.get(job_id)
    assert first.attempt == 1 and first.due_at is not None and first.scheduled_at is not None
    moved_to = engine.clock.now_ms() + 10 * MINUTE

    view = patch(engine, job_id, run_at=format_rfc3339(moved_to))

    said = [(effect.subject, effect.fate, effect.at) for effect in view.effects]
    assert ("retry", "kept", format_rfc3339(first.due_at)) in said
    assert ("deferred_run", "moved", format_rfc3339(moved_to)) in said
    engine.clock.set(first.due_at)
    run_due(engine)
    assert scheduled(engine, job_id) == [format_rfc3339(first.scheduled_at)] * 2  # the retry, as it was
    job = engine.store.get(job_id)
    assert job.status is JobStatus.PENDING and job.scheduled_at == moved_to and job.deferred_at is None
    engine.clock.set(moved_to)
    run_due(engine)
    assert scheduled(engine, job_id)[-1] == format_rfc3339(moved_to)
    assert engine.store.get(job_id).status is JobStatus.SUCCEEDED


@pytest.mark.parametrize("retrying", [False, True])
def test_paused_recurring_job_patched_to_a_run_at_is_refused_and_changes_nothing(
    engine: Engine, retrying: bool
) -> None:
    """A one-off cannot be paused nor resumed: taken in, the change would leave the job paused for
    good, its run_at never run. Refused, naming run_at and the way out; the job resumes as it was."""
    job_id = create(engine, schedule="rate(1 minute)", max_retries=1, backoff=[30])
    if retrying:
        engine.targets.failures[job_id] = 1
        engine.clock.advance(60)
        run_due(engine)
    engine.service.pause(job_id)
    before = engine.store.get(job_id)

    with pytest.raises(Conflict, match="is paused, and a one-off cannot be: resume it") as refused:
        patch(engine, job_id, run_at=format_rfc3339(engine.clock.now_ms() + 10 * MINUTE))

    assert refused.value.field == "run_at"
    assert engine.store.get(job_id) == before
    engine.service.resume(job_id)
    engine.clock.advance(60)
    run_due(engine)
    # The next instant runs; a retry the pause held ran at the resume, before it.
    assert engine.targets.count(job_id) == (3 if retrying else 1)
    assert engine.store.get(job_id).is_recurring


def test_failed_job_in_its_backoff_triggered_runs_its_retry_now_and_says_so(engine: Engine) -> None:
    job_id = create(engine, max_retries=2, backoff=[600])
    engine.targets.failures[job_id] = 1
    run_due(engine)

    view = engine.service.trigger(job_id)

    assert effects(view) == [("retry", "runs_now")]
    run_due(engine)
    assert engine.targets.count(job_id) == 2 and engine.store.get(job_id).status is JobStatus.SUCCEEDED


def test_reads_carry_no_effects(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    engine.service.trigger(job_id)

    view = engine.service.get(job_id)

    assert view.effects == [] and view.triggers_waiting == 1


def test_running_job_stored_with_the_old_trigger_flag_runs_its_extra_run_once(engine: Engine) -> None:
    """An item written before triggers were counted holds `trigger_requested`: read as one trigger,
    and gone with the settle that starts its run."""
    job_id = create(engine, schedule="rate(1 hour)")
    engine.clock.set(engine.store.get(job_id).due_at or 0)

    def old_flag() -> None:
        engine.store._client.update_item(
            TableName=engine.resources.table_name,
            Key={"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}},
            # as the trigger call wrote it then, on an item without `triggers`: a user action, so the
            # revision moves
            UpdateExpression="SET trigger_requested = :yes, revision = revision + :one REMOVE triggers",
            ExpressionAttributeValues={":yes": {"BOOL": True}, ":one": {"N": "1"}},
        )

    engine.targets.during[job_id] = old_flag
    run_due(engine)

    assert engine.targets.count(job_id) == 2  # the occurrence and its extra run
    job = engine.store.get(job_id)
    assert (job.status, job.triggers, job.extra_run) == (JobStatus.PENDING, 0, False)
