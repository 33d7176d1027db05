"""The occurrence ledger's rules as pure functions: which state and reason each instant gets from the
job, its records and now; and the stretches a write records when it passes instants over."""

from __future__ import annotations

from typing import Any

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus, OccurrenceState, RunStatus, SkipReason
from sundial.shared.lifecycle.occurrences import Records, occurrences
from sundial.shared.lifecycle.skips import Skip, missed_count, passed_over
from sundial.shared.models import Job, RunSummary

T0 = 1_796_000_040_000  # a whole minute
MINUTE = 60_000
S, W, R = OccurrenceState.SKIPPED, OccurrenceState.WAITING, OccurrenceState.RAN


def job(**fields: Any) -> Job:
    base: dict[str, Any] = {
        "id": "j",
        "status": JobStatus.PENDING,
        "schedule": "rate(1 minute)",
        "target": PythonTarget(type="python", handler="noop"),
        "created_at": T0 - MINUTE,  # its first instant is T0
        "updated_at": T0,
        "scheduled_at": T0,
        "due_at": T0,
    }
    return Job(**(base | fields))


def minutes(first: int, count: int) -> list[int]:
    return [first + n * MINUTE for n in range(count)]


def rows(subject: Job, now: int, records: Records | None = None, count: int = 5) -> list[tuple[Any, Any]]:
    instants = minutes(T0, count)
    found = occurrences(subject, instants, T0, T0 + count * MINUTE, records or Records(), now)
    return [(row.state, row.reason) for row in found]


def test_a_paused_job_shows_what_a_resume_now_would_pass_over_under_skip() -> None:
    paused = job(paused=True, paused_at=T0 - 1, misfire_policy="skip", due_at=None)
    # at T0 + 3.5 min: every instant due by now fell in the pause, however little late it is now
    assert rows(paused, T0 + 210_000) == [(S, SkipReason.PAUSED)] * 4 + [(W, SkipReason.PAUSED)]


def test_a_paused_job_under_run_all_passes_nothing_over() -> None:
    paused = job(paused=True, paused_at=T0 - 1, misfire_policy="run_all", due_at=None)
    assert rows(paused, T0 + 210_000) == [(W, SkipReason.PAUSED)] * 5


def test_a_paused_job_under_run_once_keeps_the_latest_missed() -> None:
    paused = job(paused=True, paused_at=T0 - 1, misfire_policy="run_once", due_at=None)
    # run_once runs the latest instant due by now (T0 + 3 min): the ones before it are passed over
    assert rows(paused, T0 + 210_000) == [(S, SkipReason.PAUSED)] * 3 + [(W, SkipReason.PAUSED)] * 2


def test_a_cancel_after_a_pause_splits_the_reasons_at_the_cancel() -> None:
    cancelled = job(
        status=JobStatus.CANCELLED,
        paused=True,
        paused_at=T0 + MINUTE,
        cancelled_at=T0 + 3 * MINUTE,
        scheduled_at=T0 + MINUTE,
        due_at=None,
        last_run=RunSummary(scheduled_at=T0, attempt=1, status=RunStatus.SUCCEEDED),
    )
    assert rows(cancelled, T0 + 10 * MINUTE) == [
        (R, None),
        (S, SkipReason.PAUSED),
        (S, SkipReason.PAUSED),
        (S, SkipReason.CANCELLED),
        (S, SkipReason.CANCELLED),
    ]


def test_a_recorded_stretch_is_skipped_and_the_rest_behind_the_series_ran() -> None:
    moved_on = job(scheduled_at=T0 + 4 * MINUTE, due_at=T0 + 4 * MINUTE)
    stretch = Skip(T0 + MINUTE, T0 + 3 * MINUTE, SkipReason.MISFIRE, 2)
    found = rows(moved_on, T0 + 4 * MINUTE - 1, Records(skips=[stretch], successes_unrecorded=True))
    assert found == [(R, None), (S, SkipReason.MISFIRE), (S, SkipReason.MISFIRE), (R, None), (W, None)]


def test_a_success_without_history_item_succeeded_only_where_successes_keep_none() -> None:
    moved_on = job(scheduled_at=T0 + MINUTE, due_at=T0 + MINUTE)
    kept = occurrences(moved_on, [T0], T0, T0 + 1, Records(successes_unrecorded=True), T0 + MINUTE)
    unknown = occurrences(moved_on, [T0], T0, T0 + 1, Records(), T0 + MINUTE)
    assert (kept[0].state, kept[0].last_status, kept[0].attempts) == (R, RunStatus.SUCCEEDED, 1)
    assert (unknown[0].state, unknown[0].last_status) == (R, None)


def test_a_triggered_run_on_an_instant_of_the_schedule_is_a_row_of_its_own() -> None:
    triggered = RunSummary(scheduled_at=T0, attempt=1, status=RunStatus.SUCCEEDED, extra=True)
    own = RunSummary(scheduled_at=T0, attempt=1, status=RunStatus.DEAD)
    moved_on = job(scheduled_at=T0 + MINUTE, due_at=T0 + MINUTE)
    found = occurrences(moved_on, [T0], T0, T0 + 1, Records(runs=[triggered, own]), T0 + MINUTE)
    assert [(row.state, row.extra, row.last_status) for row in found] == [
        (R, False, RunStatus.DEAD),
        (R, True, RunStatus.SUCCEEDED),
    ]


def test_instants_before_the_job_or_its_calendar_are_not_owed_or_excluded() -> None:
    young = job(created_at=T0 + MINUTE, scheduled_at=T0 + 2 * MINUTE, due_at=T0 + 2 * MINUTE)
    holiday = Records(excluded=lambda instant: instant == T0 + 3 * MINUTE)
    assert rows(young, T0, holiday) == [
        (S, SkipReason.NOT_OWED),
        (S, SkipReason.NOT_OWED),  # a rate's first instant is one period after its creation
        (W, None),
        (S, SkipReason.CALENDAR),
        (W, None),
    ]


def test_a_write_passing_instants_over_records_one_stretch_a_reason() -> None:
    ran_late = job(status=JobStatus.RUNNING, attempt=1)
    # started 2.5 min late (T0+1, T0+2 min missed) and ran 3 min (T0+3..T0+5 min overlapped it)
    stretches = passed_over(
        ran_late, T0 + 1, T0 + 6 * MINUTE, SkipReason.OVERLAP, T0 + 150_000, SkipReason.MISFIRE
    )
    assert stretches == (
        Skip(T0 + MINUTE, T0 + 150_000, SkipReason.MISFIRE, 2),
        Skip(T0 + 3 * MINUTE, T0 + 6 * MINUTE, SkipReason.OVERLAP, 3),
    )
    assert missed_count(stretches) == 5


def test_what_fell_in_the_latest_pause_is_recorded_paused_whoever_passes_it_over() -> None:
    resumed = job(status=JobStatus.RUNNING, attempt=1, paused_at=T0 + 90_000, resumed_at=T0 + 200_000)
    stretches = passed_over(resumed, T0 + 1, T0 + 6 * MINUTE, SkipReason.OVERLAP, T0 + 1, SkipReason.MISFIRE)
    assert stretches == (
        Skip(T0 + MINUTE, T0 + 90_000, SkipReason.OVERLAP, 1),
        Skip(T0 + 2 * MINUTE, T0 + 200_000, SkipReason.PAUSED, 2),
        Skip(T0 + 4 * MINUTE, T0 + 6 * MINUTE, SkipReason.OVERLAP, 2),
    )
    assert missed_count(stretches) == 3


def test_a_week_long_pause_of_a_job_every_minute_is_one_stretch() -> None:
    week = 7 * 24 * 60 * MINUTE
    paused = job(paused=True, paused_at=T0 - 1)
    stretches = passed_over(paused, T0, T0 + week, SkipReason.PAUSED)
    assert stretches == (Skip(T0, T0 + week, SkipReason.PAUSED, 10_080),)


def test_a_backfill_including_skipped_takes_what_the_job_is_done_with_and_no_more() -> None:
    from sundial.contract.calendar import Calendar
    from sundial.shared.lifecycle.backfill import skipped_to_run

    daily = job(
        schedule="0 9 * * *",
        created_at=T0 - 10 * 24 * 60 * MINUTE,
        # 14 December lies ahead of where the (late) series stands, though before now: not yet done with.
        calendar=Calendar(exclude_dates=["2026-12-08", "2026-12-14"]),
        scheduled_at=None,
    )
    nine = 1_796_202_000_000  # 2026-12-02T09:00:00Z
    day = 24 * 60 * MINUTE
    at_position = daily.model_copy(update={"scheduled_at": nine + 8 * day, "due_at": nine + 8 * day})
    paused = Skip(nine + day, nine + 3 * day, SkipReason.PAUSED, 2)
    overlapped = Skip(nine + 4 * day, nine + 5 * day, SkipReason.OVERLAP, 1)
    taken = skipped_to_run(at_position, [paused, overlapped], nine, nine + 30 * day, nine + 20 * day)
    # the two paused days and the excluded 8 December; not the overlap, nothing from the series on,
    # not even an excluded day
    assert taken == (nine + day, nine + 2 * day, nine + 6 * day)


def test_a_resume_after_a_short_pause_runs_what_the_misfire_policy_says_of_the_paused_instants() -> None:
    from sundial.shared.lifecycle import on_resume

    now = T0 + 35_000 + 2 * MINUTE  # paused 5 s before T0, resumed less than a minute after T0+2 min
    paused = job(paused=True, paused_at=T0 - 5_000, due_at=None)
    by_policy = {
        policy: on_resume(paused.model_copy(update={"misfire_policy": policy}), now)
        for policy in ("skip", "run_once", "run_all")
    }
    assert by_policy["skip"] is not None and by_policy["skip"].scheduled_at == T0 + 3 * MINUTE
    assert by_policy["skip"].skipped == (Skip(T0, T0 + 3 * MINUTE, SkipReason.PAUSED, 3),)
    assert by_policy["run_once"] is not None and by_policy["run_once"].scheduled_at == T0 + 2 * MINUTE
    assert by_policy["run_once"].skipped == (Skip(T0, T0 + 2 * MINUTE, SkipReason.PAUSED, 2),)
    assert by_policy["run_all"] is not None and by_policy["run_all"].scheduled_at == T0
    assert by_policy["run_all"].skipped == ()
