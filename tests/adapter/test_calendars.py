"""A job's calendar in the engine on the emulator: a recurring job does not run on an excluded date,
whether it moves on after a run, catches up after a pause or is backfilled; its rate keeps its grid."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sundial.contract.jobs import BackfillRequest, JobCreate, JobUpdate
from sundial.contract.vocabulary import JobStatus
from sundial.shared.clock import format_rfc3339
from tests.adapter.conftest import Engine, python_target
from tests.adapter.test_exactly_once import run_due

SECOND = 1000
HOUR = 3600 * SECOND
DAY = 24 * HOUR


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def delivered(engine: Engine, job_id: str) -> list[str]:
    return [call.scheduled_at for call in engine.targets.calls if call.job_id == job_id]


def test_a_daily_job_does_not_run_on_the_holidays_of_its_calendar(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-22T08:00:00Z"))
    job_id = create(engine, schedule="0 9 * * *", calendar={"holidays": "DE"})

    for day in range(22, 29):
        engine.clock.set(ms(f"2026-12-{day}T09:00:01Z"))
        run_due(engine)

    assert delivered(engine, job_id) == [
        "2026-12-22T09:00:00Z",
        "2026-12-23T09:00:00Z",
        "2026-12-24T09:00:00Z",
        "2026-12-27T09:00:00Z",
        "2026-12-28T09:00:00Z",
    ]
    job = engine.store.get(job_id)
    assert (job.status, job.scheduled_at) == (JobStatus.PENDING, ms("2026-12-29T09:00:00Z"))


def test_after_the_run_before_an_excluded_date_the_next_occurrence_is_after_it(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-24T08:00:00Z"))
    job_id = create(engine, schedule="0 9 * * *", timezone="Europe/Berlin", calendar={"holidays": "DE"})
    assert engine.store.get(job_id).scheduled_at == ms("2026-12-24T08:00:00Z")

    engine.clock.set(ms("2026-12-24T08:00:01Z"))
    run_due(engine)

    after = engine.store.get(job_id)
    # 09:00 in Berlin on the 27th; nothing waits in the index for the 25th or the 26th.
    assert (after.status, after.scheduled_at) == (JobStatus.PENDING, ms("2026-12-27T08:00:00Z"))
    assert [row.due_at for row in engine.index_rows() if row.job_id == job_id] == [ms("2026-12-27T08:00:00Z")]


def test_a_rate_keeps_its_grid_past_an_excluded_date(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-24T20:00:00Z"))
    job_id = create(engine, schedule="rate(7 hours)", calendar={"exclude_dates": ["2026-12-25"]})

    for hour in range(1, 35):
        engine.clock.set(ms("2026-12-24T20:00:01Z") + hour * HOUR)
        run_due(engine)

    # 03:00, 10:00 and 17:00 on the 25th are out; the grid's next point is 00:00 on the 26th.
    assert delivered(engine, job_id) == ["2026-12-26T00:00:00Z"]
    assert engine.store.get(job_id).scheduled_at == ms("2026-12-26T07:00:00Z")


def test_a_resume_catches_up_only_on_kept_occurrences(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-23T08:00:00Z"))
    once = create(engine, schedule="0 9 * * *", calendar={"holidays": "DE"}, misfire_policy="run_once")
    skip = create(engine, schedule="0 9 * * *", calendar={"holidays": "DE"}, misfire_policy="skip")
    for job_id in (once, skip):
        engine.service.pause(job_id)

    engine.clock.set(ms("2026-12-26T12:00:00Z"))
    for job_id in (once, skip):
        engine.service.resume(job_id)
    run_due(engine)

    # run_once runs the latest missed occurrence, the 24th (the 25th and 26th were never ones).
    assert delivered(engine, once) == ["2026-12-24T09:00:00Z"]
    assert engine.store.get(once).scheduled_at == ms("2026-12-27T09:00:00Z")
    assert delivered(engine, skip) == []
    assert engine.store.get(skip).scheduled_at == ms("2026-12-27T09:00:00Z")


def test_a_patch_of_the_calendar_moves_an_occurrence_off_an_excluded_date(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-24T12:00:00Z"))
    job_id = create(engine, schedule="0 9 * * *")
    assert engine.store.get(job_id).scheduled_at == ms("2026-12-25T09:00:00Z")

    engine.service.update(job_id, JobUpdate.model_validate({"calendar": {"holidays": "DE"}}))
    moved = engine.store.get(job_id)
    engine.service.update(job_id, JobUpdate.model_validate({"calendar": None}))
    back = engine.store.get(job_id)

    assert moved.scheduled_at == ms("2026-12-27T09:00:00Z")
    assert moved.calendar is not None and moved.calendar.holidays == "DE"
    assert (back.scheduled_at, back.calendar) == (ms("2026-12-25T09:00:00Z"), None)


def test_a_backfill_takes_only_the_occurrences_the_calendar_keeps(engine: Engine) -> None:
    engine.clock.set(ms("2026-12-28T12:00:00Z"))
    job_id = create(engine, schedule="0 9 * * *", calendar={"holidays": "DE"}, overlap_policy="buffer")
    request = BackfillRequest.model_validate(
        {"from": "2026-12-22T00:00:00Z", "to": "2026-12-29T00:00:00Z", "dry_run": True}
    )

    answer = engine.service.backfill(job_id, request)

    assert answer.instants == [format_rfc3339(ms(f"2026-12-{day}T09:00:00Z")) for day in (22, 23, 24, 27, 28)]
    assert datetime.fromisoformat(answer.to.replace("Z", "+00:00")) == datetime(2026, 12, 28, 12, tzinfo=UTC)
