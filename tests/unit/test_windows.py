"""Spread windows: each occurrence's start inside [instant, instant + window), and lateness, misfires
and the next occurrence measured against that start."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sundial.contract.targets import PythonTarget
from sundial.contract.vocabulary import JobStatus, MisfirePolicy
from sundial.shared.lifecycle import Placement, after_success, catch_up, start_of
from sundial.shared.models import Job
from sundial.shared.schedules import following_occurrence, parse_schedule, start_instant

T0 = 1_796_000_400_000  # a whole hour
MINUTE = 60_000
HOUR = 60 * MINUTE
DAILY = parse_schedule("cron(0 9 * * ? *)")
ULID_CHARS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def job(**fields: Any) -> Job:
    base: dict[str, Any] = {
        "id": "01JD8ZQ3V6X4M7N2P5R8T1W9YB",
        "status": JobStatus.RUNNING,
        "target": PythonTarget(type="python", handler="noop"),
        "created_at": T0,
        "updated_at": T0,
        "scheduled_at": T0,
        "due_at": T0,
        "attempt": 1,
        "schedule": "rate(1 hour)",
        "window_seconds": 300,
    }
    return Job(**(base | fields))


@given(
    st.text(ULID_CHARS, min_size=26, max_size=26),
    st.integers(0, 4_000_000_000_000),
    st.integers(1, 3600),
)
def test_a_start_lies_inside_the_window_and_is_the_same_every_time(
    job_id: str, instant: int, window: int
) -> None:
    start = start_instant(job_id, instant, window)

    assert instant <= start < instant + window * 1000
    assert start_instant(job_id, instant, window) == start


def test_no_window_starts_on_the_instant() -> None:
    assert start_instant("A" * 26, T0, 0) == T0
    assert start_of(job(window_seconds=0), T0) == T0


def test_a_fan_out_of_one_instant_spreads_over_the_whole_window() -> None:
    starts = [start_instant(f"{n:026d}", T0, 300) - T0 for n in range(3000)]

    per_half_minute = [sum(1 for s in starts if k * 30_000 <= s < (k + 1) * 30_000) for k in range(10)]
    # 300 expected in each tenth of the window; a uniform draw keeps every tenth within 25 % of it
    assert all(225 <= count <= 375 for count in per_half_minute), per_half_minute


def test_each_occurrence_of_one_job_gets_its_own_point() -> None:
    instants = [T0 + n * 24 * HOUR for n in range(20)]

    offsets = {start_instant("A" * 26, instant, 300) - instant for instant in instants}

    assert len(offsets) > 15


def test_the_window_never_reaches_the_schedule_s_next_instant() -> None:
    every_minute = parse_schedule("rate(1 minute)")

    starts = [start_instant(f"{n:026d}", T0, 3600, every_minute) for n in range(500)]

    assert all(T0 <= start < T0 + MINUTE for start in starts)


def test_the_next_occurrence_is_due_at_its_start_and_keeps_its_instant() -> None:
    ran = job(scheduled_at=T0)

    placement = after_success(ran, T0 + 5000, T0)

    assert placement.scheduled_at == T0 + HOUR  # the instant names the occurrence (and its key)
    assert placement.due_at == start_instant(ran.id, T0 + HOUR, 300, parse_schedule("rate(1 hour)"))
    assert placement.due_at is not None and T0 + HOUR <= placement.due_at < T0 + HOUR + 300_000


def test_an_occurrence_is_missed_only_a_grace_after_its_start() -> None:
    waiting = job(status=JobStatus.PENDING, attempt=0, misfire_policy=MisfirePolicy.SKIP)
    start = start_of(waiting, T0)

    # 60 s after its start it is on time, whatever its instant; a second more and it is missed
    assert catch_up(waiting, start + MINUTE) == T0
    assert catch_up(waiting, start + MINUTE + 1) == T0 + HOUR


def _job_with_late_start() -> tuple[Job, int]:
    """A daily job and an instant whose start lies more than a minute after it."""
    for n in range(1000):
        candidate = job(id=f"{n:026d}", schedule="cron(0 9 * * ? *)", scheduled_at=T0 - 24 * HOUR)
        instant = DAILY.rule.next_after(T0)
        assert instant is not None
        if start_of(candidate, instant) - instant > 2 * MINUTE:
            return candidate, instant
    raise AssertionError("no job id gives a start two minutes into the window")


def test_skip_runs_an_occurrence_whose_start_is_not_missed_though_its_instant_is() -> None:
    late, instant = _job_with_late_start()
    start = start_of(late, instant)
    now = start - 1000  # its instant is minutes past, its start a second ahead

    windowed = following_occurrence(
        DAILY,
        late.scheduled_at or 0,
        now,
        MisfirePolicy.SKIP,
        None,
        None,
        MINUTE,
        lambda i: start_of(late, i),
    )
    plain = following_occurrence(DAILY, late.scheduled_at or 0, now, MisfirePolicy.SKIP, None, None, MINUTE)

    assert windowed == instant
    assert plain == instant + 24 * HOUR  # without the window it would be missed


def test_run_once_takes_the_latest_occurrence_whose_start_is_missed() -> None:
    late, instant = _job_with_late_start()
    now = start_of(late, instant) - 1000
    previous = instant - 5 * 24 * HOUR

    found = following_occurrence(
        DAILY, previous, now, MisfirePolicy.RUN_ONCE, None, None, MINUTE, lambda i: start_of(late, i)
    )

    # the one at `instant` is not missed yet: the latest missed one is the day before
    assert found == instant - 24 * HOUR


def test_a_placement_keeps_its_instant_under_a_window() -> None:
    placement = after_success(job(window_seconds=0), T0 + 5000, T0)

    assert placement == Placement(JobStatus.PENDING, T0 + HOUR, T0 + HOUR, 0)
