"""Backfill on the emulator: the occurrences a schedule had before its job existed run once each,
with their own instants and idempotency keys, whatever the requests overlap; the ledger's
conditional writes decide a race."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.jobs import BackfillRequest, JobCreate
from sundial.contract.vocabulary import JobStatus
from sundial.shared.clock import format_rfc3339
from sundial.shared.errors import Conflict, InvalidInput, StaleDelivery
from sundial.shared.lifecycle.backfill import MAX_BACKFILL_OCCURRENCES
from tests.adapter.conftest import Engine, python_target
from tests.adapter.test_exactly_once import run_due

SECOND = 1000
HOUR = 3600 * SECOND


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def ask(engine: Engine, job_id: str, from_ms: int, to_ms: int, dry_run: bool = False) -> Any:
    request = BackfillRequest.model_validate(
        {"from": format_rfc3339(from_ms), "to": format_rfc3339(to_ms), "dry_run": dry_run}
    )
    return engine.service.backfill(job_id, request)


def hours_before(engine: Engine, count: int) -> list[int]:
    """The last `count` whole hours before now, oldest first."""
    last = engine.clock.now_ms() // HOUR * HOUR
    return [last - n * HOUR for n in range(count - 1, -1, -1)]


def delivered(engine: Engine, job_id: str) -> list[str]:
    return [call.scheduled_at for call in engine.targets.calls if call.job_id == job_id]


def test_buffer_runs_each_instant_once_oldest_first_with_its_own_key(engine: Engine) -> None:
    # Within the dispatch horizon of a whole hour its occurrence is sent ahead and the job is queued
    # for it: the clock starts half past, whatever the time the test runs at.
    now = engine.clock.now_ms()
    engine.clock.set(now // HOUR * HOUR + HOUR // 2 + (HOUR if now % HOUR > HOUR // 2 else 0))
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 3)

    answer = ask(engine, job_id, hours[0], hours[-1] + 1)
    run_due(engine)

    expected = [format_rfc3339(hour) for hour in hours]
    assert answer.instants == expected
    assert delivered(engine, job_id) == expected
    # the queues are the session's: a message another test left may come back visible meanwhile
    keys = [call.idempotency_key for call in engine.targets.calls if call.job_id == job_id]
    assert keys == [f"{job_id}:{instant}" for instant in expected]
    job = engine.store.get(job_id)
    # the schedule goes on where it was: its next hour, not yet due
    assert job.status is JobStatus.PENDING and not job.extra_run and job.scheduled_at == hours[-1] + HOUR


def test_asking_again_or_for_an_overlapping_window_runs_nothing_twice(engine: Engine) -> None:
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 5)

    first = ask(engine, job_id, hours[0], hours[2] + 1)
    again = ask(engine, job_id, hours[0], hours[2] + 1)
    wider = ask(engine, job_id, hours[1], hours[4] + 1)
    run_due(engine)

    assert [len(first.instants), len(again.instants)] == [3, 0]
    assert again.already == first.instants
    assert wider.instants == [format_rfc3339(hour) for hour in hours[3:]]
    assert delivered(engine, job_id) == [format_rfc3339(hour) for hour in hours]


def test_skip_runs_only_the_latest_and_records_the_rest(engine: Engine) -> None:
    job_id = create(engine, schedule="0 * * * *")  # overlap_policy skip
    hours = hours_before(engine, 4)

    answer = ask(engine, job_id, hours[0], hours[-1] + 1)
    later = ask(engine, job_id, hours[0], hours[-1] + 1)
    run_due(engine)

    assert answer.instants == [format_rfc3339(hours[-1])]
    assert answer.skipped == [format_rfc3339(hour) for hour in hours[:-1]]
    assert later.instants == [] and len(later.already) == 4
    assert delivered(engine, job_id) == [format_rfc3339(hours[-1])]


def test_a_dry_run_records_and_runs_nothing(engine: Engine) -> None:
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 2)

    dry = ask(engine, job_id, hours[0], hours[-1] + 1, dry_run=True)
    run_due(engine)
    real = ask(engine, job_id, hours[0], hours[-1] + 1)

    assert dry.instants == real.instants == [format_rfc3339(hour) for hour in hours]
    assert dry.job is None and delivered(engine, job_id) == []


def test_a_window_reaching_past_the_job_s_creation_ends_there(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)", overlap_policy="buffer")
    created = engine.store.get(job_id).created_at

    answer = ask(engine, job_id, created - 2 * HOUR - 1, created + 10 * HOUR)

    # a rate counts from its job's series: whole hours before its first run
    assert answer.to == format_rfc3339(created)
    assert answer.instants == [format_rfc3339(created - 2 * HOUR), format_rfc3339(created - HOUR)]


def test_one_off_cancelled_and_oversized_are_refused_and_change_nothing(engine: Engine) -> None:
    one_off = create(engine)
    cancelled = create(engine, schedule="0 * * * *")
    engine.service.cancel(cancelled)
    minutely = create(engine, schedule="* * * * *", overlap_policy="buffer")
    now = engine.clock.now_ms()
    before = engine.store.get(minutely)

    for job_id in (one_off, cancelled):
        with pytest.raises(Conflict):
            ask(engine, job_id, now - HOUR, now)
    with pytest.raises(
        InvalidInput, match=f"holds 60 occurrences; a backfill runs at most {MAX_BACKFILL_OCCURRENCES}"
    ):
        ask(engine, minutely, now // 60_000 * 60_000 - HOUR, now // 60_000 * 60_000)
    assert engine.store.get(minutely) == before
    assert engine.store.backfilled(minutely, 0, now) == set()


def test_a_backfill_behind_a_running_attempt_waits_and_a_cancel_drops_it(engine: Engine) -> None:
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 2)
    engine.targets.during[job_id] = lambda: ask(engine, job_id, hours[0], hours[-1] + 1)
    engine.service.trigger(job_id)

    run_due(engine)  # the triggered run; the backfill asked during it runs after it
    assert delivered(engine, job_id)[1:] == [format_rfc3339(hour) for hour in hours]

    again = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    engine.targets.during[again] = lambda: (
        ask(engine, again, hours[0], hours[-1] + 1),
        engine.service.cancel(again),
    )
    engine.service.trigger(again)
    run_due(engine)
    assert len(delivered(engine, again)) == 1  # only the triggered run; the cancel dropped the rest
    assert engine.store.get(again).status is JobStatus.CANCELLED and engine.store.get(again).backfill == ()


@pytest.mark.parametrize("paused", ["after the backfill", "before it"])
def test_a_paused_job_holds_its_backfilled_runs_until_resumed(engine: Engine, paused: str) -> None:
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 2)
    if paused == "before it":
        engine.service.pause(job_id)
    ask(engine, job_id, hours[0], hours[-1] + 1)
    if paused == "after the backfill":
        engine.service.pause(job_id)

    run_due(engine)
    held = delivered(engine, job_id)
    engine.service.resume(job_id)
    run_due(engine)

    assert held == []
    assert delivered(engine, job_id) == [format_rfc3339(hour) for hour in hours]


def test_the_ledger_refuses_an_instant_another_request_recorded_meanwhile(engine: Engine) -> None:
    job_id = create(engine, schedule="0 * * * *", overlap_policy="buffer")
    hours = hours_before(engine, 2)
    # another request recorded the first hour after this one read the ledger
    engine.store.backfill(engine.store.get(job_id), None, None, (hours[0],), (hours[0],))
    current = engine.store.get(job_id)  # the job as it now is: only the ledger's condition can fail

    with pytest.raises(StaleDelivery):
        engine.store.backfill(current, None, None, tuple(hours), tuple(hours))
    assert engine.store.backfilled(job_id, hours[0], hours[-1] + 1) == {hours[0]}
    assert engine.store.get(job_id).backfill == (hours[0],)
