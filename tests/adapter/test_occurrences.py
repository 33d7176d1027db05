"""The occurrence ledger on the emulator: every instant of a schedule once, ran exactly when its target
saw it, skipped with the reason a durable record gives, whatever paused, overlapped or misfired it."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.contract.jobs import JobCreate, JobUpdate
from sundial.contract.occurrences import OccurrenceView
from sundial.shared.clock import FixedClock, format_rfc3339
from sundial.shared.service.occurrences import OccurrenceReader
from sundial.shared.service.service import JobService
from tests.adapter.conftest import Engine, python_target
from tests.adapter.test_exactly_once import run_due

SECOND = 1000
MINUTE = 60 * SECOND


def create(engine: Engine, **fields: Any) -> str:
    view, created = engine.service.create(JobCreate.model_validate({"target": python_target(), **fields}))
    assert created
    return view.id


def ledger(engine: Engine, job_id: str, from_ms: int, to_ms: int | None = None) -> list[OccurrenceView]:
    reader = OccurrenceReader(engine.store, engine.clock)
    # a worker takes a message up to a second before its instant: those count as now's
    to = format_rfc3339(to_ms if to_ms is not None else engine.clock.now_ms() + 2 * SECOND)
    rows: list[OccurrenceView] = []
    token = None
    while True:
        page = reader.page(job_id, format_rfc3339(from_ms), to, 7, token)
        rows += page.occurrences
        token = page.next_token
        if token is None:
            return rows


def seen(engine: Engine, job_id: str) -> list[str]:
    return [call.scheduled_at for call in engine.targets.calls if call.job_id == job_id]


def step(engine: Engine, until_ms: int, by_ms: int = SECOND) -> None:
    """The tick and the workers, a second at a time, as the stack runs them."""
    while engine.clock.now_ms() < until_ms:
        engine.clock.advance(by_ms / 1000)
        run_due(engine)


def states(rows: list[OccurrenceView]) -> list[tuple[str, str | None]]:
    return [(row.state.value, None if row.reason is None else row.reason.value) for row in rows]


def test_a_pause_is_one_record_and_its_instants_are_skipped_as_paused(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)", misfire_policy="skip")
    created = engine.store.get(job_id).created_at
    step(engine, created + 40 * SECOND)
    engine.service.pause(job_id)
    step(engine, engine.clock.now_ms() + 95 * SECOND)
    engine.service.resume(job_id)
    step(engine, engine.clock.now_ms() + 35 * SECOND)

    rows = ledger(engine, job_id, created + 1)
    ran = [row.scheduled_at for row in rows if row.state.value == "ran"]
    assert ran == seen(engine, job_id)
    paused = [row for row in rows if row.state.value == "skipped"]
    assert paused and all(row.reason is not None and row.reason.value == "paused" for row in paused)
    instants = [row.scheduled_at for row in rows]
    assert len(instants) == len(set(instants))
    assert len(engine.store.skips(job_id, created, engine.clock.now_ms())) == 1


def test_a_run_longer_than_the_interval_skips_its_overlaps(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    created = engine.store.get(job_id).created_at
    engine.targets.during[job_id] = lambda: engine.clock.advance(25)
    step(engine, created + 60 * SECOND)

    rows = ledger(engine, job_id, created + 1)
    assert [row.scheduled_at for row in rows if row.state.value == "ran"] == seen(engine, job_id)
    overlapped = [row for row in rows if row.reason is not None and row.reason.value == "overlap"]
    assert len(overlapped) == 2
    assert engine.store.get(job_id).missed == 2


def test_instants_before_creation_are_not_owed_and_the_future_waits(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    created = engine.store.get(job_id).created_at
    rows = ledger(engine, job_id, created - 3 * MINUTE, created + 3 * MINUTE)
    # a rate first runs one period after its creation: that instant was not the job's either
    assert states(rows) == [("skipped", "not_owed")] * 4 + [("waiting", None)] * 2


def test_a_cancel_skips_what_follows_it(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)")
    created = engine.store.get(job_id).created_at
    step(engine, created + 61 * SECOND, 10 * SECOND)
    engine.service.cancel(job_id)
    rows = ledger(engine, job_id, created + 1, created + 5 * MINUTE + 1)
    assert states(rows) == [("ran", None)] + [("skipped", "cancelled")] * 4


def test_a_trigger_is_one_more_row(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 hour)")
    created = engine.store.get(job_id).created_at
    engine.service.trigger(job_id)
    step(engine, created + 5 * SECOND)
    rows = ledger(engine, job_id, created, created + 2 * 3600 * SECOND)
    # the triggered run's instant is the creation's, which the rate's grid holds too (not owed)
    assert [(row.state.value, row.extra) for row in rows] == [
        ("skipped", False),
        ("ran", True),
        ("waiting", False),
    ]


@pytest.mark.parametrize("when", ["while its retry waits", "while it runs"])
def test_a_cancel_behind_a_failed_triggered_run_keeps_the_series_on_its_grid(
    engine: Engine, when: str
) -> None:
    """The triggered run fails, and the job is cancelled as its retry waits (at once) or as it runs
    (the flag, at its settle): the series stops at the occurrence the run deferred, and the ledger
    never counts it from the triggered run's instant."""
    job_id = create(engine, schedule="rate(10 minutes)", max_retries=1, backoff=[60])
    created = engine.store.get(job_id).created_at
    step(engine, created + 10 * MINUTE + 5 * SECOND, 30 * SECOND)
    engine.clock.advance(3 * 60)
    engine.targets.failures[job_id] = 1
    if when == "while it runs":
        engine.targets.during[job_id] = lambda: engine.service.cancel(job_id)
    engine.service.trigger(job_id)
    step(engine, engine.clock.now_ms() + 5 * SECOND)
    if when == "while its retry waits":
        waiting = engine.store.get(job_id)  # its retry, a minute away, dispatched by the failure's write
        assert (waiting.status.value, waiting.attempt, waiting.extra_run) == ("queued", 1, True)
        engine.service.cancel(job_id)
    job = engine.store.get(job_id)
    assert job.status.value == "cancelled"

    rows = ledger(engine, job_id, created + 1, created + 40 * MINUTE + 1)
    grid = [created + k * 10 * MINUTE for k in range(1, 5)]
    assert [row.scheduled_at for row in rows if not row.extra] == [format_rfc3339(t) for t in grid]
    assert states([row for row in rows if not row.extra]) == [("ran", None)] + [("skipped", "cancelled")] * 3
    assert [(row.state.value, row.extra) for row in rows if row.extra] == [("ran", True)]


def test_a_tick_after_downtime_records_the_misfire_and_counts_it(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(1 minute)", misfire_policy="skip")
    created = engine.store.get(job_id).created_at
    engine.clock.advance(10 * 60 + 30)  # nothing ran for ten and a half minutes
    step(engine, engine.clock.now_ms() + 60 * SECOND, 10 * SECOND)

    rows = ledger(engine, job_id, created + 1)
    misfired = [row for row in rows if row.reason is not None and row.reason.value == "misfire"]
    assert [row.scheduled_at for row in rows if row.state.value == "ran"] == seen(engine, job_id)
    # the first nine were more than 60 s late; the tenth, 30 s late, still ran
    assert len(misfired) == 9
    assert engine.store.get(job_id).missed == 9
    assert all(row.state.value in ("ran", "skipped", "waiting") for row in rows)


def test_a_backfill_including_skipped_runs_each_paused_instant_once(engine: Engine) -> None:
    from sundial.contract.jobs import BackfillRequest

    job_id = create(engine, schedule="rate(1 minute)", misfire_policy="skip", overlap_policy="buffer")
    created = engine.store.get(job_id).created_at
    step(engine, created + 61 * SECOND, 10 * SECOND)
    engine.service.pause(job_id)
    step(engine, engine.clock.now_ms() + 3 * MINUTE, 10 * SECOND)
    engine.service.resume(job_id)
    paused = [row.scheduled_at for row in ledger(engine, job_id, created + 1) if row.state.value == "skipped"]
    # all three that fell due while paused, also the one a second before the resume
    assert len(paused) == 3

    window = {"from": format_rfc3339(created), "to": format_rfc3339(engine.clock.now_ms())}
    for _ in range(2):  # asked twice: each instant runs once
        engine.service.backfill(job_id, BackfillRequest.model_validate({**window, "include_skipped": True}))
        step(engine, engine.clock.now_ms() + 5 * SECOND)

    assert [instant for instant in seen(engine, job_id) if instant in paused] == paused
    rows = {row.scheduled_at: row for row in ledger(engine, job_id, created + 1)}
    assert all(rows[instant].state.value == "ran" and rows[instant].backfilled for instant in paused)


def test_instants_held_back_by_a_pause_during_a_run_are_paused_not_missed(engine: Engine) -> None:
    job_id = create(engine, schedule="rate(10 seconds)")
    created = engine.store.get(job_id).created_at

    def pause_resume_then_run_on() -> None:
        engine.service.pause(job_id)
        engine.clock.advance(35)
        engine.service.resume(job_id)
        engine.clock.advance(12)  # the run outlasts the resume

    engine.targets.during[job_id] = pause_resume_then_run_on
    step(engine, created + 80 * SECOND)

    rows = ledger(engine, job_id, created + 1)
    reasons = [row.reason.value for row in rows if row.reason is not None]
    assert reasons.count("paused") == 3 and "overlap" in reasons, reasons
    assert [row.scheduled_at for row in rows if row.state.value == "ran"] == seen(engine, job_id)
    assert engine.store.get(job_id).missed == reasons.count("overlap")


class TickingClock(FixedClock):
    """A clock that moves a millisecond each time it is read, as a real one may between two reads."""

    def now_ms(self) -> int:
        self.advance(0.001)
        return super().now_ms()


def test_a_new_or_changed_series_first_runs_one_period_after_it_began_to_the_millisecond(
    engine: Engine,
) -> None:
    service = JobService(
        engine.store, engine.dispatcher, TickingClock(engine.clock.now_ms()), allow_private_targets=True
    )
    view, _ = service.create(
        JobCreate.model_validate({"target": python_target(), "schedule": "rate(1 hour)"})
    )
    job = engine.store.get(view.id)
    assert job.scheduled_at == job.created_at + 3600 * SECOND
    service.update(view.id, JobUpdate.model_validate({"schedule": "rate(2 hours)"}))
    changed = engine.store.get(view.id)
    assert changed.schedule_since is not None
    assert changed.scheduled_at == changed.schedule_since + 7200 * SECOND
    rows = ledger(engine, view.id, job.created_at + 1, changed.schedule_since + 3 * 3600 * SECOND)
    assert [row.reason for row in rows if row.state.value == "waiting"] == [None]
